package report

import (
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"ceval.dev/ceval/record"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnit renders the experiment as JUnit XML: one testsuite per variant, one testcase per
// run; the agent's failures (FAILURE, TIMEOUT, a model gateway budget exceeded:
// record.AgentFailed) are failures naming the limit that ended the agent, ERROR and
// NOT_GRADED errors, runs without a result skipped. Agent-written text is stripped of what XML cannot carry.
func JUnit(e *Experiment) ([]byte, error) {
	root := junitSuites{Name: e.Plan.ExperimentID}
	for _, v := range e.Plan.Variants {
		suite := junitSuite{Name: v}
		for _, r := range e.runs(v, "") {
			c := junitCase{Name: fmt.Sprintf("%s #%d", r.TaskID, r.Repeat), Classname: e.Plan.ExperimentID + "." + v, Time: "0"}
			suite.Tests++
			res := r.Result
			switch {
			case res == nil:
				c.Skipped = &junitMessage{Message: "not run", Type: StatusNotRun}
				suite.Skipped++
			case res.Status == record.StatusSuccess:
			case record.AgentFailed(res.Status):
				msg := fmt.Sprintf("%s score %.2f", res.Status, res.Score)
				if l := res.StatusLimit(); l != "" {
					msg += ": " + l
				}
				c.Failure = &junitMessage{Message: xmlSafe(msg), Type: res.Status, Text: criteriaText(res)}
				suite.Failures++
			default:
				c.Error = &junitMessage{Message: xmlSafe(res.Status + " " + res.Error), Type: res.Status, Text: criteriaText(res)}
				suite.Errors++
			}
			if res != nil {
				c.Time = fmt.Sprintf("%.3f", res.Timings.Total)
				c.SystemOut = filepath.Join(r.Dir, record.ResultFile)
			}
			suite.Cases = append(suite.Cases, c)
		}
		root.Tests += suite.Tests
		root.Failures += suite.Failures
		root.Errors += suite.Errors
		root.Suites = append(root.Suites, suite)
	}
	data, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(data, '\n')...), nil
}

func criteriaText(res *record.Result) string {
	var b strings.Builder
	for _, c := range res.Criteria {
		fmt.Fprintf(&b, "%s %s %.2f: %s\n", c.Status, c.Type, c.Score, c.Details)
	}
	for _, l := range res.LimitsHit {
		fmt.Fprintf(&b, "limit: %s\n", l)
	}
	return xmlSafe(b.String())
}

// xmlSafe drops what XML 1.0 cannot hold (control characters, invalid UTF-8).
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == utf8.RuneError:
			return -1
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20 || r == 0x7f || r >= 0xfffe && r <= 0xffff:
			return -1
		}
		return r
	}, s)
}
