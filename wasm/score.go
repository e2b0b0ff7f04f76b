package wasm

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

// excerpt is how much of a stream the details quote.
const excerpt = 300

// score turns a run into the criterion's score and details with the rules every tier
// shares (grader.ScoreCommand): a limit hit, a trap or a reach into what the snapshot left
// out scores 0, then the exit code and expected_stdout or score_from_stdout decide.
func score(c *task.Criterion, r *wire.RunReply, o Options, timeout time.Duration) (grader.Scored, error) {
	run := grader.CommandRun{ExitCode: int(r.ExitCode), Stdout: r.Stdout, Stderr: r.Stderr}
	if r.TmpFull {
		run.Notes = append(run.Notes, fmt.Sprintf("/tmp reached its %s cap", human(o.MaxTmpBytes)))
	}
	switch {
	case r.Omitted != "":
		// Whatever the guest concluded, it looked at content ceval did not capture: a
		// negative check ("! grep -rq TODO .", "test ! -e x") would pass on what is missing.
		run.Limit = fmt.Sprintf("omitted: the criterion reached workspace path %s, which the snapshot left out; it cannot be graded on content ceval did not see (exit code %d)", r.Omitted, r.ExitCode)
	case r.Limit == wire.LimitTimeout:
		run.Limit = fmt.Sprintf("timeout: still running after the %v limit; stopped", timeout)
	case r.Limit == wire.LimitMemory:
		run.Limit = fmt.Sprintf("memory limit: the guest needed more than the %s limit; stopped", human(o.MemoryLimit))
	case r.Limit == wire.LimitStdout:
		run.Limit = fmt.Sprintf("stdout limit: more than %s written (%d bytes over); stopped", human(o.MaxOutput), r.StdoutCut)
	case r.Limit == wire.LimitStderr:
		run.Limit = fmt.Sprintf("stderr limit: more than %s written (%d bytes over); stopped", human(o.MaxOutput), r.StderrCut)
	case r.Trap != "":
		run.Limit = "the module trapped: " + firstLine(r.Trap)
	}
	return grader.ScoreCommand(c, run)
}

// tail quotes the end of a stream: where a failure's story usually is.
func tail(b []byte) string {
	b = bytes.TrimRight(b, "\n")
	if len(b) > excerpt {
		return fmt.Sprintf("…%q", b[len(b)-excerpt:])
	}
	return fmt.Sprintf("%q", b)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if len(line) > excerpt {
		line = line[:excerpt] + "…"
	}
	return line
}
