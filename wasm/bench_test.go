package wasm

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// benchScript is one typical run_command: a search piped through sort, over a small tree.
// Without the toolbox the stand-in runs its nearest equivalent.
func benchScript() (tb *taskModule, script string) {
	if HasToolbox() {
		return defaultToolbox(), "grep -c func a.go b.go | sort"
	}
	return standin, "cat a.go b.go"
}

func benchWorkspace(b *testing.B) *snapshot.Snapshot {
	return workspace(b, map[string]string{
		"a.go": "package a\n\nfunc A() {}\n\nfunc B() {}\n",
		"b.go": "package a\n\nfunc C() {}\n",
	}, nil)
}

// BenchmarkRunCommand measures one run_command criterion three ways in the same run and
// reports them as ratios: warm (the worker and its compiled module reused), cold (a new
// worker process loading the module from the on-disk cache; ceval's first criterion of a
// grading), the first criterion of an executor whose toolbox preload is done, and the same
// script under the host's `sh -c` in the snapshot directory. Besides the means it reports
// the medians of warm and native (warm-p50-ms, native-p50-ms, warm/native-p50), which
// `make bench` compares (scripts/bench-grade.sh). Targets: warm within 3x of native (p50),
// cold under 250 ms.
func BenchmarkRunCommand(b *testing.B) {
	tb, script := benchScript()
	s := benchWorkspace(b)
	c := &task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: script, Execution: task.Execution{Timeout: 30 * time.Second}}}
	cache := filepath.Join(b.TempDir(), "cache")
	ctx := context.Background()

	execute := func(e *Executor) {
		score, details, err := scoreParts(e.Execute(ctx, c, s, nil))
		if err != nil || score != 1 {
			b.Fatalf("score %v, details %q, err %v", score, details, err)
		}
	}
	warm := newExecutor(b, tb, Options{CacheDir: cache}) // also fills the disk cache
	execute(warm)

	var tWarm, tCold, tFirst, tNative time.Duration
	var warms, natives []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = s.Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("sh -c: %v: %s", err, out)
		}
		natives = append(natives, time.Since(start))
		tNative += natives[len(natives)-1]

		start = time.Now()
		execute(warm)
		warms = append(warms, time.Since(start))
		tWarm += warms[len(warms)-1]

		start = time.Now()
		cold, err := NewExecutor(Options{CacheDir: cache, noPreload: tb != defaultToolbox()})
		if err != nil {
			b.Fatal(err)
		}
		cold.toolbox = tb
		execute(cold)
		tCold += time.Since(start)
		cold.Close()

		// In `ceval run` the executor starts with the run, so the toolbox load overlaps the
		// agent: what the first criterion then waits for.
		pre, err := NewExecutor(Options{CacheDir: cache, noPreload: tb != defaultToolbox()})
		if err != nil {
			b.Fatal(err)
		}
		pre.toolbox = tb
		if tb != defaultToolbox() {
			pre.lite = nil
		}
		pre.mu.Lock() // wait for the preload
		pre.mu.Unlock()
		start = time.Now()
		execute(pre)
		tFirst += time.Since(start)
		pre.Close()
	}
	b.StopTimer()
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / n / float64(time.Millisecond) }
	b.ReportMetric(ms(tNative), "native-ms")
	b.ReportMetric(ms(tWarm), "warm-ms")
	b.ReportMetric(ms(tCold), "cold-ms")
	b.ReportMetric(ms(tFirst), "first-after-preload-ms")
	b.ReportMetric(float64(tWarm)/float64(tNative), "warm/native")
	b.ReportMetric(float64(tCold)/float64(tNative), "cold/native")
	p50 := func(ds []time.Duration) time.Duration { slices.Sort(ds); return ds[len(ds)/2] }
	warmP50, nativeP50 := p50(warms), p50(natives)
	b.ReportMetric(float64(warmP50)/float64(time.Millisecond), "warm-p50-ms")
	b.ReportMetric(float64(nativeP50)/float64(time.Millisecond), "native-p50-ms")
	b.ReportMetric(float64(warmP50)/float64(nativeP50), "warm/native-p50")
	b.ReportMetric(0, "ns/op") // the per-way metrics above are the result
}

// BenchmarkCloseOnContextDone prices wazero's WithCloseOnContextDone, which ceval keeps on
// so that a timeout stops a spinning guest without killing the worker: the same CPU-bound
// guest (sha256 rounds) compiled with the context checks and without.
func BenchmarkCloseOnContextDone(b *testing.B) {
	s := benchWorkspace(b)
	c := &task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "hash 300000", Execution: task.Execution{Timeout: time.Minute}}}
	cache := filepath.Join(b.TempDir(), "cache")
	var times [2]time.Duration
	execs := [2]*Executor{
		newExecutor(b, standin, Options{CacheDir: cache, noPreload: true}),
		newExecutor(b, standin, Options{CacheDir: cache, noPreload: true, noCloseOnDone: true}),
	}
	for _, e := range execs {
		if score, details, err := scoreParts(e.Execute(context.Background(), c, s, nil)); err != nil || score != 1 {
			b.Fatalf("score %v, details %q, err %v", score, details, err)
		}
	}
	b.ResetTimer()
	for range b.N {
		for i, e := range execs {
			start := time.Now()
			if _, _, err := scoreParts(e.Execute(context.Background(), c, s, nil)); err != nil {
				b.Fatal(err)
			}
			times[i] += time.Since(start)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(times[0])/n/float64(time.Millisecond), "on-ms")
	b.ReportMetric(float64(times[1])/n/float64(time.Millisecond), "off-ms")
	b.ReportMetric(float64(times[0])/float64(times[1]), "on/off")
	b.ReportMetric(0, "ns/op")
}
