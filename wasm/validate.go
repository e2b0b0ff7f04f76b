package wasm

import (
	"fmt"
	"strings"

	"ceval.dev/ceval/internal/toolbox/cmds"
	"ceval.dev/ceval/internal/toolbox/shell"
	"ceval.dev/ceval/task"
)

// CommandWarnings returns one line per WASM-tier run_command criterion of t whose script
// calls a program the sandbox does not provide (neither a toolbox command nor
// python/python3), as FILE:LINE:COL: warning: ..., with what is available and the fix: such
// a program exists only in an image, so the criterion belongs in a verifier container. It
// is one check with one message (it fails with exit 127 at grading; a warning, not an error,
// since the call may sit in a branch never taken). Container-tier criteria are not checked.
func CommandWarnings(t *task.Task) []string {
	var out []string
	for i, c := range t.Criteria {
		s, ok := c.Spec.(*task.RunCommandSpec)
		if !ok || c.Tier() != task.TierWASM {
			continue
		}
		names, err := shell.Unavailable(s.Command)
		if err != nil || len(names) == 0 {
			continue // a script that does not parse fails at grading with the parser's message
		}
		out = append(out, fmt.Sprintf("%s:%d:%d: warning: success_criteria[%d] (run_command) calls %s, which the WASM sandbox does not provide "+
			"(it runs no programs, only its own commands and the shell builtins: %s): add sandbox: container to run it in a fresh container "+
			"from the task's image (or image: one that has %s)",
			t.Path, c.Line, c.Column, i, strings.Join(names, ", "), strings.Join(cmds.Names(), " "), strings.Join(names, ", ")))
	}
	return out
}
