package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// A task's setup and after_agent steps run in the agent's sandbox, one container each: a
// fresh container made from a copy of the agent container's own configuration (image, UID
// and GID, the run's user namespace IDs, every capability set empty, no_new_privs, seccomp,
// rlimits, memory/cpu/pids limits, read-only rootfs, the task's network setting, the
// agent's environment) over the agent's workspace and home, with ceval's init as PID 1
// attested before the step's shell starts. The step's timeout replaces the agent's. When the
// step's shell exits, everything it started is killed and reaped with its container, so no
// step outlives its turn, and after_agent steps begin only once the agent and everything it
// started are gone. A step gets no plugins, mocks or model gateway, and a /tmp of its own;
// it reaches the task's services as the agent does (they run from before setup until after
// the after_agent steps).

// Phases of the steps (see the Phase constants in run.go).
const (
	PhaseSetup      = "setup"       // the task's setup steps: after launch, before the agent's container starts
	PhaseAfterAgent = "after_agent" // the task's after_agent steps: after collect, before the snapshot
)

// StepShell runs each step as `StepShell -c RUN`; the image must have it.
const StepShell = "/bin/sh"

// StepError is a setup step that did not succeed: the run is ERROR and not graded, and the
// agent never started.
type StepError struct{ Step record.StepResult }

func (e *StepError) Error() string {
	s := e.Step
	how := "did not run"
	switch {
	case s.TimedOut:
		how = "timed out"
	case s.ExitCode != nil:
		how = fmt.Sprintf("exited with %d", *s.ExitCode)
	}
	return fmt.Sprintf("%s step %d (%q) %s; its output is in %s; the agent was not started (fix the step or the image it runs in)",
		s.Kind, s.Index, s.Run, how, s.Log)
}

// setup runs the task's setup steps in order, before anything of the agent's has run: the
// first that does not succeed ends the run as ERROR (a StepError), and the rest are skipped.
func (r *run) setup(ctx context.Context) error {
	failed, err := r.runSteps(ctx, record.StepSetup, r.t.Setup)
	if err != nil {
		return err
	}
	if failed != nil {
		r.emit("setup_failed", map[string]any{"step": failed.Index, "log": failed.Log})
		return &InfraError{&StepError{Step: *failed}}
	}
	return nil
}

// afterAgent runs the task's after_agent steps in order, once the agent and everything it
// started are gone (it exited, crashed, timed out or was stopped by a budget; an interrupted
// run never gets here). A step that fails is recorded, the rest are skipped, and the run is
// graded as usual: what the agent left is what the agent did.
func (r *run) afterAgent(ctx context.Context) error {
	failed, err := r.runSteps(ctx, record.StepAfterAgent, r.t.AfterAgent)
	if failed != nil {
		r.emit("after_agent_failed", map[string]any{"step": failed.Index, "log": failed.Log})
	}
	if err != nil {
		return err
	}
	// The services end here, before the snapshot and the grade, unless the agent goes again
	// or a criterion reaches them (then after the grade).
	if r.t.MaxRuns() == 1 && !r.t.GradesWithServices() {
		return r.stopServices()
	}
	return nil
}

// runSteps runs steps of one kind until one fails, which it returns; the ones after it are
// recorded as skipped. An error is ceval's failure (or an interruption).
func (r *run) runSteps(ctx context.Context, kind string, steps []task.Step) (*record.StepResult, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Join(r.dir, record.StepsDir), 0o700); err != nil {
		return nil, &InfraError{fmt.Errorf("step logs: %w", err)}
	}
	for i, st := range steps {
		if ctx.Err() != nil {
			r.res.Interrupted = true
			return nil, &InfraError{fmt.Errorf("interrupted before %s step %d: the run was not graded", kind, i+1)}
		}
		sr := record.StepResult{Kind: kind, Index: i + 1, Run: st.Run}
		name := fmt.Sprintf("%s-%d", kind, i+1)
		if kind == record.StepAfterAgent && r.t.MultiStep() {
			// after each step's agent: one log per step of a multi-step task.
			sr.TaskStep = r.stepIndex() + 1
			name = fmt.Sprintf("%s-%d-step-%d", kind, i+1, sr.TaskStep)
			if r.t.StepRuns() > 1 { // and one per run within the step
				sr.Iteration = len(r.iter.stepRuns) + 1
				name += fmt.Sprintf("-iteration-%d", sr.Iteration)
			}
		} else if kind == record.StepAfterAgent && r.t.MaxRuns() > 1 {
			// after_agent runs after each iteration of the agent: one log per iteration.
			sr.Iteration = len(r.res.Iterations) + 1
			name = fmt.Sprintf("%s-%d-iteration-%d", kind, i+1, sr.Iteration)
		}
		sr.Log = filepath.Join(record.StepsDir, name+".log")
		r.emit("step_started", map[string]any{"kind": kind, "step": sr.Index})
		start := time.Now()
		exit, err := r.sb.RunStep(ctx, name, []string{StepShell, "-c", st.Run}, st.Timeout, filepath.Join(r.dir, sr.Log))
		sr.Seconds = time.Since(start).Seconds()
		if err == nil && exit.Interrupted {
			r.res.Interrupted = true
			err = fmt.Errorf("interrupted during %s step %d: the run was not graded", kind, sr.Index)
		}
		if err != nil {
			r.res.Steps = append(r.res.Steps, sr)
			return nil, &InfraError{err}
		}
		code := exit.Code
		sr.ExitCode, sr.TimedOut, sr.OutputCut = &code, exit.TimedOut, exit.OutputCut
		r.res.Steps = append(r.res.Steps, sr)
		// At once, whatever happens next: a run that ends here never reaches redactLogs.
		if err := redactFile(filepath.Join(r.dir, sr.Log), r.redact); err != nil {
			return nil, &InfraError{fmt.Errorf("redacting the log of %s step %d: %w", kind, sr.Index, err)}
		}
		r.emit("step_finished", map[string]any{"kind": kind, "step": sr.Index, "exit_code": code, "timed_out": exit.TimedOut, "seconds": sr.Seconds})
		if !sr.OK() {
			for j := i + 1; j < len(steps); j++ {
				r.res.Steps = append(r.res.Steps, record.StepResult{Kind: kind, Index: j + 1, Iteration: sr.Iteration, TaskStep: sr.TaskStep, Run: steps[j].Run, Skipped: true})
			}
			return &sr, nil
		}
	}
	return nil, nil
}
