package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// A multi-step task (task steps, steps: in the task file) runs through the iterations'
// machinery (iterations.go): after each step's grade the agent goes again in a fresh
// container over the same workspace and home (Claude Code continues its session, Codex
// resumes it, a command agent runs its command again with CEVAL_STEP), with the next step's
// prompt and its files copied into the workspace first. What differs is what decides
// whether it goes again (stepsOver) and what the run's grade is at the end (finishSteps).

// stepIndex is the 0-based step the run is at: the steps graded so far.
func (r *run) stepIndex() int { return len(r.res.TaskSteps) }

// gradedTask is the task as the current grade sees it: the step's criteria for a
// multi-step task, the task itself otherwise.
func (r *run) gradedTask() *task.Task {
	if !r.t.MultiStep() {
		return r.t
	}
	return r.t.ForStep(r.stepIndex())
}

// nextStep records the step just graded and, unless the steps are over, copies the next
// step's files into the workspace, writes its prompt and creates the fresh container; false
// when the run is over, its grade then the task's (finishSteps).
func (r *run) nextStep(ctx context.Context) (bool, error) {
	t, res := r.t, r.res
	if ctx.Err() != nil {
		res.Interrupted = true
		return false, &InfraError{errors.New("interrupted between steps: the run did not finish")}
	}
	i := r.stepIndex()
	st := t.TaskSteps[i]
	r.iter.agentTime += r.out.Exit.Duration
	if again, err := r.followUpInStep(ctx); again || err != nil { // stepiterations.go
		return again, err
	}
	ts := record.TaskStep{N: i + 1, Name: st.Name, Status: res.Status, Score: res.Score,
		Criteria: append([]record.CriterionResult{}, res.Criteria...), Agent: r.out.Exit.Duration.Seconds()}
	r.stepRunsDone(&ts)
	last := i+1 >= len(t.TaskSteps)
	over := ""
	if !last {
		over = r.stepsOver(i)
	}
	more := !last && over == ""
	if more {
		// The home is the agent's (and capped): a prompt that cannot be written there ends
		// the steps with the grades they have, never an ERROR of ceval's.
		if err := writeFollowUpPrompt(r.home, t.TaskSteps[i+1].Prompt); err != nil {
			over, more = "the next step's prompt could not be written into the agent's home: "+err.Error(), false
		}
	}
	ts.Over = over
	res.TaskSteps = append(res.TaskSteps, ts)
	r.emit("task_step_graded", map[string]any{"n": i + 1, "name": st.Name, "status": ts.Status, "score": ts.Score, "over": over})
	if err := r.keepStep(i+1, more); err != nil {
		return false, &InfraError{err}
	}
	if !more {
		r.finishSteps(over)
		return false, nil
	}
	next := t.TaskSteps[i+1]
	argv, err := FollowUpArgv(t, next.Prompt)
	if err != nil {
		return false, &sandbox.InputError{Err: err}
	}
	again := sandbox.AgainConfig{Argv: argv, Env: iterationEnv(r.env, t, i+2), Timeout: t.Sandbox.Limits.Timeout - r.iter.agentTime,
		StdoutPath: filepath.Join(r.dir, record.StdoutFile), StderrPath: filepath.Join(r.dir, record.StderrFile)}
	if next.Files != nil {
		again.Prepare = func(ws string) error { return copyStepFiles(next, ws) }
	}
	if err := r.sb.Again(ctx, again); err != nil {
		var full *stepFilesError
		if errors.As(err, &full) {
			// The agent filled (or blocked) its workspace: the next step cannot start, and
			// that is the agent's doing, never an ERROR that drops the run or retries it.
			why := full.Error()
			res.TaskSteps[i].Over = why
			r.emit("task_step_files_refused", map[string]any{"n": i + 2, "name": next.Name, "why": why})
			r.finishSteps(why)
			return false, nil
		}
		return false, &InfraError{err}
	}
	r.emit("task_step_started", map[string]any{"n": i + 2, "name": next.Name, "timeout_s": again.Timeout.Seconds()})
	return true, nil
}

// stepsOver says why no step follows step i (0-based), which is not the last, or "".
func (r *run) stepsOver(i int) string {
	t, res := r.t, r.res
	switch {
	case res.Status == record.StatusError:
		return "the grade is ERROR"
	case t.TaskSteps[i].StopOnFailure && res.Status != record.StatusSuccess:
		return fmt.Sprintf("step %d (%s) is %s and stop_on_failure is set", i+1, t.TaskSteps[i].Name, res.Status)
	}
	return r.budgetOver()
}

// finishSteps makes the run's grade the task's: the steps not run recorded as skipped
// (their criteria FAIL with score 0: a step the agent never reached earns nothing, and no
// agent can make its run drop out of the pass rates by failing early), every step's criteria
// in step order, the score and status by step_score, the agent's own status (a timeout, a
// budget) over it as for any run.
func (r *run) finishSteps(over string) {
	t, res := r.t, r.res
	for j := len(res.TaskSteps); j < len(t.TaskSteps); j++ {
		st := t.TaskSteps[j]
		why := fmt.Sprintf("step %d (%s) did not run: %s", j+1, st.Name, over)
		ts := record.TaskStep{N: j + 1, Name: st.Name, Status: record.StatusSkipped, Skipped: true, Criteria: []record.CriterionResult{}}
		for _, c := range t.StepCriteria(j) {
			ts.Criteria = append(ts.Criteria, record.CriterionResult{Type: c.Type, Description: c.Description, Status: record.CriterionFail,
				Weight: c.Weight, Gating: c.Weight > 0, Details: why})
		}
		res.TaskSteps = append(res.TaskSteps, ts)
	}
	res.Criteria = res.Criteria[:0:0]
	for _, ts := range res.TaskSteps {
		res.Criteria = append(res.Criteria, ts.Criteria...)
	}
	res.StepScore = t.StepScore
	res.Score, res.Status = record.CombineSteps(t.StepScore, res.TaskSteps)
	res.Status, _ = record.FinalStatus(res.Status, res.Agent, res.Gateway, t.Sandbox.Limits.Timeout)
	r.emit("graded", map[string]any{"status": res.Status, "score": res.Score, "steps": len(res.TaskSteps)})
}

// stepEndedByLimits records the step under way, whose sandbox its limits ended before its
// workspace could be copied out (endedByLimits), as a FAILURE scoring 0, its criteria FAIL
// naming why, and the steps after it as skipped; the task's grade is then step_score's.
func (r *run) stepEndedByLimits(why string) {
	t, res := r.t, r.res
	i := r.stepIndex()
	if i >= len(t.TaskSteps) {
		return
	}
	st := t.TaskSteps[i]
	ts := record.TaskStep{N: i + 1, Name: st.Name, Status: record.StatusFailure, Criteria: []record.CriterionResult{}, Over: why}
	r.stepRunsDone(&ts)
	for _, c := range t.StepCriteria(i) {
		ts.Criteria = append(ts.Criteria, record.CriterionResult{Type: c.Type, Description: c.Description, Status: record.CriterionFail,
			Weight: c.Weight, Gating: c.Weight > 0, Details: "the agent's sandbox was ended by its limits: " + why})
	}
	res.TaskSteps = append(res.TaskSteps, ts)
	r.finishSteps(why)
}

// keepStep writes step n's result.json under task_steps/<n>/ and, when another step
// follows, moves its files there (keepIteration's rule), pointing its criteria's output
// logs at their new place.
func (r *run) keepStep(n int, more bool) error {
	if more {
		ts := &r.res.TaskSteps[n-1]
		prefix := filepath.Join(record.TaskStepsDir, strconv.Itoa(n))
		for i := range ts.Criteria {
			for j, l := range ts.Criteria[i].OutputLogs {
				ts.Criteria[i].OutputLogs[j] = filepath.Join(prefix, l)
			}
		}
	}
	return r.keepRun(record.TaskStepsDir, n, more)
}

// copyStepFiles copies a step's files into the workspace, through the handle the task
// opened at load, by the template's rules (no link followed on either side, a link the
// agent left where a file goes is replaced, never written through).
func copyStepFiles(st task.TaskStep, ws string) error {
	src := st.Files.Root()
	if src == nil {
		return fmt.Errorf("step %s: files %s were not opened with the task", st.Name, st.Files.Path)
	}
	if err := local.CopyTree(src, ws); err != nil {
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
			return &stepFilesError{fmt.Errorf("step %s's files could not be copied into the workspace: %w (the agent filled it: sandbox.limits.disk_mb)", st.Name, err)}
		}
		return fmt.Errorf("step %s: files %s: %w", st.Name, st.Files.Path, err)
	}
	return nil
}

// stepFilesError is a step's files not fitting the workspace the agent left: the agent's
// doing, so the steps end there (nextStep), graded as they are.
type stepFilesError struct{ err error }

func (e *stepFilesError) Error() string { return e.err.Error() }
func (e *stepFilesError) Unwrap() error { return e.err }

// regradeSteps is RegradeRun for a multi-step run: each step that ran is graded again on
// its own kept snapshot (task_steps/<n>/, the last graded one's the run directory's) with
// that step's criteria as they are now, and the task's grade made again by step_score. A
// step keeps a status its agent earned (a timeout, a budget) unless its grade is ERROR; the
// steps skipped stay skipped.
func regradeSteps(ctx context.Context, t *task.Task, dir string, res *record.Result, opts grader.Options) error {
	if len(res.TaskSteps) != len(t.TaskSteps) {
		return fmt.Errorf("the run has %d steps and the task %d now: a multi-step run is regraded by the same steps", len(res.TaskSteps), len(t.TaskSteps))
	}
	last := -1
	for i, ts := range res.TaskSteps {
		if ts.Name != t.TaskSteps[i].Name {
			return fmt.Errorf("step %d was %q in the run and is %q in the task now: a multi-step run is regraded by the same steps", i+1, ts.Name, t.TaskSteps[i].Name)
		}
		if !ts.Skipped {
			last = i
		}
	}
	redact := regradeRedactor(t)
	for i := 0; i <= last; i++ {
		sdir, prefix := filepath.Join(dir, record.TaskStepsDir, strconv.Itoa(i+1)), filepath.Join(record.TaskStepsDir, strconv.Itoa(i+1))
		if _, err := os.Stat(filepath.Join(sdir, record.SnapshotFile)); i == last && err != nil {
			// the last step that ran keeps its files in the run directory (unless the steps
			// ended while the next one started: then they were moved already)
			sdir, prefix = dir, ""
		}
		snap, err := snapshot.Load(filepath.Join(sdir, record.WorkspaceDir), filepath.Join(sdir, record.SnapshotFile))
		if err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
		if snap.Outputs, err = loadOutputs(t.Sandbox.Outputs, sdir); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
		gt := t.ForStep(i)
		o := opts
		if o.Reference == nil {
			o.Reference = t.Reference
		}
		if len(t.ProtectedMocks) > 0 {
			o.MockCallsPath = filepath.Join(dir, record.MockCallsFile)
		}
		res.ToolCalls = readToolCalls(gt, dir, &o)
		j, closeJudge, err := runJudge(gt, dir, opts.Judge, true)
		if err != nil {
			return err
		}
		o.Judge = j
		o.AgentJudge = &recordedAgentJudges{dir: sdir}
		g := grader.Grade(ctx, gt, snap, o)
		closeJudge()
		saveCriterionOutputs(sdir, g, redact)
		ts := &res.TaskSteps[i]
		for k := range g.Criteria {
			for m, l := range g.Criteria[k].OutputLogs {
				g.Criteria[k].OutputLogs[m] = filepath.Join(prefix, l)
			}
		}
		ts.Criteria, ts.Score = g.Criteria, g.Score
		switch ts.Status {
		case record.StatusSuccess, record.StatusFailure, record.StatusError, record.StatusNotGraded:
			ts.Status = g.Status
		default: // TIMEOUT or a budget's: the agent's, unless the grade is ERROR
			if g.Status == record.StatusError {
				ts.Status = g.Status
			}
		}
		if n := len(ts.Iterations); n > 0 { // the snapshot is the step's last run's
			ts.Iterations[n-1].Status, ts.Iterations[n-1].Score = ts.Status, ts.Score
		}
	}
	res.Criteria = res.Criteria[:0:0]
	for _, ts := range res.TaskSteps {
		res.Criteria = append(res.Criteria, ts.Criteria...)
	}
	res.StepScore = t.StepScore
	res.Score, res.Status = record.CombineSteps(t.StepScore, res.TaskSteps)
	res.Status, _ = record.FinalStatus(res.Status, res.Agent, res.Gateway, t.Sandbox.Limits.Timeout)
	var err error
	if res.TaskSHA256, err = task.Digest(t); err != nil {
		return err
	}
	return writeResult(dir, res, redact, nil)
}
