package supervisor

import (
	"context"
	"path/filepath"
	"strconv"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
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
	t, res := r.t, r.res
	if t.StepRuns() <= 1 {
		return false, nil
	}
	i, k := r.stepIndex(), len(r.iter.stepRuns)+1
	if r.iter.prompt == "" {
		r.iter.prompt = PromptInitial
	}
	r.iter.stepTime += r.out.Exit.Duration
	it := record.Iteration{N: k, Prompt: r.iter.prompt, Status: res.Status, Score: res.Score, Agent: r.out.Exit.Duration.Seconds()}
	over := r.iterationsOver(ctx, k)
	var prompt string
	if over == "" {
		var err error
		if prompt, over, err = r.followUp(ctx); err != nil {
			return false, err
		}
	}
	if over == "" {
		// As between iterations: a home the agent filled ends the step's runs, never ERROR.
		if err := writeFollowUpPrompt(r.home, prompt); err != nil {
			over = "the follow-up prompt could not be written into the agent's home: " + err.Error()
		}
	}
	it.Over = over
	r.iter.stepRuns = append(r.iter.stepRuns, it)
	r.emit("iteration_graded", map[string]any{"step": i + 1, "n": k, "status": it.Status, "score": it.Score, "over": over})
	if over != "" {
		return false, nil
	}
	sub := filepath.Join(record.TaskStepsDir, strconv.Itoa(i+1), record.IterationsDir)
	if err := r.keepRun(sub, k, true); err != nil {
		return false, &InfraError{err}
	}
	argv, err := FollowUpArgv(t, prompt)
	if err != nil {
		return false, &sandbox.InputError{Err: err}
	}
	left := t.Sandbox.Limits.Timeout - r.iter.agentTime
	err = r.sb.Again(ctx, sandbox.AgainConfig{Argv: argv, Env: stepEnv(r.env, t, i+1, k+1), Timeout: left,
		StdoutPath: filepath.Join(r.dir, record.StdoutFile), StderrPath: filepath.Join(r.dir, record.StderrFile)})
	if err != nil {
		return false, &InfraError{err}
	}
	r.emit("iteration_started", map[string]any{"step": i + 1, "n": k + 1, "prompt": r.iter.prompt, "timeout_s": left.Seconds()})
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
