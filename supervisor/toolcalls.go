package supervisor

import (
	"path/filepath"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/toolcalls"
)

// readToolCalls reads the run's tool calls from the model gateway's transcript in dir (never
// from the agent CLI's session files, which the agent can write) into the grader's options,
// and returns result.json's summary of them; nil when the agent had no gateway.
func readToolCalls(t *task.Task, dir string, o *grader.Options) *toolcalls.Summary {
	if t.Agent == nil || t.Agent.Gateway == nil {
		return nil
	}
	l, err := toolcalls.ReadFile(filepath.Join(dir, record.ModelCallsFile))
	if err != nil {
		o.ToolCallsError = err
		return nil
	}
	o.ToolCalls = l
	return l.Summary()
}
