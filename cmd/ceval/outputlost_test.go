package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
)

// cevalClosedStdout runs ceval with its stdout a pipe nobody reads (ceval ... | head after
// head exited): its exit code, whether a signal ended it, and its stderr.
func cevalClosedStdout(t *testing.T, args ...string) (code int, signalled bool, stderr string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	cmd := exec.Command(cevalBin, args...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), cmd.ProcessState.ExitCode() == -1, errb.String()
}

// A closed stdout does not kill ceval (Go's default for a write to a closed stdout is to
// die of SIGPIPE): the command goes on and exits 141, saying its output was cut off.
func TestAClosedStdoutIsExit141NotSIGPIPE(t *testing.T) {
	code, signalled, stderr := cevalClosedStdout(t, "validate", "../../examples/hello/task.yaml", "../../examples/audit/sound/task.yaml")
	if signalled || code != exitOutputLost || !strings.Contains(stderr, "cut off") || !strings.Contains(stderr, "exit 0 before") {
		t.Fatalf("exit %d (signalled %v), stderr %q; want %d saying the output was cut off", code, signalled, stderr, exitOutputLost)
	}
}

// ceval run ... | head: the run finishes with a closed stdout, writes its result and removes
// its temporary directories (a ceval killed by SIGPIPE at its first line of output skipped
// the deferred clean-up), then exits 141.
func TestRunWithAClosedStdoutFinishesAndCleansUp(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	tmp := privateTMPDIR(t)
	runs := t.TempDir()
	code, signalled, stderr := cevalClosedStdout(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "../../examples/hello/task.yaml")
	if signalled || code != exitOutputLost {
		t.Fatalf("exit %d (signalled %v), want %d; stderr:\n%s", code, signalled, exitOutputLost, stderr)
	}
	var found []string
	filepath.WalkDir(runs, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == record.ResultFile {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("result.json files: %v", found)
	}
	res, err := record.ReadResult(filepath.Dir(found[0]))
	if err != nil || res.Status != record.StatusSuccess {
		t.Errorf("result %+v, %v; want SUCCESS", res, err)
	}
	if left := cevalTempLeft(tmp); len(left) != 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}
