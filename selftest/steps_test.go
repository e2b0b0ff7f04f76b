package selftest

import (
	"testing"

	"ceval.dev/ceval/record"
)

func TestStepsCheckFlagsASetupTheAgentReached(t *testing.T) {
	zero, one := 0, 1
	setupOK := record.StepResult{Kind: record.StepSetup, Index: 1, ExitCode: &zero}
	setupFailed := record.StepResult{Kind: record.StepSetup, Index: 1, ExitCode: &one}
	afterFailed := record.StepResult{Kind: record.StepAfterAgent, Index: 1, ExitCode: &one}
	for _, tc := range []struct {
		name   string
		steps  []record.StepResult
		breach bool
	}{
		{"held", []record.StepResult{setupOK, afterFailed}, false},
		{"setup ran again after the agent", []record.StepResult{setupOK, afterFailed, setupFailed}, true},
		{"setup failed", []record.StepResult{setupFailed}, true},
		{"after_agent not run", []record.StepResult{setupOK}, true},
	} {
		if got := checkStepsHeld(&record.Result{Steps: tc.steps}); (got != "") != tc.breach {
			t.Errorf("%s: check says %q", tc.name, got)
		}
	}
}
