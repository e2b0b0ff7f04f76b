package experiment

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// fakeSandbox makes the scheduler's runs fake ones (no containerd): each attempt writes a
// result.json of about 6 KiB in its run directory, as a real run's is written, and returns
// it.
func fakeSandbox(t *testing.T) {
	t.Helper()
	oldRun, oldResolve := runAttempt, resolveSandbox
	t.Cleanup(func() { runAttempt, resolveSandbox = oldRun, oldResolve })
	resolveSandbox = func(context.Context, *client.Client, task.Sandbox, *images.Pinner, *images.PreflightCache, string, io.Writer) (images.Image, error) {
		return images.Image{}, nil
	}
	runAttempt = func(_ context.Context, tk *task.Task, o supervisor.Options) (*record.Result, error) {
		dir := filepath.Join(o.RunsDir, o.RunID, o.Variant, tk.ID, strconv.Itoa(o.Repeat))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		res := &record.Result{Grade: record.Grade{TaskID: tk.ID, Status: "SUCCESS", Score: 1,
			Criteria: []record.CriterionResult{{Status: record.CriterionPass, Details: strings.Repeat("d", 6<<10)}}},
			Variant: o.Variant, Repeat: o.Repeat, Attempt: o.Attempt, Complete: true}
		if err := record.WriteJSONAtomic(filepath.Join(dir, record.ResultFile), res); err != nil {
			return nil, err
		}
		return res, nil
	}
}

// TestExperimentMemoryIsFlatOverItsRuns: an experiment of 1,000 runs (a fake sandbox,
// each run's result about 6 KiB) holds no run's result in memory once its callbacks heard
// it: the live heap after run 1,000 is within 1 KiB a run of the heap after run 100, the
// records keep only the outcome, and the outcome still counts. Before, Result.Records held
// every run's Result (6 MiB more at 1,000 runs here).
func TestExperimentMemoryIsFlatOverItsRuns(t *testing.T) {
	fakeSandbox(t)
	const n = 1000
	e := loadTestExperiment(t, "experiment_id: mem\ntasks: [a/task.yaml]\nrepeats: 1000\n", map[string]string{
		"a": agentTask("a", "true", "  - {type: file_exists, path: x}\n"),
	})
	var at100, at1000 uint64
	var mu sync.Mutex
	finished := 0
	res, err := Run(context.Background(), e, Options{
		Run: supervisor.Options{RunsDir: t.TempDir()}, Parallel: 2, Ahead: -1, Retries: -1,
		OnFinish: func(r *RunRecord) {
			if r.Result == nil || r.Result.Status != "SUCCESS" {
				t.Errorf("run %d: the callback heard no result: %+v", r.Repeat, r)
			}
			mu.Lock() // two workers call it
			defer mu.Unlock()
			switch finished++; finished {
			case 100:
				at100 = liveHeap()
			case n:
				at1000 = liveHeap()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != n || res.Interrupted {
		t.Fatalf("%d records, interrupted %v", len(res.Records), res.Interrupted)
	}
	grew := int64(at1000) - int64(at100)
	t.Logf("live heap after run 100: %d KiB, after run %d: %d KiB (%+d bytes a run)", at100>>10, n, at1000>>10, grew/(n-100))
	if grew > (n-100)*1024 {
		t.Errorf("the live heap grew %d KiB from run 100 to run %d (%d bytes a run): an experiment's memory must not grow with its runs", grew>>10, n, grew/(n-100))
	}
	for i, r := range res.Records {
		if r == nil || r.Result != nil || r.Outcome == nil || r.Outcome.Status != "SUCCESS" || !r.Outcome.Complete {
			t.Fatalf("record %d keeps %+v; want the outcome only", i, r)
		}
	}
	if got, err := res.Records[n-1].ReadResult(); err != nil || got == nil || got.Repeat != n {
		t.Errorf("ReadResult of the last run: %+v, %v", got, err)
	}
}
