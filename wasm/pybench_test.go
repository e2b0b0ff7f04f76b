package wasm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"ceval.dev/ceval/task"
)

// BenchmarkPython measures `python3 -c 'import json; print(1)'` and `python3 -c pass` as a
// run_command three ways in the same run, interleaved: warm (worker and compiled CPython
// reused), cold (a new Executor and worker: CPython read from ceval's cache and loaded from
// the compilation cache) and Debian's python3 on the host (/usr/bin/python3, never a shim
// such as pyenv's, whose shell script cost 100 ms). It reports medians beside means: this
// machine's speed varies by up to half from one second to the next (native python3 too), and
// a mean of few iterations followed the slow seconds. Target: warm under 150 ms.
func BenchmarkPython(b *testing.B) {
	for _, tc := range []struct{ name, code, stdout string }{
		{"import-json", "import json; print(1)", "1"},
		{"pass", "pass", ""},
	} {
		b.Run(tc.name, func(b *testing.B) { benchPython(b, tc.code, tc.stdout) })
	}
}

// nativePython is the host interpreter the benchmarks compare with.
const nativePython = "/usr/bin/python3"

// benchPython measures `python3 -c CODE` (printing stdout) warm, cold and natively.
func benchPython(b *testing.B, code, stdout string) {
	src := testPython(b)
	script := "python3 -c '" + code + "'"
	s := benchWorkspace(b)
	c := &task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: script, StdoutScoring: task.StdoutScoring{ExpectedStdout: ptr(stdout), StdoutMatch: "exact"}, Execution: task.Execution{Timeout: 60 * time.Second}}}
	cache := filepath.Join(b.TempDir(), "cache")
	ctx := context.Background()
	execute := func(e *Executor) {
		if score, details, err := scoreParts(e.Execute(ctx, c, s, nil)); err != nil || score != 1 {
			b.Fatalf("score %v, details %q, err %v", score, details, err)
		}
	}
	warm := newExecutor(b, defaultToolbox(), Options{CacheDir: cache, Python: src})
	execute(warm) // fills the compilation cache
	var tWarm, tCold, tNative durations
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if out, err := exec.Command(nativePython, "-c", code).CombinedOutput(); err != nil {
			b.Fatalf("native python3: %v: %s", err, out)
		}
		tNative.add(start)

		start = time.Now()
		execute(warm)
		tWarm.add(start)

		start = time.Now()
		cold, err := NewExecutor(Options{CacheDir: cache, Python: src})
		if err != nil {
			b.Fatal(err)
		}
		execute(cold)
		tCold.add(start)
		cold.Close()
	}
	b.StopTimer()
	b.ReportMetric(tNative.median(), "native-p50-ms")
	b.ReportMetric(tWarm.median(), "warm-p50-ms")
	b.ReportMetric(tCold.median(), "cold-p50-ms")
	b.ReportMetric(tWarm.mean(), "warm-mean-ms")
	b.ReportMetric(tWarm.median()/tNative.median(), "warm/native")
	b.ReportMetric(0, "ns/op")
}

// durations are the times of a benchmark's iterations.
type durations []time.Duration

func (d *durations) add(start time.Time) { *d = append(*d, time.Since(start)) }

// median in milliseconds.
func (d durations) median() float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return float64(m) / float64(time.Millisecond)
}

// mean in milliseconds.
func (d durations) mean() float64 {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return float64(sum) / float64(max(len(d), 1)) / float64(time.Millisecond)
}

// BenchmarkPytest measures a pytest criterion over a 20-test file (warm: worker, CPython
// and the compiled pytest packages reused) beside Debian's pytest run natively on the
// same file and solution. Target: within 3x of native (issue 39; scripts/bench-pytest.sh
// makes it a row of make bench's table).
func BenchmarkPytest(b *testing.B) {
	dir, c := pytestTask(b)
	s := workspace(b, map[string]string{"solution.py": goodSolution}, nil)
	e := newExecutor(b, defaultToolbox(), Options{Python: testPython(b)})
	ctx := context.Background()
	execute := func() {
		if score, details, err := scoreParts(e.Execute(ctx, c, s, nil)); err != nil || score != 1 {
			b.Fatalf("score %v, details %q, err %v", score, details, err)
		}
	}
	execute() // compiles CPython (from the cache) and pytest's packages
	var tWarm, tNative durations
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cmd := exec.Command(nativePython, "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider", filepath.Join(dir, "tests"))
		cmd.Dir = s.Dir
		cmd.Env = append(os.Environ(), "PYTHONPATH="+s.Dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("native pytest: %v: %s", err, out)
		}
		tNative.add(start)

		start = time.Now()
		execute()
		tWarm.add(start)
	}
	b.StopTimer()
	b.ReportMetric(tNative.median(), "native-p50-ms")
	b.ReportMetric(tWarm.median(), "warm-p50-ms")
	b.ReportMetric(tWarm.median()/tNative.median(), "warm/native")
	b.ReportMetric(0, "ns/op")
}

func ptr[T any](v T) *T { return &v }
