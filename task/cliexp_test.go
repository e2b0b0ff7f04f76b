package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func taggedTask(id, tags string) string {
	return "task_id: " + id + "\ntags: [" + tags + "]\ninitial_prompt: p\nsuccess_criteria:\n  - type: file_exists\n    path: a\n"
}

func TestExcludeTagsDropsTasksWithAnyOfThem(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"e.yaml":  "experiment_id: e\ntasks: ['t*.yaml']\n",
		"t1.yaml": taggedTask("t1", "smoke"), "t2.yaml": taggedTask("t2", "smoke, slow"), "t3.yaml": taggedTask("t3", "slow"),
	})
	e, err := LoadExperiment(filepath.Join(dir, "e.yaml"), ExperimentOptions{Tags: []string{"smoke"}, ExcludeTags: []string{"slow"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Entries) != 1 || e.Entries[0].Task.ID != "t1" {
		t.Fatalf("entries: %+v", e.Entries)
	}
	_, err = LoadExperiment(filepath.Join(dir, "e.yaml"), ExperimentOptions{ExcludeTags: []string{"smoke", "slow"}})
	if err == nil || !strings.Contains(err.Error(), "--exclude-tags") {
		t.Fatalf("everything excluded: %v", err)
	}
}

// TestExperimentTasksFromTheCommandLine: an experiment without tasks: (coder_eval's form)
// runs the tasks the command line names; they replace a file's list, and are held to the
// experiment's directory (or root) like the list.
func TestExperimentTasksFromTheCommandLine(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "exp")
	writeFiles(t, dir, map[string]string{
		"e.yaml":          "experiment_id: e\nvariants:\n  - variant_id: a\n  - variant_id: b\n",
		"tasks/t1.yaml":   taggedTask("t1", "x"),
		"tasks/t2.yaml":   taggedTask("t2", "x"),
		"../outside.yaml": taggedTask("o1", "x"),
	})
	exp := filepath.Join(dir, "e.yaml")
	if _, err := LoadExperiment(exp, ExperimentOptions{}); err == nil || !strings.Contains(err.Error(), "missing required field tasks") {
		t.Fatalf("no tasks anywhere: %v", err)
	}
	e, err := LoadExperiment(exp, ExperimentOptions{Tasks: []string{filepath.Join(dir, "tasks/t1.yaml"), filepath.Join(dir, "tasks/t2.yaml")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Entries) != 4 {
		t.Fatalf("%d entries, want 2 tasks x 2 variants", len(e.Entries))
	}
	if _, err := LoadExperiment(exp, ExperimentOptions{Tasks: []string{filepath.Join(top, "outside.yaml")}}); err == nil || !strings.Contains(err.Error(), "leaves") {
		t.Fatalf("a command-line task outside the experiment's directory: %v", err)
	}
	e, err = LoadExperiment(exp, ExperimentOptions{Root: top, Tasks: []string{filepath.Join(top, "outside.yaml")}})
	if err != nil || len(e.Entries) != 2 {
		t.Fatalf("with --root holding it: %v", err)
	}
}
