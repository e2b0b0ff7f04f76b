package task

import (
	"path/filepath"
	"strings"
	"testing"
)

const datasetTask = `task_id: classify
initial_prompt: "Classify: ${row.text}"
dataset:
  file: rows.jsonl
sandbox:
  workspace:
    starter_files:
      - path: input.txt
        content: "${row.text}"
success_criteria:
  - type: classification_match
    path: label.txt
    expected_label: "${row.label}"
`

func TestDatasetExpandsOneTaskPerRow(t *testing.T) {
	for _, tc := range []struct{ file, rows string }{
		{"rows.jsonl", "{\"id\": \"a\", \"text\": \"great\", \"label\": \"positive\"}\n{\"id\": \"b\", \"text\": \"awful\", \"label\": \"negative\"}\n"},
		{"rows.csv", "id,text,label\na,great,positive\nb,awful,negative\n"},
		{"rows.yaml", "- {id: a, text: great, label: positive}\n- {id: b, text: awful, label: negative}\n"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"task.yaml": strings.Replace(datasetTask, "rows.jsonl", tc.file, 1), tc.file: tc.rows})
			ts, err := LoadAll(filepath.Join(dir, "task.yaml"), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ts) != 2 || ts[0].ID != "classify.a" || ts[1].ID != "classify.b" || ts[1].Dataset != "classify" {
				t.Fatalf("tasks %v", ts)
			}
			if label := ts[1].Criteria[0].Spec.(*ClassificationMatchSpec).ExpectedLabel; ts[1].Prompt != "Classify: awful" || label != "negative" || ts[1].Sandbox.Workspace.StarterFiles[0].Content != "awful" {
				t.Fatalf("row b: prompt %q label %q", ts[1].Prompt, label)
			}
			for _, tk := range ts {
				tk.Close()
			}
		})
	}
}

// TestDatasetUnknownFieldIsAValidationError: substitution is strict, and a reference where
// rows are not substituted is refused too.
func TestDatasetUnknownFieldIsAValidationError(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"task.yaml":  strings.Replace(datasetTask, "${row.label}", "${row.lable}", 1),
		"rows.jsonl": "{\"text\": \"x\", \"label\": \"positive\"}\n",
	})
	_, err := LoadAll(filepath.Join(dir, "task.yaml"), LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `no field "lable"`) || !strings.Contains(err.Error(), "task.yaml:13:") {
		t.Fatalf("got %v", err)
	}
	writeFiles(t, dir, map[string]string{"task.yaml": datasetTask + "agent:\n  type: command\n  command: [echo, \"${row.text}\"]\n"})
	if _, err := LoadAll(filepath.Join(dir, "task.yaml"), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "substituted only in") {
		t.Fatalf("reference in agent: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "task.yaml")); err == nil || !strings.Contains(err.Error(), "has a dataset") {
		t.Fatalf("Load of a dataset task: %v", err)
	}
}

func TestDatasetFileStaysInsideTheRoot(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"task.yaml": strings.Replace(datasetTask, "rows.jsonl", "../rows.jsonl", 1)})
	if _, err := LoadAll(filepath.Join(dir, "task.yaml"), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "leaves the task file's directory") {
		t.Fatalf("got %v", err)
	}
}

// TestExperimentExpandsADatasetTaskPerRowAndVariant: a dataset task in an experiment runs
// once per row under every variant, with the same strict substitution.
func TestExperimentExpandsADatasetTaskPerRowAndVariant(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"e.yaml":     "experiment_id: e\ntasks: [task.yaml]\nvariants:\n  - variant_id: a\n  - variant_id: b\n",
		"task.yaml":  datasetTask,
		"rows.jsonl": "{\"id\": \"x\", \"text\": \"great\", \"label\": \"positive\"}\n{\"id\": \"y\", \"text\": \"awful\", \"label\": \"negative\"}\n",
	})
	e, err := LoadExperiment(filepath.Join(dir, "e.yaml"), ExperimentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Entries) != 4 || e.Entries[1].Task.ID != "classify.y" || e.Entries[1].Task.Criteria[0].Spec.(*ClassificationMatchSpec).ExpectedLabel != "negative" || e.Entries[3].Variant != "b" {
		t.Fatalf("entries %+v", e.Entries)
	}
	writeFiles(t, dir, map[string]string{"task.yaml": strings.Replace(datasetTask, "${row.text}\"\ndataset", "${row.txt}\"\ndataset", 1)})
	if _, err := LoadExperiment(filepath.Join(dir, "e.yaml"), ExperimentOptions{}); err == nil || !strings.Contains(err.Error(), `no field "txt"`) {
		t.Fatalf("unknown field: %v", err)
	}
	writeFiles(t, dir, map[string]string{"task.yaml": strings.Replace(datasetTask, "rows.jsonl", "../rows.jsonl", 1)})
	if _, err := LoadExperiment(filepath.Join(dir, "e.yaml"), ExperimentOptions{}); err == nil || !strings.Contains(err.Error(), "inside the task file's directory") {
		t.Fatalf("rows outside: %v", err)
	}
}
