package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/report"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// An experiment whose variants clearly differ stops launching runs once the sequential test
// decides; stopped_early.json and summary.json say when (after how many runs) and why; the
// runs it did not launch are left for ceval run --resume, which completes the experiment.
func TestStopEarlyStopsLaunchingRunsAndResumeCompletesTheExperiment(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	// Every pair is discordant for good: at confidence 0.9 the e-value 2^n/(n+1) first
	// passes 10 at n = 7 pairs, that is after 14 runs of the 24 planned (parallel 1).
	e := loadTestExperiment(t, `experiment_id: s
tasks: [a/task.yaml]
repeats: 12
variants:
  - variant_id: good
  - variant_id: bad
    agent: {command: [/bin/sh, -c, "true"]}
stop_early: {compare: [bad, good], metric: pass_rate, confidence: 0.9, min_runs: 2}
`, map[string]string{"a": agentTask("a", "echo x > x", "  - {type: file_exists, path: x}\n")})
	o := Options{Run: supervisor.Options{Client: c, RunsDir: t.TempDir(), RunID: "s1", Grace: time.Second}, Parallel: 1}
	res, err := Run(ctx, e, o)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, r := range res.Records {
		if r != nil {
			ran++
		}
	}
	s := res.StoppedEarly
	if s == nil || res.Interrupted || ran != 14 || s.AfterRuns != 14 || s.Planned != 24 || s.Pairs != 7 || s.Discordant != 7 || s.FirstOnly != 0 || s.Better != "good" {
		t.Fatalf("ran %d, interrupted %v, stop %+v", ran, res.Interrupted, s)
	}
	if !strings.Contains(s.Reason, "good passes more often than bad") || !strings.Contains(s.Reason, "after 14 of 24 runs") {
		t.Errorf("reason %q", s.Reason)
	}
	_, sum, err := report.Write(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Complete || sum.StoppedEarly == nil || sum.StoppedEarly.AfterRuns != 14 || sum.StoppedEarly.Resumed != "" {
		t.Fatalf("summary: complete %v, stopped_early %+v", sum.Complete, sum.StoppedEarly)
	}
	raw, _ := os.ReadFile(filepath.Join(res.Dir, report.SummaryFile))
	if !strings.Contains(string(raw), `"stopped_early"`) || !strings.Contains(string(raw), `"reason"`) {
		t.Errorf("summary.json does not say why it stopped:\n%s", raw)
	}

	o.Resume = true
	res2, err := Run(ctx, e, o)
	if err != nil {
		t.Fatal(err)
	}
	resumed, newRuns := 0, 0
	for _, r := range res2.Records {
		switch {
		case r == nil:
			t.Fatal("the resume left a run out")
		case r.Resumed:
			resumed++
		default:
			newRuns++
		}
	}
	if res2.StoppedEarly != nil || res2.Interrupted || resumed != 14 || newRuns != 10 {
		t.Fatalf("resume: kept %d, ran %d, stopped %+v, interrupted %v", resumed, newRuns, res2.StoppedEarly, res2.Interrupted)
	}
	_, sum, err = report.Write(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Complete || sum.StoppedEarly == nil || sum.StoppedEarly.Resumed == "" || sum.Planned != 24 {
		t.Errorf("after the resume: complete %v, stopped_early %+v", sum.Complete, sum.StoppedEarly)
	}
}

// Without a difference the test does not stop the experiment: every planned run runs.
func TestStopEarlyDoesNotStopWithoutADifference(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	e := loadTestExperiment(t, `experiment_id: s
tasks: [a/task.yaml]
repeats: 4
variants: [{variant_id: one}, {variant_id: two}]
stop_early: {compare: [one, two]}
`, map[string]string{"a": agentTask("a", "echo x > x", "  - {type: file_exists, path: x}\n")})
	res, err := Run(ctx, e, Options{Run: supervisor.Options{Client: c, RunsDir: t.TempDir(), Grace: time.Second}, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Records {
		if r == nil {
			t.Fatal("a run was not launched")
		}
	}
	if res.StoppedEarly != nil {
		t.Fatalf("stopped %+v", res.StoppedEarly)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, record.StopFile)); err == nil {
		t.Error("stopped_early.json written without a stop")
	}
}

// A live rephrase asks the judge model of ceval's config from the host, once per entry;
// its answer is the agent's prompt, recorded in prompts.json; a resume reads it back and
// asks nothing, and --prompts-from reuses it in a new experiment directory.
func TestLiveRephraseIsRecordedAndReusedWithoutAskingAgain(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"content": []any{map[string]any{"type": "text", "text": "  Formally: do the task.\n"}}})
	}))
	defer srv.Close()
	j := judge.New(judge.Config{API: judge.Anthropic, Model: "m", BaseURL: srv.URL, Key: "k", Timeout: 5 * time.Second}, nil, nil)
	exp := "experiment_id: r\ntasks: [a/task.yaml]\nprompt_mutations: [{variant_id: formal, type: rephrase, instructions: Be formal.}]\n"
	tasks := map[string]string{"a": agentTask("a", "true", "  - {type: file_exists, path: x}\n")}
	runs := t.TempDir()
	start := func(id string, o Options) *task.Experiment {
		t.Helper()
		e := loadTestExperiment(t, exp, tasks)
		o.Run.RunsDir, o.Run.RunID, o.Run.Judge = runs, id, j
		dir := filepath.Join(runs, id)
		if !o.Resume {
			os.MkdirAll(dir, 0o700)
		}
		if err := experimentPrompts(context.Background(), e, dir, o); err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := start("one", Options{})
	if got := e.Entries[1].Task.Prompt; got != "Formally: do the task." || calls.Load() != 1 {
		t.Fatalf("prompt %q after %d calls", got, calls.Load())
	}
	p, err := record.ReadPrompts(filepath.Join(runs, "one"))
	if err != nil || len(p.Entries) != 1 || p.Entries[0].Mode != "live" {
		t.Fatalf("prompts.json %+v %v", p, err)
	}
	log, _ := os.ReadFile(filepath.Join(runs, "one", record.PromptCallsFile))
	if !strings.Contains(string(log), `"mode":"live"`) || strings.Contains(string(log), `"k"`) {
		t.Errorf("prompt_calls.jsonl:\n%s", log)
	}
	if e := start("one", Options{Resume: true}); e.Entries[1].Task.Prompt != "Formally: do the task." {
		t.Errorf("resume prompt %q", e.Entries[1].Task.Prompt)
	}
	if e := start("two", Options{PromptsFrom: filepath.Join(runs, "one")}); e.Entries[1].Task.Prompt != "Formally: do the task." {
		t.Errorf("--prompts-from prompt %q", e.Entries[1].Task.Prompt)
	}
	if calls.Load() != 1 {
		t.Errorf("the model was asked %d times; the resume and --prompts-from must reuse the record", calls.Load())
	}
	// A resume whose record lacks the prompt is refused, not made anew.
	os.WriteFile(filepath.Join(runs, "one", record.PromptsFile), []byte(`{"entries":[]}`), 0o600)
	e2 := loadTestExperiment(t, exp, tasks)
	err = experimentPrompts(context.Background(), e2, filepath.Join(runs, "one"), Options{Resume: true, Run: supervisor.Options{Judge: j}})
	if err == nil || !strings.Contains(err.Error(), "is not in prompts.json") || calls.Load() != 1 {
		t.Errorf("resume without the record: %v (%d calls)", err, calls.Load())
	}
}

// A live rephrase without a judge in ceval's config is refused before anything runs, with
// what to do, and leaves no experiment directory behind.
func TestRephraseWithoutAJudgeIsRefusedBeforeAnyRun(t *testing.T) {
	e := loadTestExperiment(t, "experiment_id: r\ntasks: [a/task.yaml]\nprompt_mutations: [{type: rephrase, instructions: Be formal.}]\n",
		map[string]string{"a": agentTask("a", "true", "  - {type: file_exists, path: x}\n")})
	runs := t.TempDir()
	_, err := Run(context.Background(), e, Options{Run: supervisor.Options{RunsDir: runs, RunID: "x"}})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "add judge: {api: anthropic, model: ...} to the config file") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(filepath.Join(runs, "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused experiment left its directory: %v", err)
	}
}
