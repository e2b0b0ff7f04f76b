package wasm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"ceval.dev/ceval/task"
)

// BenchmarkPython measures `python3 -c 'import json; print(1)'` and `python3 -c pass` as a
// run_command three ways in the same run: warm (worker and compiled CPython reused), cold (a new Executor and
// worker: CPython read from ceval's cache and loaded from the compilation cache) and the
// host's native python3. Target: warm under 150 ms.
func BenchmarkPython(b *testing.B) {
	for _, tc := range []struct{ name, code, stdout string }{
		{"import-json", "import json; print(1)", "1"},
		{"pass", "pass", ""},
	} {
		b.Run(tc.name, func(b *testing.B) { benchPython(b, tc.code, tc.stdout) })
	}
}

// benchPython measures `python3 -c CODE` (printing stdout) warm, cold and natively.
func benchPython(b *testing.B, code, stdout string) {
	src := testPython(b)
	script := "python3 -c '" + code + "'"
	s := benchWorkspace(b)
	c := &task.Criterion{Type: task.RunCommand, Command: script, ExpectedStdout: ptr(stdout), StdoutMatch: "exact", Timeout: 60 * time.Second}
	cache := filepath.Join(b.TempDir(), "cache")
	ctx := context.Background()
	execute := func(e *Executor) {
		if score, details, err := e.Execute(ctx, c, s, nil); err != nil || score != 1 {
			b.Fatalf("score %v, details %q, err %v", score, details, err)
		}
	}
	warm := newExecutor(b, defaultToolbox(), Options{CacheDir: cache, Python: src})
	execute(warm) // fills the compilation cache
	var tWarm, tCold, tNative time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if out, err := exec.Command("python3", "-c", code).CombinedOutput(); err != nil {
			b.Fatalf("native python3: %v: %s", err, out)
		}
		tNative += time.Since(start)

		start = time.Now()
		execute(warm)
		tWarm += time.Since(start)

		start = time.Now()
		cold, err := NewExecutor(Options{CacheDir: cache, Python: src})
		if err != nil {
			b.Fatal(err)
		}
		execute(cold)
		tCold += time.Since(start)
		cold.Close()
	}
	b.StopTimer()
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / n / float64(time.Millisecond) }
	b.ReportMetric(ms(tNative), "native-ms")
	b.ReportMetric(ms(tWarm), "warm-ms")
	b.ReportMetric(ms(tCold), "cold-ms")
	b.ReportMetric(float64(tWarm)/float64(tNative), "warm/native")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPytest measures a pytest criterion over a 20-test file (warm: worker, CPython
// and the compiled pytest packages reused) beside Debian's pytest run natively on the
// same file and solution. Target: within 5x of native.
func BenchmarkPytest(b *testing.B) {
	dir, c := pytestTask(b)
	s := workspace(b, map[string]string{"solution.py": goodSolution}, nil)
	e := newExecutor(b, defaultToolbox(), Options{Python: testPython(b)})
	ctx := context.Background()
	execute := func() {
		if score, details, err := e.Execute(ctx, c, s, nil); err != nil || score != 1 {
			b.Fatalf("score %v, details %q, err %v", score, details, err)
		}
	}
	execute() // compiles CPython (from the cache) and pytest's packages
	var tWarm, tNative time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cmd := exec.Command("/usr/bin/python3", "-B", "-m", "pytest", "-q", "-p", "no:cacheprovider", filepath.Join(dir, "tests"))
		cmd.Dir = s.Dir
		cmd.Env = append(os.Environ(), "PYTHONPATH="+s.Dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("native pytest: %v: %s", err, out)
		}
		tNative += time.Since(start)

		start = time.Now()
		execute()
		tWarm += time.Since(start)
	}
	b.StopTimer()
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / n / float64(time.Millisecond) }
	b.ReportMetric(ms(tNative), "native-ms")
	b.ReportMetric(ms(tWarm), "warm-ms")
	b.ReportMetric(float64(tWarm)/float64(tNative), "warm/native")
	b.ReportMetric(0, "ns/op")
}

func ptr[T any](v T) *T { return &v }
