package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"ceval.dev/ceval/atif"
	"ceval.dev/ceval/judge"
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
	// TaskSteps are the task's setup and after_agent steps, each with its log's tail.
	TaskSteps []taskStepView
	// Services are the task's services, each with its log's tail.
	Services []taskStepView
}

type taskStepView struct {
	Title string
	Log   logPreview
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
			tv := taskStepView{Title: StripControls(title + " · " + st.Run)}
			if st.Log != "" {
				tv.Log = preview(r.Dir, "", st.Log)
				tv.Log.Href = relHref(filepath.Dir(st.Log), filepath.Base(st.Log))
			}
			v.TaskSteps = append(v.TaskSteps, tv)
		}
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
	for _, rec := range judge.ReadRecords(f) {
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
