package wasm

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"ceval.dev/ceval/task"
)

// excerpt is how much of a stream the details quote.
const excerpt = 300

// score turns a run into the criterion's score and details. A limit hit or a trap scores
// 0; so does an exit code other than expected_exit_code (default 0). Then expected_stdout
// (exact, ignoring trailing newlines; contains; regex) or score_from_stdout (the first line
// of stdout, a number in [0, 1]) decides; with neither, the exit code alone does. Only an
// expected_stdout regex that does not compile is an error: the task's fault.
func score(c *task.Criterion, r *runReply, o Options, timeout time.Duration) (float64, string, error) {
	var notes []string
	if r.TmpFull {
		notes = append(notes, fmt.Sprintf("/tmp reached its %s cap", human(o.MaxTmpBytes)))
	}
	fail := func(format string, args ...any) (float64, string, error) {
		d := fmt.Sprintf(format, args...)
		if len(r.Stderr) > 0 {
			d += "; stderr " + tail(r.Stderr)
		}
		if len(notes) > 0 {
			d += "; " + strings.Join(notes, "; ")
		}
		return 0, d, nil
	}
	if r.Omitted != "" {
		// Whatever the guest concluded, it looked at content ceval did not capture: a
		// negative check ("! grep -rq TODO .", "test ! -e x") would pass on what is missing.
		return fail("omitted: the criterion reached workspace path %s, which the snapshot left out; it cannot be graded on content ceval did not see (exit code %d)", r.Omitted, r.ExitCode)
	}
	switch r.Limit {
	case limitTimeout:
		return fail("timeout: still running after the %v limit; stopped", timeout)
	case limitMemory:
		return fail("memory limit: the guest needed more than the %s limit; stopped", human(o.MemoryLimit))
	case limitStdout:
		return fail("stdout limit: more than %s written (%d bytes over); stopped", human(o.MaxOutput), r.StdoutCut)
	case limitStderr:
		return fail("stderr limit: more than %s written (%d bytes over); stopped", human(o.MaxOutput), r.StderrCut)
	}
	if r.Trap != "" {
		return fail("the module trapped: %s", firstLine(r.Trap))
	}
	if int64(r.ExitCode) != int64(c.ExpectedExitCode) {
		return fail("exit code %d, want %d; stdout %s", r.ExitCode, c.ExpectedExitCode, head(r.Stdout))
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
				return 0, "", fmt.Errorf("wasm: expected_stdout regex: %w", err)
			}
			ok = re.MatchString(stdout)
		default:
			return 0, "", fmt.Errorf("wasm: unknown stdout_match %q", c.StdoutMatch)
		}
		if !ok {
			return fail("stdout %s does not match (%s) %s", head(r.Stdout), matchName(c.StdoutMatch), quote(want))
		}
		return 1, fmt.Sprintf("exit code %d; stdout matches (%s)", r.ExitCode, matchName(c.StdoutMatch)), nil
	case c.ScoreFromStdout:
		line, _, _ := strings.Cut(stdout, "\n")
		v, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
			return fail("score_from_stdout: the first line of stdout is %s, not a number from 0 to 1", quote(line))
		}
		return v, fmt.Sprintf("exit code %d; score %s from stdout", r.ExitCode, strconv.FormatFloat(v, 'g', -1, 64)), nil
	}
	return 1, fmt.Sprintf("exit code %d", r.ExitCode), nil
}

func matchName(m string) string {
	if m == "" {
		return "exact"
	}
	return m
}

// head quotes the start of a stream, tail its end: where a failure's story usually is.
func head(b []byte) string {
	if len(b) > excerpt {
		return fmt.Sprintf("%q…", b[:excerpt])
	}
	return fmt.Sprintf("%q", b)
}

func tail(b []byte) string {
	b = bytes.TrimRight(b, "\n")
	if len(b) > excerpt {
		return fmt.Sprintf("…%q", b[len(b)-excerpt:])
	}
	return fmt.Sprintf("%q", b)
}

func quote(s string) string { return head([]byte(s)) }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > excerpt {
		line = line[:excerpt] + "…"
	}
	return line
}
