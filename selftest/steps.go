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

// checkServicesSurvived is the check of service-agent-attacks: every service ran until ceval
// stopped it, so the agent's kill -9 -1 reached none of them.
func checkServicesSurvived(res *record.Result) string {
	if len(res.Services) == 0 {
		return "the run lists no services: the attack's service never ran"
	}
	for _, s := range res.Services {
		if s.ExitedEarly {
			return fmt.Sprintf("service %s exited while the agent ran (status %d): the agent could signal it", s.Name, *s.ExitCode)
		}
	}
	return ""
}

// checkTaskStepsRan is the check of steps-files-symlink: both steps ran, so ceval copied the
// second step's files over the links the first planted (a run stopped before proves nothing).
func checkTaskStepsRan(res *record.Result) string {
	if len(res.TaskSteps) != 2 || res.TaskSteps[1].Skipped {
		return fmt.Sprintf("the run's steps are %+v: the second step, whose files the links wait for, did not run", res.TaskSteps)
	}
	return ""
}
