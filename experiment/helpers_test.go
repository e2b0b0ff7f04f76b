package experiment

import (
	"ceval.dev/ceval/internal/tasktest"
	"ceval.dev/ceval/record"
)

// agentTask is the task file supervisor's tests write too: a command agent running a script.
var agentTask = tasktest.AgentTask

// resultOf reads a kept record's result.json back (Result.Records keep only the outcome);
// nil when there is none.
func resultOf(r *RunRecord) *record.Result {
	if r == nil {
		return nil
	}
	res, _ := r.ReadResult()
	return res
}
