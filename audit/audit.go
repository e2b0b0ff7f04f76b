package audit

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"ceval.dev/ceval/audit/verdict"
	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// Verdicts (see package verdict, which holds the result types for readers such as report).
const (
	OK       = verdict.OK
	Hackable = verdict.Hackable
	Broken   = verdict.Broken
	Error    = verdict.Error
)

// scoreEpsilon absorbs float rounding when a cheat's score is compared with the null agent's.
const scoreEpsilon = 1e-9

// The audit's results: one home, package verdict (a leaf readers import without the sandbox).
type (
	Run       = verdict.Run
	Criterion = verdict.Criterion
	Report    = verdict.Report
)

// Target is one task to audit; Variant names an experiment's variant ("" for a task file).
type Target struct {
	Task    *task.Task
	Variant string
}

// Options configure Audit.
type Options struct {
	// Run is how every audit agent runs: the product path's options (client, namespace,
	// runs directory and run ID, executor for executing criteria, ...). Variant is set per
	// agent.
	Run supervisor.Options
	// Jobs is how many runs go at once; below 1 means 1.
	Jobs int
	// LeakedCriteria adds the informational leaked-criteria agent.
	LeakedCriteria bool
	// Agents, when set, replaces the built-in cheats (tests audit one cheat at a time); the
	// oracle, null and unchanged agents always run.
	Agents []string
	// Progress, when set, hears each run as soon as it is done.
	Progress func(t Target, r Run)
}

// Check refuses, before anything starts, a target that every one of its audit runs would
// refuse as input under run (supervisor.Check on the task as audited: a command agent in
// place of its own, no run_limits), naming the task's file. An audit calls it once: a bad
// task is refused whole, never run by run. The error is a *sandbox.InputError.
func Check(targets []Target, run supervisor.Options) error {
	var problems []error
	for _, tg := range targets {
		t := asAudited(tg.Task, Agent{Argv: []string{"true"}})
		if err := supervisor.Check(&t, run); err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", tg.Task.Path, err))
		}
	}
	if len(problems) > 0 {
		return &sandbox.InputError{Err: errors.Join(problems...)}
	}
	return nil
}

// asAudited is t as an audit runs it: agent a's command in place of the task's own agent
// (and so no model gateway or run budgets).
func asAudited(t *task.Task, a Agent) task.Task {
	c := *t // shares the material handles, which the caller's task owns
	c.Agent = &task.Agent{Type: task.AgentCommand, Command: a.Argv}
	c.RunLimits = nil
	return c
}

// Audit runs, per target, the oracle, the null and unchanged agents and every cheat in the
// real sandbox (supervisor.Run, as `ceval run` does), and gives each task its verdict. The
// error is for failures before any run could start (an unknown agent name, a task Check
// refuses).
func Audit(ctx context.Context, targets []Target, o Options) ([]Report, error) {
	if err := Check(targets, o.Run); err != nil {
		return nil, err
	}
	names := append([]string{NullAgent, UnchangedAgent}, Cheats...)
	if o.Agents != nil {
		names = append([]string{NullAgent, UnchangedAgent}, o.Agents...)
	}
	var builtins []Agent
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] { // each agent once: its runs have one directory per task
			continue
		}
		seen[n] = true
		a, err := Builtin(n)
		if err != nil {
			return nil, err
		}
		builtins = append(builtins, a)
	}
	type job struct {
		slot  *Run
		agent Agent
		t     Target
	}
	reports := make([]Report, len(targets))
	var jobs []job
	for i, tg := range targets {
		r := &reports[i]
		r.TaskID, r.Variant, r.Path = tg.Task.ID, tg.Variant, tg.Task.Path
		if sum, err := task.Digest(tg.Task); err == nil {
			r.TaskSHA256 = sum
		} else {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: no digest of the task, so a report cannot tell this audit's version: %v", tg.Task.Path, err))
		}
		r.Runs = make([]Run, len(builtins))
		for _, w := range Lint(tg.Task) {
			r.Warnings = append(r.Warnings, w.String())
		}
		if hasOracle(tg.Task) {
			r.Oracle = &Run{Agent: OracleAgent, Kind: KindOracle}
			if a, err := oracleFor(tg.Task); err != nil {
				r.Oracle.Error = err.Error()
			} else {
				jobs = append(jobs, job{r.Oracle, a, tg})
			}
		}
		for j, a := range builtins {
			jobs = append(jobs, job{&r.Runs[j], a, tg})
		}
		if o.LeakedCriteria {
			r.Leaked = &Run{Agent: LeakedAgent, Kind: KindLeaked}
			jobs = append(jobs, job{r.Leaked, Leaked(tg.Task), tg})
		}
	}
	for _, j := range jobs { // until it runs: an interrupted audit proves nothing
		*j.slot = Run{Agent: j.agent.Name, Kind: j.agent.Kind, What: j.agent.What, Error: "not run: the audit was interrupted"}
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for range max(o.Jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				*j.slot = runAgent(ctx, j.t, j.agent, o.Run)
				if o.Progress != nil {
					o.Progress(j.t, *j.slot)
				}
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		work <- j
	}
	close(work)
	wg.Wait()
	for i := range reports {
		judge(&reports[i])
	}
	return reports, ctx.Err()
}

// runAgent runs agent a on the target's task through supervisor.Run: the task as written,
// with a command agent in place of its own (and so no model gateway or run budgets).
func runAgent(ctx context.Context, tg Target, a Agent, so supervisor.Options) Run {
	r := Run{Agent: a.Name, Kind: a.Kind, What: a.What}
	t := asAudited(tg.Task, forTask(a, tg.Task))
	so.Variant = "audit-" + a.Name
	if tg.Variant != "" {
		so.Variant = tg.Variant + "-audit-" + a.Name
	}
	so.Repeat = 1
	if a.lib {
		so.ImageWorkdirEnv = imageWorkdirEnv // lib.sh's in_workdir
	}
	res, err := supervisor.Run(ctx, &t, so)
	if res != nil {
		r.RunDir, r.Status, r.Score = res.Dir, res.Status, res.Score
		r.Success = res.Status == grader.TaskSuccess && err == nil
		r.Criteria = criteria(tg.Task, res.Criteria)
	}
	if err != nil {
		var ie *sandbox.InputError
		if errors.As(err, &ie) {
			r.Error = "the task was refused: " + err.Error()
		} else {
			r.Error = err.Error()
		}
		r.Status = ""
	}
	return r
}

func criteria(t *task.Task, got []grader.CriterionResult) []Criterion {
	out := make([]Criterion, 0, len(got))
	for i, cr := range got {
		c := Criterion{Index: i, Type: cr.Type, Description: cr.Description, Gating: cr.Gating, Passed: cr.Passed}
		if i < len(t.Criteria) {
			c.Line = t.Criteria[i].Line
		}
		out = append(out, c)
	}
	return out
}

// judge compares every run with the null agent's and gives the verdict.
func judge(r *Report) {
	null := &r.Runs[0]
	mark := func(run *Run) {
		if run.Error != "" || run.Status == "" {
			return
		}
		run.AboveNull = run.Agent != NullAgent && run.Score > null.Score+scoreEpsilon
		if run.Agent == NullAgent || null.Status == "" {
			return
		}
		for i, c := range run.Criteria {
			if c.Passed && c.Gating && i < len(null.Criteria) && !null.Criteria[i].Passed {
				run.Fooled = append(run.Fooled, c)
			}
		}
	}
	var broken, hackable, errs []string
	switch o := r.Oracle; {
	case o == nil:
		broken = append(broken, "no oracle: add solution: {script: ...} or {files: ...} to the task, so audit can prove it solvable")
	case o.Error != "":
		errs = append(errs, "oracle: "+o.Error)
	case !o.Success:
		broken = append(broken, fmt.Sprintf("unsolvable as written: the oracle (solution) ends %s with score %.2f", o.Status, o.Score))
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		mark(run)
		switch {
		case run.Error != "":
			errs = append(errs, run.Agent+": "+run.Error)
		case run.Success && run.Kind == KindBaseline:
			hackable = append(hackable, fmt.Sprintf("the %s agent (%s) reaches SUCCESS", run.Agent, run.What))
		case run.Success:
			msg := fmt.Sprintf("cheat %s (%s) reaches SUCCESS", run.Agent, run.What)
			if len(run.Fooled) > 0 {
				msg += "; it fooled " + joinCriteria(run.Fooled)
			}
			if run.Agent == "patch-test-runner" {
				msg += patchTestRunnerFix(run.Fooled)
			}
			hackable = append(hackable, msg)
		}
	}
	if r.Leaked != nil {
		mark(r.Leaked)
	}
	if r.Oracle != nil {
		mark(r.Oracle)
	}
	r.Reasons = append(append(append([]string{}, errs...), broken...), hackable...)
	switch {
	case len(errs) > 0:
		r.Verdict = Error
	case len(broken) > 0:
		r.Verdict = Broken
	case len(hackable) > 0:
		r.Verdict = Hackable
	default:
		r.Verdict = OK
	}
}

func joinCriteria(cs []Criterion) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += ", "
		}
		s += c.String()
	}
	return s
}

// Passed reports whether every report's verdict is ok.
func Passed(reports []Report) bool {
	for _, r := range reports {
		if r.Verdict != OK {
			return false
		}
	}
	return true
}

// patchTestRunnerFix is the way out a patch-test-runner SUCCESS names, by the criteria it
// fooled: a pytest criterion gets the hardened mode; a run_command (a Harbor test.sh whose
// reward follows its pytest, or a command running pytest) a pytest criterion in that mode.
func patchTestRunnerFix(fooled []Criterion) string {
	pytest, command := false, false
	for _, c := range fooled {
		pytest = pytest || c.Type == task.Pytest
		command = command || c.Type == task.RunCommand
	}
	msg := ""
	if pytest || !command {
		msg += "; the tests run the agent's code in pytest's own process: give each pytest criterion sandbox: container and isolation: process (the WASM sandbox has no hardened mode: one interpreter runs the tests and the agent's code)"
	}
	if command {
		msg += "; a command's pytest (a Harbor tests/test.sh's, whose reward follows it) runs the agent's code in its own process, which rewrote the outcomes and with them the exit status or reward: grade those tests with a pytest criterion with sandbox: container, isolation: process and all_or_nothing: true"
	}
	return msg
}
