package main

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ceval.dev/ceval/selftest"
)

// Every hostile task and experiment file of the selftest's loader attacks is refused by a
// child `ceval validate` within the bounds the attack judges by (5 s, 100 MiB peak RSS,
// measured with getrusage of the child; measured here: see the log), quoting no canary.
func TestValidateRefusesHostileFilesQuicklyInLittleMemory(t *testing.T) {
	rows, err := selftest.RunLoaderAttacks(context.Background(), cevalBin, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 10 {
		t.Fatalf("%d loader attacks, want the whole list", len(rows))
	}
	for _, r := range rows {
		t.Logf("%-32s %s %s", r.Name, r.Outcome, r.Detail)
		if r.Outcome != selftest.Blocked {
			t.Errorf("%s: %s: %s", r.Name, r.Outcome, r.Detail)
		}
	}
}

func TestValidateOfAFIFORefusesItWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "task.yaml")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	r := ceval(t, "validate", p)
	if r.code != exitInvalid || !strings.Contains(r.stderr, "is a FIFO, not a regular file") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
}
