package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/toolcalls"
)

// Bounds of the tool-call sequence a run's panel shows.
const (
	maxListedToolCalls    = 200
	maxToolCallsListBytes = 64 << 20 // a larger transcript is not parsed for the page
)

// toolCallSequence renders a run's tool calls, one a line (number, tool, outcome, short
// input), read from the gateway's transcript in the run directory without following a
// link; "" when the run had no gateway.
func toolCallSequence(runDir string, res *record.Result) string {
	if res.Gateway == nil {
		return ""
	}
	f, err := os.OpenFile(filepath.Join(runDir, record.ModelCallsFile), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "(no transcript: " + StripControls(err.Error()) + ")"
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil || !fi.Mode().IsRegular():
		return "(the transcript is not a regular file)"
	case fi.Size() > maxToolCallsListBytes:
		return fmt.Sprintf("(the transcript is %d MiB, too large to list here; result.json's tool_calls counts them)", fi.Size()>>20)
	}
	l, err := toolcalls.Read(f)
	if err != nil {
		return "(" + StripControls(err.Error()) + ")"
	}
	if len(l.Calls) == 0 {
		return "(no tool calls)"
	}
	var b strings.Builder
	for i, c := range l.Calls {
		if i == maxListedToolCalls {
			fmt.Fprintf(&b, "… and %d more\n", l.Total-i)
			break
		}
		fmt.Fprintf(&b, "%4d  %-16s %-7s %s\n", c.Seq, StripControls(clip(c.Name, 40)), c.Outcome, StripControls(c.Short(160)))
	}
	if l.Total > len(l.Calls) && len(l.Calls) <= maxListedToolCalls {
		fmt.Fprintf(&b, "… %d more past the reader's cap\n", l.Total-len(l.Calls))
	}
	for _, n := range l.Notes {
		b.WriteString("note: " + StripControls(n) + "\n")
	}
	return b.String()
}

// clip collapses whitespace runs to one space and cuts s at n bytes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}
