package verifier

import (
	"strings"
	"testing"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/task"
)

func TestPytestInAnImageWithoutPytestSaysWhatToAdd(t *testing.T) {
	c := &task.Criterion{Type: task.Pytest}
	for _, r := range []*Run{
		{CommandRun: grader.CommandRun{ExitCode: 1, Stderr: []byte("ModuleNotFoundError: No module named 'pytest'\n")}},
		{CommandRun: grader.CommandRun{ExitCode: 127, Stderr: []byte("exec: python3: not found\n")}},
	} {
		score, details, err := scoreParts(scoreRun(c, r))
		if err != nil || score != 0 || !strings.Contains(details, "packages: [python3-pytest]") {
			t.Errorf("exit %d: score %v, details %q, err %v", r.ExitCode, score, details, err)
		}
	}
}

func TestPytestScoreComesFromTheReportCheckedAgainstTheExitStatus(t *testing.T) {
	c := &task.Criterion{Type: task.Pytest}
	report := []byte(`<testsuites><testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b"><failure/></testcase></testsuite></testsuites>`)
	if score, details, _ := scoreParts(scoreRun(c, &Run{CommandRun: grader.CommandRun{ExitCode: 1}, Report: report})); score != 0.5 {
		t.Errorf("score %v (%s), want 0.5", score, details)
	}
	// exit 0 beside a report with a failure: something rewrote one of them
	if score, details, _ := scoreParts(scoreRun(c, &Run{CommandRun: grader.CommandRun{ExitCode: 0}, Report: report})); score != 0 || !strings.Contains(details, "inconsistent") {
		t.Errorf("score %v (%s), want 0 as inconsistent", score, details)
	}
	// a limit that stopped the run scores 0 whatever the report says
	if score, _, _ := scoreParts(scoreRun(c, &Run{CommandRun: grader.CommandRun{Limit: "timeout"}, Report: report})); score != 0 {
		t.Errorf("score %v after a limit, want 0", score)
	}
}
