package grader

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/toolcalls"
)

// Status is the outcome of one criterion: the run record's.
type Status = record.CriterionStatus

// Criterion statuses (record.CriterionStatus). ERROR is only ever caused on ceval's side;
// whatever the workspace holds can at worst make a criterion FAIL.
const (
	Pass      = record.CriterionPass
	Fail      = record.CriterionFail
	NotGraded = record.CriterionNotGraded
	Error     = record.CriterionError
)

// Task statuses (record's run statuses a grade gives).
const (
	TaskSuccess   = record.StatusSuccess
	TaskFailure   = record.StatusFailure
	TaskNotGraded = record.StatusNotGraded
	TaskError     = record.StatusError
)

// scoreEpsilon absorbs float rounding when a score is compared with pass_threshold, so a
// mean such as (2/3+1)/2 reaches a threshold written with the same value.
const scoreEpsilon = 1e-9

// maxDetailBytes caps a criterion's details, which quote workspace content.
const maxDetailBytes = 2048

// CriterionResult is the graded outcome of one criterion: the run record's, which the
// grader fills.
type CriterionResult = record.CriterionResult

// Output is what an executed criterion's command printed, as the executor kept it.
type Output = record.CriterionOutput

// outputTailBytes is how much of each stream the details of a criterion that did not pass
// quote (the saved logs hold the rest).
const outputTailBytes = 400

// outputTail says how each stream of o ended, for the details.
func outputTail(o *Output) string {
	var parts []string
	for _, s := range []struct {
		name string
		b    []byte
		cut  int64
	}{{"stdout", o.Stdout, o.StdoutCut}, {"stderr", o.Stderr, o.StderrCut}} {
		t := strings.TrimRight(string(s.b), "\n")
		if t == "" {
			continue
		}
		end := "ends"
		if s.cut > 0 {
			end = fmt.Sprintf("ends (%d bytes past the cap dropped)", s.cut)
		}
		if len(t) > outputTailBytes {
			cut := len(t) - outputTailBytes
			for cut < len(t) && !utf8.RuneStart(t[cut]) {
				cut++
			}
			parts = append(parts, fmt.Sprintf("%s %s …%q", s.name, end, t[cut:]))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s %q", s.name, end, t))
		}
	}
	if len(parts) == 0 {
		return "; no output"
	}
	return "; " + strings.Join(parts, "; ")
}

// Parts is how many of the checks a criterion lists were met (record.Parts).
type Parts = record.Parts

// Label is one classification: the label the task expects and the one the agent wrote
// (record.Label).
type Label = record.Label

// MaxPredictedLabel caps Label.Predicted (beyond the expected label's own length).
const MaxPredictedLabel = 256

// Result is the graded outcome of a task: the run record's grade, which Grade fills.
type Result = record.Grade

// Executor grades criteria that run code (run_command, wasm). The score is in [0, 1]
// (values outside are clamped, NaN counts as 0); details are shown to the user; a non-nil
// err means the executor itself failed on ceval's side, and makes the criterion ERROR.
// Whatever the workspace makes the executed code do must come back as a score, not an err.
type Executor interface {
	// reference is the task's reference directory as opened at load (nil when it has
	// none); it is read only through its handle, never by its path.
	Execute(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot, reference *task.Dir) (Scored, error)
}

// Options configure Grade.
type Options struct {
	// Executor grades executing criteria; nil leaves them NOT_GRADED.
	Executor Executor
	// Reference is handed to the Executor; nil means the task's reference directory.
	Reference *task.Dir
	// MockCallsPath is the run's protected-mock call log (ceval's own, never the agent's),
	// which cli_called and command_executed grade; "" leaves them NOT_GRADED.
	MockCallsPath string
	// ToolCalls are the run's tool calls, read from the model gateway's transcript (never
	// from the agent's own files), which tool_called, tool_calls_budget and skill_used grade;
	// nil leaves them NOT_GRADED, and ToolCallsError (the transcript unreadable) makes them ERROR.
	ToolCalls      *toolcalls.Log
	ToolCallsError error
	// Judge answers llm_judge criteria (the user's judge model, with the run's budget and
	// log); nil leaves them NOT_GRADED unless a criterion has a judge_fixture.
	Judge *judge.Judge
	// AgentJudge runs agent_judge criteria (a judge agent in its own sandbox, which only the
	// supervisor can start); nil leaves them NOT_GRADED.
	AgentJudge AgentJudge
}

// AgentJudge runs a judge agent over a copy of the snapshot and returns its verdict. A
// judge that wrote no valid verdict is a Verdict with Malformed set; err is ceval's side.
type AgentJudge interface {
	RunAgentJudge(ctx context.Context, c *task.AgentJudgeSpec, s *snapshot.Snapshot) (*judge.Verdict, error)
}

// verdict is what evaluating one criterion yields before thresholds apply. A forced
// status (FAIL, NOT_GRADED, ERROR) overrides the threshold, so a missing or unreadable
// file fails even under pass_threshold 0.
type verdict struct {
	score   float64
	details string
	forced  Status
	label   *Label             // classification_match only
	parts   *Parts             // file_contains, file_check, json_check only
	rewards map[string]float64 // an executed criterion's named rewards
	output  *Output            // an executed criterion's output, when its executor kept it
}

func scored(score float64, details string) verdict { return verdict{score: score, details: details} }

func failed(format string, args ...any) verdict {
	return verdict{forced: Fail, details: fmt.Sprintf(format, args...)}
}

func errored(format string, args ...any) verdict {
	return verdict{forced: Error, details: fmt.Sprintf(format, args...)}
}

// Grade grades t against the snapshot s. It never fails: every problem becomes the status
// of the criterion it affects. Criteria are reported in the task file's order.
func Grade(ctx context.Context, t *task.Task, s *snapshot.Snapshot, opts Options) *Result {
	r := &Result{TaskID: t.ID, Criteria: make([]CriterionResult, 0, len(t.Criteria))}
	if s != nil && len(s.Notes) > 0 {
		r.SnapshotNotes = make([]record.SnapshotNote, len(s.Notes))
		for i, n := range s.Notes {
			r.SnapshotNotes[i] = record.SnapshotNote(n)
		}
	}
	if opts.Reference == nil {
		opts.Reference = t.Reference
	}
	for i := range t.Criteria {
		c := &t.Criteria[i]
		v := evaluate(ctx, c, s, opts)
		r.Criteria = append(r.Criteria, finish(c, v))
		if c.Executes() && opts.Executor != nil {
			notePython(r, opts.Executor, c)
		}
	}
	r.Score, r.Status = aggregate(r.Criteria)
	return r
}

// evaluate grades one criterion; a panic is a ceval bug, reported as ERROR of that
// criterion rather than taking down the whole grade.
func evaluate(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot, opts Options) (v verdict) {
	defer func() {
		if p := recover(); p != nil {
			v = errored("grader panicked: %v", p)
		}
	}()
	if err := ctx.Err(); err != nil {
		return errored("grading stopped: %v", err)
	}
	if s == nil {
		return errored("no snapshot of the workspace to grade")
	}
	if c.Executes() {
		return execute(ctx, c, s, opts)
	}
	switch spec := c.Spec.(type) {
	case *task.FileExistsSpec:
		return fileExists(spec, s)
	case *task.FileContainsSpec:
		return fileContains(spec, s)
	case *task.FileMatchesRegexSpec:
		return fileMatchesRegex(spec, s)
	case *task.FileCheckSpec:
		return fileCheck(spec, s)
	case *task.JSONCheckSpec:
		return jsonCheck(ctx, spec, s)
	case *task.ClassificationMatchSpec:
		return classificationMatch(spec, s)
	case *task.CLICalledSpec, *task.CommandExecutedSpec:
		return mockCalls(spec, opts.MockCallsPath)
	case *task.ToolCalledSpec, *task.ToolCallsBudgetSpec, *task.SkillUsedSpec:
		return toolCallCriterion(spec, opts)
	case *task.LLMJudgeSpec:
		return llmJudge(ctx, spec, s, opts)
	case *task.AgentJudgeSpec:
		if opts.AgentJudge == nil {
			return verdict{forced: NotGraded, details: "agent_judge runs a judge agent in its own sandbox: graded by ceval run (and regrade), not offline"}
		}
		v, err := opts.AgentJudge.RunAgentJudge(ctx, spec, s)
		if why, ok := workspaceFault(err); ok {
			return failed("agent_judge: %s", why)
		}
		if err != nil {
			return errored("agent_judge: %v", err)
		}
		if v.Malformed != "" {
			return failed("the judge agent wrote no valid verdict: %s", v.Malformed)
		}
		return scored(v.Score, fmt.Sprintf("judge agent score %.3g: %s", v.Score, quote(v.Reasons, 1200)))
	}
	return errored("unknown criterion type %q", c.Type)
}

func execute(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot, opts Options) verdict {
	if opts.Executor == nil {
		return verdict{forced: NotGraded, details: "executing criteria run in the WASM sandbox, which this ceval does not have yet"}
	}
	sc, err := opts.Executor.Execute(ctx, c, s, opts.Reference)
	if why, ok := notGraded(err); ok {
		return verdict{forced: NotGraded, details: why}
	}
	if why, ok := workspaceFault(err); ok {
		return failed("%s", why)
	}
	if err != nil {
		return errored("%s", err)
	}
	if sc.Invalid {
		v := failed("%s", sc.Details)
		v.output = sc.Output
		return v
	}
	score, details := sc.Score, sc.Details
	switch {
	case math.IsNaN(score):
		return failed("executor returned no usable score (NaN); %s", details)
	case score < 0:
		score = 0
	case score > 1:
		score = 1
	}
	v := scored(score, details)
	v.rewards, v.output = sc.Rewards, sc.Output
	return v
}

// finish applies the criterion's threshold and weight to a verdict.
func finish(c *task.Criterion, v verdict) CriterionResult {
	cr := CriterionResult{
		Type:        c.Type,
		Description: c.Description,
		Weight:      c.Weight,
		Gating:      c.Weight > 0,
		Details:     capDetails(printable(v.details)),
		Label:       v.label,
		Parts:       v.parts,
		Rewards:     v.rewards,
		Output:      v.output,
	}
	switch v.forced {
	case "":
		cr.Score = v.score
		cr.Status = Fail
		if v.score+scoreEpsilon >= c.PassThreshold {
			cr.Status = Pass
		}
	default:
		// Forced outcomes score 0: a criterion that could not be graded earns nothing.
		cr.Status = v.forced
	}
	cr.Passed = cr.Status == Pass
	if v.output != nil && !cr.Passed {
		// How the command's output ended, kept whole after the details' own words.
		t := capDetailsTo(printable(outputTail(v.output)), maxDetailBytes/2)
		cr.Details = capDetailsTo(printable(v.details), maxDetailBytes-len(t)) + t
	}
	return cr
}

// aggregate computes the task's score (weighted mean over weighted criteria) and status.
// A task with no gating criterion has nothing to fail and is SUCCESS, with score 0.
func aggregate(crs []CriterionResult) (float64, string) {
	var sum, weights float64
	var failure, notGraded, errored bool
	for _, cr := range crs {
		if !cr.Gating {
			continue
		}
		sum += cr.Weight * cr.Score
		weights += cr.Weight
		switch cr.Status {
		case Fail:
			failure = true
		case NotGraded:
			notGraded = true
		case Error:
			errored = true
		}
	}
	score := 0.0
	if weights > 0 {
		score = sum / weights
	}
	switch {
	case errored:
		return score, TaskError
	case notGraded:
		return score, TaskNotGraded
	case failure:
		return score, TaskFailure
	}
	return score, TaskSuccess
}

func capDetails(s string) string { return capDetailsTo(s, maxDetailBytes) }

func capDetailsTo(s string, n int) string {
	n = max(n, 0)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (truncated)"
}

// quote renders workspace-controlled text for details: Go-quoted, so control characters
// and terminal escapes are inert, and cut to n bytes.
func quote(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}

// printable escapes every non-printable rune, so no detail can carry a terminal escape
// sequence or a line break out of the workspace.
func printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsPrint(r) {
			b.WriteRune(r)
		} else {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
