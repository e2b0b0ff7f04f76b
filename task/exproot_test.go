package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// expRootTree: repo/experiments/e.yaml, repo/tasks/t1/task.yaml naming ../../skills/tm.
func expRootTree(t *testing.T, exp string) (repo, expFile string) {
	t.Helper()
	repo, _ = rootTree(t, "../../skills/tmpl")
	if err := os.MkdirAll(filepath.Join(repo, "experiments"), 0o755); err != nil {
		t.Fatal(err)
	}
	expFile = filepath.Join(repo, "experiments/e.yaml")
	if err := os.WriteFile(expFile, []byte(exp), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo, expFile
}

const expWithRoot = "experiment_id: e\nroot: ..\ntasks: [../tasks/*/task.yaml]\n"

// TestExperimentRootNeverWidensBeyondTheUsers: the experiment file's root: .. is refused
// unless the user's --root holds it; then the tasks list and the tasks' material may name
// anything inside it.
func TestExperimentRootNeverWidensBeyondTheUsers(t *testing.T) {
	repo, f := expRootTree(t, expWithRoot)
	if _, err := LoadExperiment(f, ExperimentOptions{}); err == nil || !strings.Contains(err.Error(), "never widen it") {
		t.Fatalf("root: .. without --root: %v", err)
	}
	e, err := LoadExperiment(f, ExperimentOptions{Root: repo})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Entries) != 1 || e.Entries[0].Task.Sandbox.Workspace.TemplateDir.Path != filepath.Join(repo, "skills/tmpl") {
		t.Fatalf("entries %+v", e.Entries)
	}
	for _, en := range e.Entries {
		en.Task.Close()
	}
	// the experiment cannot reach above the user's root
	_, f2 := expRootTree(t, "experiment_id: e\nroot: ../..\ntasks: [../tasks/*/task.yaml]\n")
	if _, err := LoadExperiment(f2, ExperimentOptions{Root: filepath.Dir(filepath.Dir(f2))}); err == nil || !strings.Contains(err.Error(), "never widen it") {
		t.Fatalf("root: ../.. under --root repo: %v", err)
	}
}

func TestExperimentRootConfinesTasksAndTheirMaterial(t *testing.T) {
	// --root alone (no root: field) declares it; a pattern past it is refused
	repo, f := expRootTree(t, "experiment_id: e\ntasks: [../tasks/*/task.yaml, ../../outside/*.yaml]\n")
	_, err := LoadExperiment(f, ExperimentOptions{Root: repo})
	if err == nil || !strings.Contains(err.Error(), "leaves the experiment's root") {
		t.Fatalf("pattern past the root: %v", err)
	}
	// a task naming material past the root
	repo, f = expRootTree(t, "experiment_id: e\ntasks: [../tasks/*/task.yaml]\n")
	body := "task_id: t1\ninitial_prompt: p\nsandbox:\n  workspace:\n    template_dir: ../../../outside\nsuccess_criteria:\n  - type: file_exists\n    path: a.txt\n"
	if err := os.WriteFile(filepath.Join(repo, "tasks/t1/task.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadExperiment(f, ExperimentOptions{Root: repo}); err == nil || !strings.Contains(err.Error(), "leaves the declared root") {
		t.Fatalf("material past the root: %v", err)
	}
}
