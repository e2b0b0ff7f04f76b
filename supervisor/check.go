package supervisor

import (
	"fmt"
	"os"

	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// Check refuses, before anything starts, a task that Run would refuse as input under o: its
// agent's argv and environment names, network, run_limits, judges, agent judges' keys,
// simulated_user and what o's backend cannot run (its Check). Every
// entry point calls it once per task before it starts anything (an experiment for each
// entry before its pool), so a bad task fails there and never run by run. The error is an
// *sandbox.InputError, but for a kernel too old for the local verifier's root overlay
// (local.Backend's Check). Environment values are not looked up here (Run reads them when it starts).
func Check(t *task.Task, o Options) error {
	if _, err := AgentArgv(t); err != nil {
		return &sandbox.InputError{Err: err}
	}
	for i, st := range t.TaskSteps[min(1, len(t.TaskSteps)):] { // a later step's prompt (a variant may have rephrased it)
		if _, err := AgentArgv(t.ForStep(i + 1)); err != nil {
			return &sandbox.InputError{Err: fmt.Errorf("step %d %s: %w", i+2, st.Name, err)}
		}
	}
	if _, _, err := AgentEnv(t, o.Allow, func(string) (string, bool) { return "", true }); err != nil {
		return &sandbox.InputError{Err: err}
	}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv // as Options.WithDefaults
	}
	checks := []func() error{
		func() error { return CheckNetwork(t, o.Allow) },
		func() error { return CheckRunLimits(t, o.Prices) },
		func() error { return CheckJudge(t, o.Judge) },
		func() error { return CheckJudgeAgents(t, lookup) },
		func() error { return CheckSimulatedUser(t, o.Judge) },
		func() error { return CheckMCP(t) },
	}
	for _, c := range checks {
		if err := c(); err != nil {
			return &sandbox.InputError{Err: err}
		}
	}
	// The backend's own: what a Pod cannot run (an *InputError), or the host's kernel for the
	// local verifier's root overlay (a plain error, sandbox/local/rootkernel.go).
	return o.backend().Check(t)
}
