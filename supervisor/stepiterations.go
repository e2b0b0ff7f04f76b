package supervisor

import (
	"context"
	"path/filepath"
	"strconv"

	"ceval.dev/ceval/record"
)

// A multi-step task with iterations or a simulated user follows up within each step: after
// a step's run is graded and is not SUCCESS, the agent goes again on the same step (the
// feedback made from that step's criteria, or the simulated user's answer), up to
// StepRuns runs of the agent per step; then the steps go on as without (stop_on_failure
// looks at the step's last run). Each earlier run of a step is kept under
// task_steps/<n>/iterations/<k>/ and listed in the step's iterations.

// followUpInStep records the run of the current step just graded and, when another run of
// the step follows, keeps it, writes the follow-up prompt and creates the fresh container:
// true. false: the step is done (nextStep records it).
func (r *run) followUpInStep(ctx context.Context) (bool, error) {
	t := r.t
	if t.StepRuns() <= 1 {
		return false, nil
	}
	i, k := r.stepIndex(), len(r.iter.stepRuns)+1
	r.iter.stepTime += r.out.Exit.Duration
	it, prompt, err := r.gradedRun(ctx, k) // iterations.go
	if err != nil {
		return false, err
	}
	r.iter.stepRuns = append(r.iter.stepRuns, it)
	r.emit("iteration_graded", map[string]any{"step": i + 1, "n": k, "status": it.Status, "score": it.Score, "over": it.Over})
	if it.Over != "" {
		return false, nil
	}
	sub := filepath.Join(record.TaskStepsDir, strconv.Itoa(i+1), record.IterationsDir)
	if err := r.keepRun(sub, k, true); err != nil {
		return false, &InfraError{err}
	}
	if err := r.startFollowUp(ctx, prompt, stepEnv(r.env, t, i+1, k+1), map[string]any{"step": i + 1, "n": k + 1}); err != nil {
		return false, err
	}
	return true, nil
}

// stepRunsDone hands the current step's runs to its record (ts.Iterations, the agent's
// time over all of them) and starts the next step's count.
func (r *run) stepRunsDone(ts *record.TaskStep) {
	if len(r.iter.stepRuns) > 0 {
		ts.Iterations = r.iter.stepRuns
		ts.Agent = r.iter.stepTime.Seconds()
	}
	r.iter.stepRuns, r.iter.stepTime, r.iter.prompt = nil, 0, ""
}
