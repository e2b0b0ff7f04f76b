package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"ceval.dev/ceval/atif"
	"ceval.dev/ceval/record"
)

// TranscriptFile is a run's own page, in its run directory: what the agent did (the model
// turns from the gateway's transcript, with tool calls and results), its criteria, judge
// calls and logs. The experiment's page links to it, so a 1,000-run experiment's page stays
// small: each run's turns load only when opened.
const TranscriptFile = "transcript.html"

// judgeCallsFile is a run's judge call log (supervisor.JudgeCallsFile).
const judgeCallsFile = "judge_calls.jsonl"

// Caps of what a run's page shows of one text (the whole is in the run's files).
const (
	stepTextCap  = 32 << 10
	maxPageSteps = 2000
)

//go:embed transcript.html.tmpl
var transcriptTemplate string

var transcriptPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("transcript").Funcs(template.FuncMap{
		"f2":  func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
		"f1":  func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
		"css": func() template.CSS { return template.CSS(reportCSS) },
	}).Parse(transcriptTemplate))
})

type transcriptView struct {
	CSP    string
	Back   string // the experiment's report.html, relative to the run directory
	Run    runPanel
	Skip   string // why there are no model turns
	Totals string
	Steps  []stepView
	Judges []judgeView
	// TaskSteps are the task's setup and after_agent steps, each a tab with its log's tail.
	TaskSteps []taskStepView
	// Iterations are the agent's iterations, each a tab: its grade, criteria and logs.
	Iterations []iterationView
	// IterationsTitle and IterationWord name the tabs: Iterations/iteration, or a multi-step
	// task's Steps/step (the same tabs, one per step: taskStepViews).
	IterationsTitle, IterationWord string
	// Services are the task's services, each with its log's tail.
	Services []taskStepView
}

type taskStepView struct {
	ID, Title string
	Checked   bool
	Log       logPreview
}

// iterationView is one iteration's tab: what iterations/<n>/result.json says (the last
// iteration's files are the run directory's own).
type iterationView struct {
	ID, Label string
	Checked   bool
	Over      string
	Error     string
	Criteria  []criterionRow
	Logs      []logPreview
}

type stepView struct {
	N                          int
	Source, Model, When, Usage string
	Message, Reasoning         string
	Calls                      []callView
	Results                    []resultView
	Open                       bool
}

type callView struct{ ID, Name, Args string }
type resultView struct{ ID, Text string }

type judgeView struct{ Title, User, Answer string }

// capText strips control sequences and keeps the first stepTextCap bytes, saying how much
// was left out.
func capText(s string) string {
	s = StripControls(s)
	if len(s) <= stepTextCap {
		return s
	}
	cut := stepTextCap
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[... %d more bytes: the whole text is in %s]", len(s)-cut, record.ModelCallsFile)
}

// transcriptHTML renders one run's page. The run's panel (criteria, logs) is the
// experiment page's; its links are made relative to the run directory.
func transcriptHTML(expDir string, r Run, p runPanel) ([]byte, error) {
	v := transcriptView{CSP: contentSecurityPolicy, Run: p}
	if rel, err := filepath.Rel(r.Dir, filepath.Join(expDir, HTMLFile)); err == nil {
		v.Back = relHref(filepath.Dir(rel), filepath.Base(rel))
	}
	v.Run.Logs = append([]logPreview(nil), p.Logs...)
	for i := range v.Run.Logs {
		v.Run.Logs[i].Href = relHref("", v.Run.Logs[i].Name)
	}
	t, err := atif.FromRun(r.Dir, r.Result)
	var skip *atif.SkipError
	switch {
	case errors.As(err, &skip):
		v.Skip = "no model turns: " + StripControls(skip.Why)
	case err != nil:
		v.Skip = "the model gateway's transcript could not be read: " + StripControls(err.Error())
	default:
		v.Steps, v.Totals = stepViews(t)
	}
	v.Judges = judgeViews(r.Dir)
	v.Run.Criteria = append([]criterionRow(nil), p.Criteria...)
	if r.Result != nil && len(r.Result.Criteria) == len(v.Run.Criteria) {
		for i, c := range r.Result.Criteria {
			for _, name := range c.OutputLogs {
				if !verifierLog(name) {
					continue // result.json is ceval's, but a page never reads outside verifier/
				}
				lp := preview(r.Dir, "", name)
				lp.Href = relHref(filepath.Dir(name), filepath.Base(name))
				lp.Name = StripControls(name)
				v.Run.Criteria[i].Logs = append(v.Run.Criteria[i].Logs, lp)
			}
		}
	}
	if r.Result != nil {
		for _, st := range r.Result.Steps {
			title := fmt.Sprintf("%s %d", st.Kind, st.Index)
			if st.Iteration > 0 {
				title += fmt.Sprintf(" (after iteration %d)", st.Iteration)
			}
			switch {
			case st.Skipped:
				title += ": skipped (a step before it failed)"
			case st.TimedOut:
				title += fmt.Sprintf(": timed out after %.1f s", st.Seconds)
			case st.ExitCode != nil:
				title += fmt.Sprintf(": exit %d in %.1f s", *st.ExitCode, st.Seconds)
			}
			tv := taskStepView{ID: fmt.Sprintf("step-tab-%d", len(v.TaskSteps)+1), Title: StripControls(title + " · " + st.Run), Checked: len(v.TaskSteps) == 0}
			if st.Log != "" {
				tv.Log = preview(r.Dir, "", st.Log)
				tv.Log.Href = relHref(filepath.Dir(st.Log), filepath.Base(st.Log))
			}
			v.TaskSteps = append(v.TaskSteps, tv)
		}
	}
	v.Iterations, v.IterationsTitle, v.IterationWord = iterationViews(r, v.Run.Criteria), "Iterations", "iteration"
	if sv := taskStepViews(r); sv != nil { // a multi-step run (steps.go)
		v.Iterations, v.IterationsTitle, v.IterationWord = sv, "Steps", "step"
	}
	if r.Result != nil {
		for _, sv := range r.Result.Services {
			title := sv.Name + " (" + sv.Image + ")"
			switch {
			case !sv.Ready:
				title += fmt.Sprintf(": never ready (%d tries)", sv.ReadyTries)
			case sv.ExitedEarly && sv.ExitCode != nil:
				title += fmt.Sprintf(": ready after %.2f s, exited with %d while the run went on", sv.ReadySeconds, *sv.ExitCode)
			default:
				title += fmt.Sprintf(": ready after %.2f s, stopped by ceval", sv.ReadySeconds)
			}
			if len(sv.Ports) > 0 {
				title += fmt.Sprintf(" · %s ports %v", sv.Address, sv.Ports)
			}
			tv := taskStepView{Title: StripControls(title)}
			if sv.Log != "" {
				tv.Log = preview(r.Dir, "", sv.Log)
				tv.Log.Href = relHref(filepath.Dir(sv.Log), filepath.Base(sv.Log))
			}
			v.Services = append(v.Services, tv)
		}
	}
	var buf bytes.Buffer
	if err := transcriptPage().Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("render %s: %w", TranscriptFile, err)
	}
	return buf.Bytes(), nil
}

func stepViews(t *atif.Trajectory) ([]stepView, string) {
	var out []stepView
	for i, s := range t.Steps {
		if i == maxPageSteps {
			out = append(out, stepView{N: s.StepID, Source: "note", Message: fmt.Sprintf("%d more steps not shown: see %s", len(t.Steps)-i, record.ModelCallsFile)})
			break
		}
		sv := stepView{N: s.StepID, Source: StripControls(s.Source), Model: StripControls(s.ModelName), When: StripControls(s.Timestamp),
			Message: capText(s.Message), Reasoning: capText(s.ReasoningContent), Open: len(t.Steps) <= 50}
		if m := s.Metrics; m != nil {
			sv.Usage = fmt.Sprintf("%d in (%d cached), %d out", m.PromptTokens, m.CachedTokens, m.CompletionTokens)
			if m.CostUSD != nil {
				sv.Usage += fmt.Sprintf(", $%.4f", *m.CostUSD)
			}
		}
		for _, c := range s.ToolCalls {
			args := string(c.Arguments)
			var pretty bytes.Buffer
			if json.Indent(&pretty, c.Arguments, "", "  ") == nil {
				args = pretty.String()
			}
			sv.Calls = append(sv.Calls, callView{ID: StripControls(c.ToolCallID), Name: StripControls(c.FunctionName), Args: capText(args)})
		}
		if s.Observation != nil {
			for _, res := range s.Observation.Results {
				sv.Results = append(sv.Results, resultView{ID: StripControls(res.SourceCallID), Text: capText(res.Content)})
			}
		}
		out = append(out, sv)
	}
	totals := ""
	if fm := t.FinalMetrics; fm != nil {
		totals = fmt.Sprintf("%d steps · %d input tokens (%d cached) · %d output tokens", fm.TotalSteps, fm.TotalPromptTokens, fm.TotalCachedTokens, fm.TotalCompletionTokens)
		if fm.TotalCostUSD != nil {
			totals += fmt.Sprintf(" · $%.4f", *fm.TotalCostUSD)
		}
	}
	if t.Notes != "" {
		totals = strings.TrimSpace(totals + " · " + StripControls(t.Notes))
	}
	return out, totals
}

// iterationViews makes a tab per iteration of a run that ran the agent more than once: the
// grade and criteria of iterations/<n>/result.json with its agent logs' and verifier
// outputs' tails; the last is the run directory's own (its criteria, latest, are given).
func iterationViews(r Run, last []criterionRow) []iterationView {
	if r.Result == nil || len(r.Result.Iterations) < 2 {
		return nil
	}
	var out []iterationView
	n := len(r.Result.Iterations)
	for i, it := range r.Result.Iterations {
		iv := iterationView{ID: fmt.Sprintf("iteration-tab-%d", it.N), Checked: i == n-1, Over: StripControls(it.Over),
			Label: StripControls(fmt.Sprintf("iteration %d: %s %.2f (%s)", it.N, it.Status, it.Score, it.Prompt))}
		dir := filepath.Join(record.IterationsDir, strconv.Itoa(it.N))
		if i == n-1 {
			iv.Criteria, dir = last, ""
		} else if res, err := readIterationResult(filepath.Join(r.Dir, dir)); err != nil {
			iv.Error = StripControls(err.Error())
		} else {
			for _, c := range res.Criteria {
				row := criterionRow{Type: StripControls(c.Type), Description: StripControls(c.Description),
					Status: StripControls(string(c.Status)), Details: StripControls(c.Details), Score: c.Score, Weight: c.Weight, Gating: c.Gating}
				for _, name := range c.OutputLogs {
					if verifierLog(name) {
						lp := preview(r.Dir, "", filepath.Join(dir, name))
						lp.Name, lp.Href = filepath.Join(dir, name), relHref(filepath.Join(dir, filepath.Dir(name)), filepath.Base(name))
						row.Logs = append(row.Logs, lp)
					}
				}
				iv.Criteria = append(iv.Criteria, row)
			}
		}
		for _, name := range []string{record.StdoutFile, record.StderrFile} {
			lp := preview(r.Dir, "", filepath.Join(dir, name))
			lp.Name, lp.Href = filepath.Join(dir, name), relHref(dir, name)
			iv.Logs = append(iv.Logs, lp)
		}
		out = append(out, iv)
	}
	return out
}

// readIterationResult reads an iteration's result.json, never through a symlink, capped.
func readIterationResult(dir string) (*record.Result, error) {
	f, err := os.OpenFile(filepath.Join(dir, record.ResultFile), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", record.ResultFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		return nil, err
	}
	var res record.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", record.ResultFile, err)
	}
	return &res, nil
}

// verifierLog says whether name is a file of the run directory's verifier/ (one level, no
// "..": filepath.IsLocal), as the supervisor names them.
func verifierLog(name string) bool {
	return filepath.IsLocal(name) && filepath.Dir(name) == record.VerifierDir && strings.HasSuffix(name, ".log")
}

// judgeViews reads the run's judge calls, never through a symlink.
func judgeViews(dir string) []judgeView {
	f, err := os.OpenFile(filepath.Join(dir, judgeCallsFile), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	var out []judgeView
	for _, rec := range record.ReadJudgeCalls(f) {
		title := fmt.Sprintf("%s %s sample %d (%s)", rec.API, rec.Model, rec.Sample, rec.Mode)
		if rec.Score != nil {
			title += fmt.Sprintf(": score %.2f", *rec.Score)
		}
		if rec.Error != "" {
			title += ": " + rec.Error
		}
		out = append(out, judgeView{Title: capText(title), User: capText(rec.User), Answer: capText(rec.Answer)})
	}
	return out
}

// writeTranscripts writes every run's page (runs with a result), each atomically.
func writeTranscripts(e *Experiment, panels []runPanel) error {
	var errs []error
	for i, r := range e.Runs {
		if r.Result == nil || r.Dir == "" {
			continue
		}
		page, err := transcriptHTML(e.Dir, r, panels[i])
		if err == nil {
			err = record.WriteFileAtomic(filepath.Join(r.Dir, TranscriptFile), page, 0o600)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Dir, err))
		}
	}
	return errors.Join(errs...)
}
