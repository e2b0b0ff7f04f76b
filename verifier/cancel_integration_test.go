package verifier

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/internal/ctrtest"
)

// A grade cancelled while the verifier's task is created (Ctrl-C, a test's deadline) leaves
// no container, task or shim: containerd 1.6 left the shim of a create whose call was
// cancelled running with no task (CI found a ceval-verify-... shim running against its
// stopped daemon). Cancelled the moment the verifier's shim exists, mid-create.
func TestVerifierCancelledWhileItsTaskIsCreatedLeavesNoContainerTaskOrShim(t *testing.T) {
	e, c, ctx := newExecutor(t)
	s := snap(t, map[string]string{"f": "x"})
	for i := range 3 {
		cctx, cancel := context.WithCancel(ctx)
		watching := make(chan struct{})
		go func() {
			defer close(watching)
			for end := time.Now().Add(2 * time.Minute); len(verifierShims(ctrtest.Namespace)) == 0; time.Sleep(time.Millisecond) {
				if cctx.Err() != nil || time.Now().After(end) {
					return
				}
			}
			cancel()
		}()
		r, err := e.Run(cctx, container("echo ran"), s, nil)
		cancel()
		<-watching
		if err == nil {
			t.Fatalf("attempt %d: the grade went on after its cancellation: exit %d, stdout %q", i, r.ExitCode, r.Stdout)
		}
		if err := ctrtest.Leftovers(ctx, c); err != nil {
			t.Fatalf("attempt %d: left in containerd: %v", i, err)
		}
		// The shim ends with its task's deletion; containerd's own cleanup of it may follow.
		for end := time.Now().Add(time.Minute); len(verifierShims(ctrtest.Namespace)) > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("attempt %d: a verifier's shim runs a minute after the grade ended: %v", i, verifierShims(ctrtest.Namespace))
			}
		}
	}
}

// verifierShims lists the command lines of the shims running for verifier containers in ns.
func verifierShims(ns string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte("containerd-shim")) || !bytes.Contains(b, []byte("\x00-namespace\x00"+ns+"\x00")) ||
			!bytes.Contains(b, []byte("\x00-id\x00ceval-verify-")) {
			continue
		}
		out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}
