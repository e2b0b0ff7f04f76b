package wasm

import (
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

// TestCommandWarningsNameProgramsTheSandboxLacks: one message per WASM run_command that
// calls what the sandbox lacks, with what it has and the fix (sandbox: container); a
// criterion already in a container is not warned about.
func TestCommandWarningsNameProgramsTheSandboxLacks(t *testing.T) {
	tk := &task.Task{Path: "/t/task.yaml", Criteria: []task.Criterion{
		{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "python3 check.py | grep ok"}, Line: 5, Column: 5},
		{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "node test.js && ruby x.rb"}, Line: 6, Column: 5},
		{Type: task.FileExists, Line: 7, Column: 5, Spec: &task.FileExistsSpec{Path: "a"}},
		{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "npm test", GraderTier: task.GraderTier{Verifier: &task.Verifier{}}}, Line: 8, Column: 5},
	}}
	got := CommandWarnings(tk)
	if len(got) != 1 || !strings.HasPrefix(got[0], "/t/task.yaml:6:5: warning: success_criteria[1] (run_command) calls node, ruby,") ||
		!strings.Contains(got[0], "python3") || !strings.Contains(got[0], "grep") || !strings.Contains(got[0], "add sandbox: container") {
		t.Errorf("warnings = %q", got)
	}
}
