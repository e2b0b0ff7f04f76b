package grader

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// PytestOutcome is one test case's result as ceval reads it from pytest's JUnit XML.
type PytestOutcome struct {
	Name    string // classname::name, sanitized
	Outcome string // passed | failed | error | skipped
}

// PytestCounts are the totals of a pytest run.
type PytestCounts struct {
	Collected, Passed, Failed, Errors, Skipped int
	Outcomes                                   []PytestOutcome
}

// Most test cases a JUnit report may hold, and most names the details list.
const (
	maxJUnitCases   = 100_000
	maxListedTests  = 20
	maxTestNameRune = 160
)

// ParseJUnit reads the test cases of a JUnit XML report. The report was written inside the
// sandbox, so it is hostile input: only the case elements and their outcome children are
// read, names are sanitized, and a malformed report is an error.
func ParseJUnit(report []byte) (PytestCounts, error) {
	var c PytestCounts
	d := xml.NewDecoder(bytes.NewReader(report))
	d.Strict = true
	var cur *PytestOutcome
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return c, fmt.Errorf("pytest's JUnit report: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth > 64 {
				return c, fmt.Errorf("pytest's JUnit report nests more than 64 elements")
			}
			switch {
			case t.Name.Local == "testcase" && cur == nil:
				if len(c.Outcomes) >= maxJUnitCases {
					return c, fmt.Errorf("pytest's JUnit report holds more than %d test cases", maxJUnitCases)
				}
				var class, name string
				for _, a := range t.Attr {
					switch a.Name.Local {
					case "classname":
						class = a.Value
					case "name":
						name = a.Value
					}
				}
				c.Outcomes = append(c.Outcomes, PytestOutcome{Name: sanitizeTestName(class + "::" + name), Outcome: "passed"})
				cur = &c.Outcomes[len(c.Outcomes)-1]
			case cur != nil && (t.Name.Local == "failure" || t.Name.Local == "error" || t.Name.Local == "skipped"):
				// failure or error beats skipped; a teardown error after a failure stays failed
				switch o := map[string]string{"failure": "failed", "error": "error", "skipped": "skipped"}[t.Name.Local]; {
				case cur.Outcome == "passed", cur.Outcome == "skipped" && o != "skipped":
					cur.Outcome = o
				}
			}
		case xml.EndElement:
			depth--
			if t.Name.Local == "testcase" {
				cur = nil
			}
		}
	}
	for _, o := range c.Outcomes {
		switch o.Outcome {
		case "passed":
			c.Passed++
		case "failed":
			c.Failed++
		case "error":
			c.Errors++
		case "skipped":
			c.Skipped++
		}
	}
	c.Collected = len(c.Outcomes)
	return c, nil
}

// ScorePytest scores a pytest run from its exit status and its JUnit report: passed /
// collected, or with allOrNothing 1 only when every collected test passed. A report that
// contradicts the exit status (0 with failures, 1 with none) scores 0: something in the
// run rewrote one of them.
func ScorePytest(exitCode int, report []byte, allOrNothing bool) (float64, string) {
	switch exitCode {
	case 0, 1:
	case 2:
		return 0, "pytest was interrupted (exit 2)"
	case 3:
		return 0, "pytest hit an internal error (exit 3)"
	case 4:
		return 0, "pytest was called wrongly (exit 4): check the criterion's args"
	case 5:
		return 0, "pytest collected no tests (exit 5)"
	default:
		return 0, fmt.Sprintf("pytest did not finish (exit %d)", exitCode)
	}
	c, err := ParseJUnit(report)
	if err != nil {
		return 0, err.Error()
	}
	bad := c.Failed + c.Errors
	switch {
	case c.Collected == 0:
		return 0, "pytest's report lists no tests"
	case exitCode == 0 && bad > 0, exitCode == 1 && bad == 0:
		return 0, fmt.Sprintf("pytest exited %d but its report lists %d failed and %d errors: inconsistent, not trusted", exitCode, c.Failed, c.Errors)
	}
	score := float64(c.Passed) / float64(c.Collected)
	if allOrNothing && c.Passed != c.Collected {
		score = 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pytest: %d/%d passed (%d failed, %d errors, %d skipped)", c.Passed, c.Collected, c.Failed, c.Errors, c.Skipped)
	if allOrNothing {
		b.WriteString("; all_or_nothing")
	}
	listed := 0
	for _, o := range c.Outcomes {
		if o.Outcome == "passed" {
			continue
		}
		if listed == maxListedTests {
			fmt.Fprintf(&b, "; and %d more", c.Collected-c.Passed-listed)
			break
		}
		fmt.Fprintf(&b, "; %s %s", o.Outcome, o.Name)
		listed++
	}
	return score, b.String()
}

// sanitizeTestName keeps a test name printable, on one line and short.
func sanitizeTestName(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == maxTestNameRune {
			b.WriteString("…")
			break
		}
		if !unicode.IsPrint(r) {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
