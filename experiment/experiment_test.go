package experiment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

func loadTestExperiment(t *testing.T, exp string, tasks map[string]string) *task.Experiment {
	t.Helper()
	dir := t.TempDir()
	for name, doc := range tasks {
		os.MkdirAll(filepath.Join(dir, name), 0o755)
		os.WriteFile(filepath.Join(dir, name, "task.yaml"), []byte(doc), 0o644)
	}
	p := filepath.Join(dir, "exp.yaml")
	os.WriteFile(p, []byte(exp), 0o644)
	e, err := task.LoadExperiment(p, task.ExperimentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestPlanDiffNamesWhatChanged(t *testing.T) {
	base := &record.Plan{ExperimentID: "e", Repeats: 2, Variants: []string{"v"},
		Entries: []record.PlanEntry{{Variant: "v", TaskID: "a", TaskSHA256: "1"}, {Variant: "v", TaskID: "b", TaskSHA256: "2"}}}
	cases := []struct {
		name string
		edit func(p *record.Plan)
		want string
	}{
		{"same", func(*record.Plan) {}, ""},
		{"repeats", func(p *record.Plan) { p.Repeats = 3 }, "repeats 3, recorded 2"},
		{"task changed", func(p *record.Plan) { p.Entries[0].TaskSHA256 = "x" }, "v/a changed"},
		{"task gone", func(p *record.Plan) { p.Entries = p.Entries[:1] }, "v/b is gone"},
		{"task new", func(p *record.Plan) { p.Entries = append(p.Entries, record.PlanEntry{Variant: "v", TaskID: "c"}) }, "v/c is new"},
		{"order", func(p *record.Plan) { p.Entries[0], p.Entries[1] = p.Entries[1], p.Entries[0] }, "order"},
	}
	for _, c := range cases {
		q := *base
		q.Entries = append([]record.PlanEntry(nil), base.Entries...)
		c.edit(&q)
		got := base.Diff(&q)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: diff %q, want %q", c.name, got, c.want)
		}
	}
}

func TestPlanRunsAreRepeatMajorAndLaidOutByVariantTaskRepeat(t *testing.T) {
	p := &record.Plan{Repeats: 2, Entries: []record.PlanEntry{{Variant: "v", TaskID: "a"}, {Variant: "w", TaskID: "a"}}}
	runs := p.Runs()
	if len(runs) != 4 || runs[1].Entry != 1 || runs[1].Repeat != 1 || runs[2].Repeat != 2 {
		t.Fatalf("runs %v", runs)
	}
	if d := p.Dir("/r/x", runs[3]); d != "/r/x/w/a/2" {
		t.Errorf("dir %s", d)
	}
}

func TestDefaultParallelRespectsMemory(t *testing.T) {
	if n := DefaultParallel(1 << 40); n != 1 {
		t.Errorf("a task wanting 1 EiB: parallel %d, want 1", n)
	}
	if n := DefaultParallel(1); n < 1 {
		t.Errorf("parallel %d", n)
	}
}

// A failure before the agent started (here: the init cannot be installed) is retried once
// and recorded; the second failure stands.
func TestFailureBeforeTheAgentStartedIsRetriedAndRecorded(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	e := loadTestExperiment(t, "experiment_id: r\ntasks: [a/task.yaml]\n", map[string]string{
		"a": agentTask("a", "true", "  - {type: file_exists, path: x}\n"),
	})
	notADir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notADir, nil, 0o644)
	var retried int
	res, err := Run(ctx, e, Options{
		Run:     supervisor.Options{Client: c, RunsDir: t.TempDir(), InitDir: filepath.Join(notADir, "init"), Grace: time.Second},
		Retries: 1, Parallel: 1,
		OnRetry: func(*RunRecord, error) { retried++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Records[0]
	if retried != 1 || rec.Attempts != 2 || rec.Err == nil || resultOf(rec) == nil || resultOf(rec).Attempt != 2 {
		t.Fatalf("retried %d, record %+v", retried, rec)
	}
	events, _ := os.ReadFile(filepath.Join(rec.Dir, record.EventsFile))
	if strings.Count(string(events), `"event":"retry"`) != 1 || strings.Count(string(events), `"event":"run_started"`) != 2 {
		t.Errorf("events.jsonl does not record the retry:\n%s", events)
	}
	if got, _ := record.ReadResult(rec.Dir); got == nil || got.Complete || got.Status != record.StatusError {
		t.Errorf("result %+v", got)
	}
}

// A run whose agent started is never tried again, whatever happened: here ceval's own
// snapshot fails after the agent ran (the test puts a file where the snapshot goes).
func TestRunWhoseAgentStartedIsNeverRetried(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	e := loadTestExperiment(t, "experiment_id: r\ntasks: [a/task.yaml]\n", map[string]string{
		"a": agentTask("a", "echo x > x", "  - {type: file_exists, path: x}\n"),
	})
	var retried int
	var runDir string
	res, err := Run(ctx, e, Options{
		Run: supervisor.Options{Client: c, RunsDir: t.TempDir(), Grace: time.Second, Progress: func(ev string, f map[string]any) {
			switch ev {
			case "run_started":
				runDir, _ = f["run_dir"].(string)
			case "agent_started":
				os.WriteFile(filepath.Join(runDir, record.WorkspaceDir), nil, 0o600)
			}
		}},
		Retries: 3, Parallel: 1,
		OnRetry: func(*RunRecord, error) { retried++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Records[0]
	if retried != 0 || rec.Attempts != 1 || rec.Err == nil || !strings.Contains(rec.Err.Error(), "snapshot") {
		t.Errorf("retried %d, record %+v", retried, rec)
	}
}

// An experiment refuses it once, before anything starts or is written.
func TestExperimentWithAJudgeAgentWithoutItsKeyStartsNothing(t *testing.T) {
	e := loadTestExperiment(t, "experiment_id: r\ntasks: [a/task.yaml]\n", map[string]string{
		"a": agentTask("a", "true", "  - {type: agent_judge, rubric: 'Score 1.'}\n"),
	})
	runs := t.TempDir()
	_, err := Run(context.Background(), e, Options{
		Run: supervisor.Options{RunsDir: runs, LookupEnv: func(string) (string, bool) { return "", false }}})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "success_criteria[0] (agent_judge)") || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("got %v, want an input error naming success_criteria[0] and ANTHROPIC_API_KEY", err)
	}
	if left, _ := os.ReadDir(runs); len(left) != 0 {
		t.Errorf("the refused experiment wrote %v", left)
	}
}

// A simulated_user played by the judge model, with no judge in ceval's config, is refused
// once, before the pool starts or anything is written (it failed run by run before).
func TestExperimentWithASimulatedUserAndNoJudgeStartsNothing(t *testing.T) {
	e := loadTestExperiment(t, "experiment_id: r\ntasks: [a/task.yaml]\nrepeats: 2\n", map[string]string{
		"a": agentTask("a", "true", "  - {type: file_exists, path: x}\n",
			"simulated_user: {instructions: be a user, max_turns: 2}\n"),
	})
	runs := t.TempDir()
	var started int
	_, err := Run(context.Background(), e, Options{Run: supervisor.Options{RunsDir: runs}, Parallel: 1,
		OnStart: func(record.PlannedRun, *record.PlanEntry) { started++ }})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "simulated_user") || !strings.Contains(err.Error(), "judge") {
		t.Fatalf("got %v, want an input error naming simulated_user and the judge", err)
	}
	if left, _ := os.ReadDir(runs); len(left) != 0 || started != 0 {
		t.Errorf("the refused experiment started %d runs and wrote %v", started, left)
	}
}

// A service that never becomes ready fails the attempt before the agent starts, which is
// retried: the retry must start its services afresh (their logs are created, never
// overwritten) and the first attempt's log, which says why it failed, is kept beside it.
// Before: the retry failed at once with "services/db.log: file exists".
func TestRetryOfARunWhoseServiceWasNotReadyStartsItsServicesAgain(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	e := loadTestExperiment(t, "experiment_id: r\ntasks: [a/task.yaml]\n", map[string]string{
		"a": agentTask("a", "touch agent-ran", "  - {type: file_exists, path: agent-ran}\n", `services:
  - name: db
    command: [sh, -c, "echo db attempt; sleep 600"]
    ports: [5432]
    ready: {tcp: 5432, interval: 50ms, timeout: 200ms, retries: 5}
`),
	})
	res, err := Run(ctx, e, Options{
		Run:     supervisor.Options{Client: c, RunsDir: t.TempDir(), Grace: time.Second},
		Retries: 1, Parallel: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Records[0]
	if rec.Attempts != 2 || rec.Err == nil || !strings.Contains(rec.Err.Error(), "TCP port 5432 failed 5 tries") {
		t.Fatalf("attempts %d, err %v: want the second attempt's own readiness failure", rec.Attempts, rec.Err)
	}
	for _, p := range []string{"services/db.log", "services.attempt-1/db.log"} {
		if data, err := os.ReadFile(filepath.Join(rec.Dir, p)); err != nil || !strings.Contains(string(data), "db attempt") {
			t.Errorf("%s: %q %v", p, data, err)
		}
	}
	events, _ := os.ReadFile(filepath.Join(rec.Dir, record.EventsFile))
	if !strings.Contains(string(events), `"services_logs":"services.attempt-1"`) {
		t.Errorf("the retry event does not say where the first attempt's logs went:\n%s", events)
	}
}
