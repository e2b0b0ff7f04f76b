package grader

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// outputExecutor scores its wasm criterion's first arg and returns args[1] as stdout.
type outputExecutor struct{}

func (outputExecutor) Execute(_ context.Context, c *task.Criterion, _ *snapshot.Snapshot, _ *task.Dir) (Scored, error) {
	sc := Scored{Details: "exit code 1, want 0", Output: &Output{Stdout: []byte(c.Spec.(*task.WASMSpec).Args[1]), Stderr: []byte("E   assert 1 == 2\n"), StderrCut: 5}}
	if c.Spec.(*task.WASMSpec).Args[0] == "pass" {
		sc.Score = 1
	}
	return sc, nil
}

// An executed criterion that did not pass says how its output ended (the verifier's pytest
// report, say), capped, after its own words; one that passed does not; the output itself
// is handed on for the run directory and never put in result.json.
func TestExecutedCriterionDetailsEndWithItsOutputsTail(t *testing.T) {
	long := strings.Repeat("x", 5000) + "\nFAILED tests/test_outputs.py::test_answer - assert 41 == 42\n"
	tk := newTask(
		crit(task.Criterion{Type: task.WASMCheck, Spec: &task.WASMSpec{Args: []string{"fail", long}}}),
		crit(task.Criterion{Type: task.WASMCheck, Spec: &task.WASMSpec{Args: []string{"pass", "all good"}}}),
		crit(task.Criterion{Type: task.WASMCheck, Spec: &task.WASMSpec{Args: []string{"fail", ""}}}),
	)
	r := Grade(context.Background(), tk, snap(t, tree{}), Options{Executor: outputExecutor{}})
	failedCr, passed, quiet := r.Criteria[0], r.Criteria[1], r.Criteria[2]
	for _, want := range []string{"exit code 1, want 0", "stdout ends …", "test_answer - assert 41 == 42", `stderr ends (5 bytes past the cap dropped) "E   assert 1 == 2"`} {
		if !strings.Contains(failedCr.Details, want) {
			t.Errorf("details lack %q: %s", want, failedCr.Details)
		}
	}
	if strings.Contains(failedCr.Details, strings.Repeat("x", outputTailBytes+1)) || len(failedCr.Details) > maxDetailBytes+64 {
		t.Errorf("details quote more than the tail (%d bytes)", len(failedCr.Details))
	}
	if passed.Details != "exit code 1, want 0" {
		t.Errorf("a passing criterion's details gained its output: %q", passed.Details)
	}
	if !strings.HasSuffix(quiet.Details, "; stderr ends (5 bytes past the cap dropped) \"E   assert 1 == 2\"") {
		t.Errorf("an empty stdout is not left out: %q", quiet.Details)
	}
	for i, cr := range r.Criteria {
		if cr.Output == nil {
			t.Errorf("criterion %d: the output is not handed on", i)
		}
	}
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), "FAILED tests/test_outputs.py::test_answer - assert 41 == 42\\n\"") || strings.Contains(string(b), "all good") {
		t.Error("the output itself is in the result's JSON")
	}
}

// Long details leave room for the tail: the tail is never the part cut.
func TestOutputTailSurvivesLongDetails(t *testing.T) {
	v := scored(0, strings.Repeat("d", 3*maxDetailBytes))
	v.output = &Output{Stdout: []byte("the end of pytest's report")}
	cr := finish(&task.Criterion{Weight: 1, PassThreshold: 1}, v)
	if !strings.HasSuffix(cr.Details, `stdout ends "the end of pytest's report"`) || len(cr.Details) > maxDetailBytes+32 {
		t.Errorf("details (%d bytes) end %q", len(cr.Details), cr.Details[max(0, len(cr.Details)-80):])
	}
}
