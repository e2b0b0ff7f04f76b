package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/internal/closed"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// PhaseIterate is the step between two iterations of the agent: the graded iteration kept
// under iterations/<n>/, the follow-up prompt written (feedback or the simulated user), and
// a fresh container created over the same workspace and home.
const PhaseIterate = "iterate"

// iterationPhases are the phases each iteration of the agent goes through again, in Run's
// order: after_agent steps run after each iteration's agent, before its snapshot and grade.
var iterationPhases = []string{PhaseAgent, PhaseCollect, PhaseAfterAgent, PhaseSnapshot, PhaseGrade}

// How an iteration's prompt was made (record.Iteration.Prompt).
const (
	PromptInitial       = "initial"
	PromptFeedback      = "feedback"
	PromptSimulatedUser = "simulated_user"
)

// iterations is a run's state across the agent's iterations.
type iterations struct {
	prompt    string        // how the current iteration was prompted
	agentTime time.Duration // the agent's time in the iterations so far
	user      *simulatedUser
	// A multi-step task's runs of the agent within the current step, and their time
	// (stepiterations.go).
	stepRuns []record.Iteration
	stepTime time.Duration
}

// iterationEnv is the agent's environment for iteration n of a task that may run more than
// once: CEVAL_ITERATION tells a command agent which one it is.
func iterationEnv(env []string, t *task.Task, n int) []string {
	if t.MultiStep() { // n is the step
		return stepEnv(env, t, n, 1)
	}
	return runEnv(env, t, n)
}

// stepEnv is the agent's environment for run k of step n (1-based) of a multi-step task:
// CEVAL_STEP and CEVAL_STEP_NAME say which step, CEVAL_ITERATION which run within it when
// the task follows up within each step.
func stepEnv(env []string, t *task.Task, n, k int) []string {
	return append(append([]string{}, runEnv(env, t, k)...), "CEVAL_STEP="+strconv.Itoa(n), "CEVAL_STEP_NAME="+t.TaskSteps[n-1].Name)
}

// runEnv is iterationEnv without the step: CEVAL_ITERATION=n when the agent may run again
// for the same prompt.
func runEnv(env []string, t *task.Task, n int) []string {
	if t.StepRuns() <= 1 {
		return env
	}
	return append(append([]string{}, env...), "CEVAL_ITERATION="+strconv.Itoa(n))
}

// FollowUpArgv is the argv of an agent's next iteration: a command agent runs its command
// again (the prompt is in $CEVAL_PROMPT_FILE, as the first time); Claude Code continues its
// most recent session (--continue) and Codex resumes its last one (exec resume --last),
// each with prompt as the new user message. The CLIs keep their sessions in the home,
// which the iterations share.
func FollowUpArgv(t *task.Task, prompt string) ([]string, error) {
	if t.Agent == nil {
		return nil, fmt.Errorf("task %s names no agent", t.ID)
	}
	next := *t
	next.Prompt = prompt
	switch t.Agent.Type {
	case task.AgentClaudeCode:
		argv, err := AgentArgv(&next)
		if err != nil {
			return nil, err
		}
		// claude -p PROMPT --continue ...
		return append(append(append([]string{}, argv[:3]...), "--continue"), argv[3:]...), nil
	case task.AgentCodex:
		if len(prompt) > maxPromptArg {
			return nil, fmt.Errorf("follow-up prompt is %d bytes; codex takes it as one argument of at most %d", len(prompt), maxPromptArg)
		}
		// exec resume has no -C: it runs in the container's working directory, /workspace,
		// where the first iteration's session was recorded.
		argv := []string{"codex", "exec", "resume", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"}
		if m := t.Agent.Model; m != "" {
			argv = append(argv, "--model", m)
		}
		argv = append(argv, t.Agent.Args...)
		return append(argv, "--last", prompt), nil
	}
	return AgentArgv(&next)
}

// nextIteration records the iteration just graded and, when the run is not SUCCESS and
// the task allows another (iterations, simulated_user, time and budgets left), writes the
// follow-up prompt into the agent's home and creates a fresh container for it; false when
// the run is over.
func (r *run) nextIteration(ctx context.Context) (bool, error) {
	t, res := r.t, r.res
	if t.MultiStep() {
		return r.nextStep(ctx) // multistep.go
	}
	if t.MaxRuns() <= 1 {
		return false, nil
	}
	if ctx.Err() != nil {
		// Cut short of its iterations, the run is incomplete: a resume runs it again.
		res.Interrupted = true
		return false, &InfraError{errors.New("interrupted between iterations: the run did not finish")}
	}
	n := len(res.Iterations) + 1
	r.iter.agentTime += r.out.Exit.Duration
	it, prompt, err := r.gradedRun(ctx, n)
	if err != nil {
		return false, err
	}
	res.Iterations = append(res.Iterations, it)
	res.IterationsUsed = n
	r.emit("iteration_graded", map[string]any{"n": n, "status": it.Status, "score": it.Score, "over": it.Over})
	if err := r.keepIteration(n, it.Over == ""); err != nil {
		return false, &InfraError{err}
	}
	if it.Over != "" {
		return false, nil
	}
	if err := r.startFollowUp(ctx, prompt, iterationEnv(r.env, t, n+1), map[string]any{"n": n + 1}); err != nil {
		return false, err
	}
	return true, nil
}

// gradedRun records the agent's run just graded as run n of its count (a plain task's
// iterations, a multi-step task's runs of one step) and, unless none follows, writes the
// follow-up prompt into the agent's home: the run's record, whose Over says why no run
// follows ("" when one does), and the prompt.
func (r *run) gradedRun(ctx context.Context, n int) (record.Iteration, string, error) {
	if r.iter.prompt == "" {
		r.iter.prompt = PromptInitial
	}
	res := r.res
	it := record.Iteration{N: n, Prompt: r.iter.prompt, Status: res.Status, Score: res.Score, Agent: r.out.Exit.Duration.Seconds()}
	over := r.iterationsOver(ctx, n)
	var prompt string
	if over == "" {
		var err error
		if prompt, over, err = r.followUp(ctx); err != nil {
			return it, "", err
		}
	}
	if over == "" {
		// The home is the agent's (and capped): one it filled, or whose .ceval it made
		// unwritable, ends its runs with the grade it has, never an ERROR of ceval's.
		if err := writeFollowUpPrompt(r.home, prompt); err != nil {
			over = "the follow-up prompt could not be written into the agent's home: " + err.Error()
		}
	}
	it.Over = over
	return it, prompt, nil
}

// startFollowUp creates the fresh container of the agent's next run over the same
// workspace and home, given the follow-up prompt, the task's time left and env; event is
// iteration_started's fields beside the prompt and the timeout.
func (r *run) startFollowUp(ctx context.Context, prompt string, env []string, event map[string]any) error {
	argv, err := FollowUpArgv(r.t, prompt)
	if err != nil {
		return &sandbox.InputError{Err: err}
	}
	left := r.t.Sandbox.Limits.Timeout - r.iter.agentTime
	err = r.sb.Again(ctx, sandbox.AgainConfig{Argv: argv, Env: env, Timeout: left,
		StdoutPath: filepath.Join(r.dir, record.StdoutFile), StderrPath: filepath.Join(r.dir, record.StderrFile)})
	if err != nil {
		return &InfraError{err}
	}
	event["prompt"], event["timeout_s"] = r.iter.prompt, left.Seconds()
	r.emit("iteration_started", event)
	return nil
}

// iterationsOver says why no iteration follows iteration n, or "".
func (r *run) iterationsOver(ctx context.Context, n int) string {
	t, res := r.t, r.res
	switch {
	case res.Status == grader.TaskSuccess:
		return "SUCCESS"
	case n >= t.StepRuns(): // a plain task's MaxRuns; a multi-step task's runs per step
		if t.Iterations != nil && n >= t.Iterations.Max {
			return fmt.Sprintf("iterations.max %d reached", t.Iterations.Max)
		}
		return fmt.Sprintf("simulated_user.max_turns %d reached", t.SimulatedUser.MaxTurns)
	case res.Status == grader.TaskError:
		return "the grade is ERROR"
	}
	return r.budgetOver()
}

// budgetOver says which of the run's budgets is spent (a gateway budget, the task's time),
// or "": no further run of the agent fits.
func (r *run) budgetOver() string {
	t, res := r.t, r.res
	switch {
	case r.out.Stopped:
		return "a run budget is spent: " + res.Agent.StoppedBy
	case r.gw != nil && closed.Is(r.gw.exceeded):
		return "a run budget is spent: " + r.gw.srv.Totals().ExceededLimit
	case res.Agent.TimedOut || r.iter.agentTime >= t.Sandbox.Limits.Timeout:
		return "the task's time limit is spent"
	}
	return ""
}

// followUp writes the next prompt: the simulated user's, or the feedback the task allows.
// over is set when the simulated user ends the conversation.
func (r *run) followUp(ctx context.Context) (prompt, over string, err error) {
	t := r.t
	feedback := ""
	if t.Iterations != nil || t.SimulatedUser == nil {
		feedback = FeedbackPrompt(r.gradedTask(), &r.res.Grade) // a multi-step task's: the step's criteria
	}
	if t.SimulatedUser == nil {
		r.iter.prompt = PromptFeedback
		return feedback, "", nil
	}
	r.iter.prompt = PromptSimulatedUser
	return r.simulatedUserTurn(ctx, feedback)
}

// keepIteration writes iteration n's result.json under iterations/<n>/ and, when another
// iteration follows, moves its workspace snapshot, manifest, agent logs (redacted), judge
// calls, judge agents' runs and sessions there, so the next one starts from an empty slot
// in the run directory. The result comes last: its sync covers what it vouches for, moved
// in first (a crash in between leaves an iteration without result.json, never one whose
// result.json names a snapshot that is not there).
func (r *run) keepIteration(n int, more bool) error {
	return r.keepRun(record.IterationsDir, n, more)
}

// keepRun is keepIteration into sub/<n>/ of the run directory (iterations, or a multi-step
// task's task_steps).
func (r *run) keepRun(sub string, n int, more bool) error {
	dir := filepath.Join(r.dir, sub, strconv.Itoa(n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if more {
		for _, f := range []string{record.StdoutFile, record.StderrFile} {
			if err := redactFile(filepath.Join(r.dir, f), r.redact); err != nil {
				return fmt.Errorf("redacting the agent's log %s: %w", f, err)
			}
		}
		for _, name := range []string{record.WorkspaceDir, record.SnapshotFile, record.OutputsDir, record.StdoutFile, record.StderrFile, SessionsDir, JudgeCallsFile, AgentJudgeDir, record.VerifierDir} {
			err := os.Rename(filepath.Join(r.dir, name), filepath.Join(dir, name))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("keep %s %d: %w", sub, n, err)
			}
		}
	}
	return writeResult(dir, r.res, r.redact, r.ev)
}

// writeFollowUpPrompt replaces the home's .ceval (the agent's, and dead by now: whatever it
// left there, links and FIFOs included, goes) with a fresh one holding the prompt.
func writeFollowUpPrompt(home, prompt string) error {
	root, err := os.OpenRoot(home)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.RemoveAll(".ceval"); err != nil {
		return err
	}
	if err := root.Mkdir(".ceval", 0o755); err != nil {
		return err
	}
	f, err := root.OpenFile(".ceval/prompt.md", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(prompt); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pauseServers records the mocks' and the gateway's totals so far, for a grade between
// iterations; the servers keep serving (budgets span the iterations) until the run ends.
func (r *run) pauseServers() {
	if r.gw != nil {
		r.gw.result.GatewayTotals = r.gw.srv.Totals()
	}
	if r.mocks != nil {
		r.mocks.result.Stats = r.mocks.server.Stats()
	}
}

// regradeLastIteration makes a regraded run's last iteration say the new grade: the run
// directory's snapshot is that iteration's (earlier ones keep the grade they had then).
func regradeLastIteration(res *record.Result) {
	if n := len(res.Iterations); n > 0 {
		res.Iterations[n-1].Status, res.Iterations[n-1].Score = res.Status, res.Score
	}
}
