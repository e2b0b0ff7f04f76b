package wasm

import (
	"context"
	"strings"
	"testing"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/task"
)

// TestDashNamedFilesCannotPassANegativeGrepCriterion grades a task end to end with the real
// toolbox: the agent left a TODO and planted files named -v and -e, which `*` expands after
// grep's pattern, or first for cat. Read as options they would invert the search or make the
// command fail, and the negated check would pass; read as the files they are, the TODO is
// found and the run FAILs.
func TestDashNamedFilesCannotPassANegativeGrepCriterion(t *testing.T) {
	if !HasToolbox() {
		t.Fatal("internal/embedded/toolbox.wasm is not a WebAssembly module: run make toolbox")
	}
	const doc = `task_id: dash-files
initial_prompt: finish the TODOs
agent: {type: command, command: [/bin/true]}
success_criteria:
  - {type: run_command, command: "! grep -q TODO *", description: no TODO is left}
  - {type: run_command, command: "! cat * | grep -q TODO", description: "no TODO is left, glob first"}
`
	tk, err := task.Parse("task.yaml", t.TempDir(), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	s := workspace(t, map[string]string{
		"main.go": "package main\n\n// TODO: implement\nfunc main() {}\n",
		"-v":      "package main\n",
		"-e":      "TODO\n",
	}, nil)
	e := newExecutor(t, nil, Options{})
	res := grader.Grade(context.Background(), tk, s, grader.Options{Executor: e})
	if res.Status != grader.TaskFailure || res.Score != 0 {
		t.Errorf("status %s score %v; want FAILURE 0", res.Status, res.Score)
	}
	for _, c := range res.Criteria {
		if c.Status != grader.Fail || !strings.Contains(c.Details, "exit code 1") {
			t.Errorf("%s: %s, %q; want FAIL with the match (exit 0) negated to exit code 1: a planted file was read as an option", c.Description, c.Status, c.Details)
		}
	}
}
