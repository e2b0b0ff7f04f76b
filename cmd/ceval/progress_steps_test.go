package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestProgressNamesTheStepOfAFollowUp: a follow-up run within a multi-step task's step says
// which step it is in; a plain task's iteration reads as before.
func TestProgressNamesTheStepOfAFollowUp(t *testing.T) {
	var b bytes.Buffer
	p := progressPrinter(&b, "t")
	p("iteration_started", map[string]any{"step": 2, "n": 3, "prompt": "feedback"})
	p("iteration_started", map[string]any{"n": 2, "prompt": "simulated_user"})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "t: iteration_started 3 of step 2 (feedback prompt)") ||
		!strings.HasSuffix(lines[1], "t: iteration_started 2 (simulated_user prompt)") {
		t.Fatalf("progress:\n%s", b.String())
	}
}
