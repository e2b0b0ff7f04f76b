package report

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"ceval.dev/ceval/record"
)

// benchExperiment writes a 1,000-run experiment (5 variants x 20 tasks x 10 repeats), each
// run with the atif fixture's model transcript, the way a real experiment's runs look to
// the report.
func benchExperiment(b testing.TB) string {
	variants := []string{"v1", "v2", "v3", "v4", "v5"}
	var tasks []string
	for i := range 20 {
		tasks = append(tasks, fmt.Sprintf("task-%02d", i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	statuses := map[string]map[string][]string{}
	for vi, v := range variants {
		statuses[v] = map[string][]string{}
		for _, id := range tasks {
			for range 10 {
				st := "FAILURE"
				if rng.Float64() < 0.2+0.15*float64(vi) {
					st = "SUCCESS"
				}
				statuses[v][id] = append(statuses[v][id], st)
			}
		}
	}
	dir := writeExperiment(b, statuses, variants, tasks, 10)
	calls, err := os.ReadFile(filepath.Join("..", "atif", "testdata", "anthropic-run", "model_calls.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	e, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range e.Runs {
		os.WriteFile(filepath.Join(r.Dir, record.ModelCallsFile), calls, 0o600)
	}
	return dir
}

// BenchmarkReportWrite1000Runs: `ceval report` of a 1,000-run experiment (summary, JUnit,
// the experiment's page and 1,000 run pages). With CEVAL_BENCH_REPORT_KEEP=FILE the
// experiment's directory is written to FILE for scripts/bench-report.sh's browser load.
func BenchmarkReportWrite1000Runs(b *testing.B) {
	dir := benchExperiment(b)
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := Write(dir); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st, err := os.Stat(filepath.Join(dir, HTMLFile))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Size()), "page-bytes")
	if keep := os.Getenv("CEVAL_BENCH_REPORT_KEEP"); keep != "" {
		dst, err := os.MkdirTemp("", "ceval-bench-report-")
		if err != nil {
			b.Fatal(err)
		}
		if err := os.CopyFS(dst, os.DirFS(filepath.Dir(dir))); err != nil {
			b.Fatal(err)
		}
		os.WriteFile(keep, []byte(filepath.Join(dst, filepath.Base(dir))), 0o600)
	}
}
