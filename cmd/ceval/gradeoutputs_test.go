package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ceval grade --output PATH=DIR grades DIR as the task's output PATH; an output not given is
// empty, and a PATH the task does not declare is bad input.
func TestGradeWithOutputs(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "task.yaml")
	os.WriteFile(task, []byte("task_id: outs\ninitial_prompt: p\nsandbox: {outputs: [/output, /tmp]}\nsuccess_criteria:\n"+
		"  - {type: file_contains, path: /output/x.txt, includes: [answer]}\n"), 0o644)
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	os.WriteFile(filepath.Join(out, "x.txt"), []byte("the answer\n"), 0o644)
	ws := t.TempDir()
	if r := ceval(t, "grade", task, "--workspace", ws, "--output", "/output="+out); r.code != 0 {
		t.Errorf("with /output: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ceval(t, "grade", task, "--workspace", ws); r.code != 1 || !strings.Contains(r.stdout, "/output/x.txt does not exist in its output's copy") {
		t.Errorf("without /output: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ceval(t, "grade", task, "--workspace", ws, "--output", "/elsewhere="+out); r.code != 2 || !strings.Contains(r.stderr, "one of the task's sandbox.outputs (/output, /tmp)") {
		t.Errorf("undeclared output: exit %d\n%s", r.code, r.stderr)
	}
}
