package wasm

import (
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

func TestCommandWarningsNameProgramsTheSandboxLacks(t *testing.T) {
	tk := &task.Task{Path: "/t/task.yaml", Criteria: []task.Criterion{
		{Type: task.RunCommand, Command: "python3 check.py | grep ok", Line: 5, Column: 5},
		{Type: task.RunCommand, Command: "node test.js && ruby x.rb", Line: 6, Column: 5},
		{Type: task.FileExists, Path: "a", Line: 7, Column: 5},
	}}
	got := CommandWarnings(tk)
	if len(got) != 1 || !strings.HasPrefix(got[0], "/t/task.yaml:6:5: warning: success_criteria[1] (run_command) calls node, ruby,") ||
		!strings.Contains(got[0], "python3") || !strings.Contains(got[0], "grep") {
		t.Errorf("warnings = %q", got)
	}
}
