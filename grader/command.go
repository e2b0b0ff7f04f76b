package grader

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"ceval.dev/ceval/task"
)

// CommandRun is what a run_command left behind in an executor that runs real processes
// (a verifier container): everything here came from code the agent wrote, so it is only
// ever scored, never trusted.
type CommandRun struct {
	ExitCode int
	Stdout   []byte // capped by the executor
	Stderr   []byte // capped by the executor
	// Limit names the limit that stopped the command ("" when it exited by itself), in
	// words for the details: "timeout: still running after 30s; stopped".
	Limit string
	// Notes are added to the details (a cap reached on the way, such as the output cap).
	Notes []string
}

// excerptBytes is how much of a stream the details of a command quote.
const excerptBytes = 300

// ScoreCommand scores a run_command the way the WASM sandbox does: a limit that stopped it
// scores 0, so does an exit code other than expected_exit_code (default 0); then
// expected_stdout (exact, ignoring trailing newlines; contains; regex) or score_from_stdout
// (the first line of stdout, a number in [0, 1]) decides; with neither, the exit code alone
// does. Only an expected_stdout regex that does not compile is an error: the task's fault.
func ScoreCommand(c *task.Criterion, r CommandRun) (float64, string, error) {
	fail := func(format string, args ...any) (float64, string, error) {
		d := fmt.Sprintf(format, args...)
		if len(r.Stderr) > 0 {
			d += "; stderr " + quoteTail(r.Stderr)
		}
		if len(r.Notes) > 0 {
			d += "; " + strings.Join(r.Notes, "; ")
		}
		return 0, d, nil
	}
	if r.Limit != "" {
		return fail("%s", r.Limit)
	}
	if r.ExitCode != c.ExpectedExitCode {
		return fail("exit code %d, want %d; stdout %s", r.ExitCode, c.ExpectedExitCode, quote(string(r.Stdout), excerptBytes))
	}
	note := ""
	if len(r.Notes) > 0 {
		note = "; " + strings.Join(r.Notes, "; ")
	}
	stdout := string(r.Stdout)
	switch {
	case c.ExpectedStdout != nil:
		want := *c.ExpectedStdout
		var ok bool
		switch c.StdoutMatch {
		case "", "exact":
			ok = strings.TrimRight(stdout, "\n") == strings.TrimRight(want, "\n")
		case "contains":
			ok = strings.Contains(stdout, want)
		case "regex":
			re, err := regexp.Compile(want)
			if err != nil {
				return 0, "", fmt.Errorf("expected_stdout regex: %w", err)
			}
			ok = re.MatchString(stdout)
		default:
			return 0, "", fmt.Errorf("unknown stdout_match %q", c.StdoutMatch)
		}
		match := c.StdoutMatch
		if match == "" {
			match = "exact"
		}
		if !ok {
			return fail("stdout %s does not match (%s) %s", quote(stdout, excerptBytes), match, quote(want, excerptBytes))
		}
		return 1, fmt.Sprintf("exit code %d; stdout matches (%s)%s", r.ExitCode, match, note), nil
	case c.ScoreFromStdout:
		line, _, _ := strings.Cut(stdout, "\n")
		v, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
			return fail("score_from_stdout: the first line of stdout is %s, not a number from 0 to 1", quote(line, excerptBytes))
		}
		return v, fmt.Sprintf("exit code %d; score %s from stdout%s", r.ExitCode, strconv.FormatFloat(v, 'g', -1, 64), note), nil
	}
	return 1, fmt.Sprintf("exit code %d%s", r.ExitCode, note), nil
}

func quoteTail(b []byte) string {
	s := strings.TrimRight(string(b), "\n")
	if len(s) > excerptBytes {
		return fmt.Sprintf("…%q", s[len(s)-excerptBytes:])
	}
	return fmt.Sprintf("%q", s)
}
