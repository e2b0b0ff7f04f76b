package supervisor

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
)

// What an executed criterion's container printed lands in the run directory's verifier/,
// redacted, named in the criterion's output_logs; an earlier grade's files are replaced and
// criteria without output get none.
func TestCriterionOutputsAreSavedRedacted(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, record.VerifierDir, "criterion-9.stdout.log")
	os.MkdirAll(filepath.Dir(stale), 0o700)
	os.WriteFile(stale, []byte("an earlier grade"), 0o600)
	g := &grader.Result{Criteria: []grader.CriterionResult{
		{Type: "file_exists"},
		{Type: "pytest", Output: &grader.Output{Stdout: []byte("FAILED test_x - key sk-SECRET-123 leaked\n"), Stderr: []byte("warning\n")}},
	}}
	saveCriterionOutputs(dir, g, Redactor([]string{"sk-SECRET-123"}))
	if g.Criteria[0].OutputLogs != nil || g.Criteria[1].Output != nil {
		t.Errorf("output_logs %v on a criterion without output, or the output kept", g.Criteria[0].OutputLogs)
	}
	want := []string{"verifier/criterion-2.stdout.log", "verifier/criterion-2.stderr.log"}
	if !reflect.DeepEqual(g.Criteria[1].OutputLogs, want) {
		t.Fatalf("output_logs %v, want %v", g.Criteria[1].OutputLogs, want)
	}
	out, err := os.ReadFile(filepath.Join(dir, want[0]))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "sk-SECRET-123") || !strings.Contains(string(out), "FAILED test_x") {
		t.Errorf("saved stdout %q: not redacted or not whole", out)
	}
	if errOut, _ := os.ReadFile(filepath.Join(dir, want[1])); string(errOut) != "warning\n" {
		t.Errorf("saved stderr %q", errOut)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("an earlier grade's output is still there: %v", err)
	}
}
