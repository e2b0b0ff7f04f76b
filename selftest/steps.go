package selftest

import (
	"fmt"

	"ceval.dev/ceval/record"
)

// checkStepsHeld is the check of steps-break-after-agent: the setup step ran once, before
// the agent, and succeeded; the after_agent step the agent broke ran, failed and was only
// recorded (the run was graded, or classify reports the ERROR first).
func checkStepsHeld(res *record.Result) string {
	var setup, after []record.StepResult
	for _, s := range res.Steps {
		if s.Kind == record.StepSetup {
			setup = append(setup, s)
		} else {
			after = append(after, s)
		}
	}
	if len(setup) != 1 || !setup[0].OK() {
		return fmt.Sprintf("the setup step ran %d time(s) (ok: %v): the agent reached it", len(setup), len(setup) == 1 && setup[0].OK())
	}
	if len(after) != 1 || after[0].OK() {
		return fmt.Sprintf("the after_agent step the agent broke is recorded as %+v", after)
	}
	return ""
}
