package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ceval grade --step grades a workspace with one step's criteria of a multi-step task; a
// multi-step task without --step, an unknown step, or --step on a plain task is bad input.
func TestGradeWithStep(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "task.yaml")
	os.WriteFile(task, []byte("task_id: ms\nsteps:\n"+
		"  - {name: first, prompt: p, success_criteria: [{type: file_exists, path: a.txt}]}\n"+
		"  - {name: second, prompt: q, success_criteria: [{type: file_exists, path: b.txt}]}\n"), 0o644)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
	if r := ceval(t, "grade", task, "--workspace", ws, "--step", "first"); r.code != 0 {
		t.Errorf("--step first: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ceval(t, "grade", task, "--workspace", ws, "--step", "2"); r.code != 1 || !strings.Contains(r.stdout, "b.txt") {
		t.Errorf("--step 2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ceval(t, "grade", task, "--workspace", ws); r.code != 2 || !strings.Contains(r.stderr, "give --step NAME") || !strings.Contains(r.stderr, "first, second") {
		t.Errorf("no --step: exit %d\n%s", r.code, r.stderr)
	}
	if r := ceval(t, "grade", task, "--workspace", ws, "--step", "third"); r.code != 2 || !strings.Contains(r.stderr, "no such step") {
		t.Errorf("unknown step: exit %d\n%s", r.code, r.stderr)
	}
	plain := filepath.Join(dir, "plain.yaml")
	os.WriteFile(plain, []byte("task_id: p\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: a.txt}]\n"), 0o644)
	if r := ceval(t, "grade", plain, "--workspace", ws, "--step", "1"); r.code != 2 || !strings.Contains(r.stderr, "has no steps") {
		t.Errorf("--step on a plain task: exit %d\n%s", r.code, r.stderr)
	}
}
