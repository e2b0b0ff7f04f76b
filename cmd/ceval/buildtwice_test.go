package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"ceval.dev/ceval/internal/ctrtest"
)

// A second signal to `images build -f` exits at once, and kills what the build started
// first: buildah's group, and by PID its RUN step (runc in a session of its own, and the
// step's command below it), which SIGKILL to buildah's group alone left running.
func TestImagesBuildSignalledTwiceLeavesNoRUNStepRunning(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	df := buildahDockerfile(t, ctx, c)
	os.WriteFile(df, []byte("FROM ceval.local/default:latest\nUSER root\nRUN sleep 300\n"), 0o644)
	cmd := exec.Command(cevalBin, "images", "build", "--namespace", ctrtest.Namespace, "ceval.local/test-sig-twice:1", "-f", df)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []proc
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		for _, p := range seen { // what the build left, so that the next test starts clean
			if _, q, ok := readProc(p.pid); ok && q.start == p.start {
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
	})
	ready := running("sleep")
	for end := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		below := descendants(cmd.Process.Pid)
		seen = append(seen, below...)
		if ready(ctx, c, "", below) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the RUN step never ran:\n%s", out.String())
		}
	}
	seen = append(seen, descendants(cmd.Process.Pid)...)
	// Two signals that are not one when both pend, back to back: the second reaches ceval
	// whether or not the first's clean-up (buildah's own, on SIGTERM) would end it soon.
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	// Which of the two ceval handles second is the kernel's and the scheduler's choice.
	if code := cmd.ProcessState.ExitCode(); (code != 130 && code != 143) || !strings.Contains(out.String(), " again: exiting") {
		t.Fatalf("exit %d (%v), want 130 or 143 by the second signal:\n%s", code, cmd.ProcessState, out.String())
	}
	var left []string
	for end := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if left = stillRunning(seen); len(left) == 0 || time.Now().After(end) {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("still running a minute after ceval exited: %v", left)
	}
}
