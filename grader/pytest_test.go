package grader

import (
	"strings"
	"testing"
)

const junit20 = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4">` +
	`<testcase classname="test_a" name="test_ok" time="0.01" />` +
	`<testcase classname="test_a" name="test_bad"><failure message="assert 1 == 2">trace</failure></testcase>` +
	`<testcase classname="test_a" name="test_skip"><skipped message="later"/></testcase>` +
	`<testcase classname="test_a" name="test_ok2" />` +
	`</testsuite></testsuites>`

func TestScorePytestIsPassedOverCollected(t *testing.T) {
	score, details := ScorePytest(1, []byte(junit20), false)
	if score != 0.5 || !strings.Contains(details, "2/4 passed (1 failed, 0 errors, 1 skipped)") || !strings.Contains(details, "failed test_a::test_bad") {
		t.Errorf("score %v details %q", score, details)
	}
	if score, _ := ScorePytest(1, []byte(junit20), true); score != 0 {
		t.Errorf("all_or_nothing score %v", score)
	}
}

func TestScorePytestRefusesAReportThatContradictsTheExitStatus(t *testing.T) {
	// A run whose report was rewritten to show failures as passes, or the reverse.
	allPass := `<testsuites><testsuite><testcase classname="a" name="b"/></testsuite></testsuites>`
	if score, d := ScorePytest(1, []byte(allPass), false); score != 0 || !strings.Contains(d, "inconsistent") {
		t.Errorf("exit 1 with all passing: %v %q", score, d)
	}
	if score, d := ScorePytest(0, []byte(junit20), false); score != 0 || !strings.Contains(d, "inconsistent") {
		t.Errorf("exit 0 with a failure: %v %q", score, d)
	}
}

func TestScorePytestHostileReports(t *testing.T) {
	for name, tc := range map[string]struct {
		exit   int
		report string
		want   string
	}{
		"malformed":         {0, `<testsuites><testcase name="x">`, "JUnit report"},
		"no tests":          {0, `<testsuites/>`, "lists no tests"},
		"internal error":    {3, junit20, "internal error"},
		"killed":            {137, junit20, "did not finish"},
		"collected nothing": {5, ``, "no tests"},
		"deep nesting":      {0, strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100), "nests"},
	} {
		t.Run(name, func(t *testing.T) {
			score, d := ScorePytest(tc.exit, []byte(tc.report), false)
			if score != 0 || !strings.Contains(d, tc.want) {
				t.Errorf("score %v details %q, want %q", score, d, tc.want)
			}
		})
	}
	name := "&#x9;&#xA;\u202e" + strings.Repeat("x", 500)
	c, err := ParseJUnit([]byte(`<testsuites><testcase classname="a" name="` + name + `"><error/></testcase></testsuites>`))
	if err != nil || len([]rune(c.Outcomes[0].Name)) > maxTestNameRune+1 || strings.ContainsAny(c.Outcomes[0].Name, "\t\n\u202e") || c.Errors != 1 {
		t.Errorf("name not sanitized or outcome wrong: %+v %v", c, err)
	}
}
