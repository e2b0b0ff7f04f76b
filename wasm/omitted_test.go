package wasm

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/testtree"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
	"golang.org/x/sys/unix"
)

// cappedWorkspace snapshots files under lim, so a cap leaves something out.
func cappedWorkspace(t *testing.T, files map[string]string, lim snapshot.Limits) *snapshot.Snapshot {
	t.Helper()
	parent := t.TempDir()
	src := filepath.Join(parent, "ws")
	testtree.Write(t, src, files)
	s, err := snapshot.Take(src, filepath.Join(parent, "snap"), lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.LimitsHit) == 0 {
		t.Fatalf("no cap was reached; the test proves nothing (notes %+v)", s.Notes)
	}
	return s
}

// TestCapNeverMakesAFileLookAbsentToAGuest plants a TODO and a credentials file where a
// cap leaves them out (over the per-file cap, past the entry cap, below the depth cap, past
// the path cap), and runs the negative checks a task would write. None may pass: the guest
// sees an I/O error (so grep -r and cat fail), and reaching omitted content scores 0 even
// when the script turns the error into success.
func TestCapNeverMakesAFileLookAbsentToAGuest(t *testing.T) {
	if !HasToolbox() {
		t.Skip("no toolbox embedded")
	}
	many := map[string]string{"credentials.txt": "TODO: secret"}
	for i := range 20 {
		many[fmt.Sprintf("a%02d", i)] = "clean"
	}
	workspaces := []struct {
		name   string
		files  map[string]string
		lim    snapshot.Limits
		hidden string // where the TODO and the credentials are
	}{
		{"over-cap file", map[string]string{"credentials.txt": "TODO " + strings.Repeat("x", 100), "ok.txt": "clean"}, snapshot.Limits{MaxFileBytes: 64}, "credentials.txt"},
		{"over-count directory", many, snapshot.Limits{MaxEntries: 10}, "credentials.txt"},
		{"over-depth subtree", map[string]string{"a/b/credentials.txt": "TODO", "ok.txt": "clean"}, snapshot.Limits{MaxDepth: 2}, "a/b/credentials.txt"},
		{"over the path cap", map[string]string{"a/credentials.txt": "TODO", "a/0": "clean"}, snapshot.Limits{MaxPathBytes: 4}, "a/credentials.txt"},
	}
	e := newExecutor(t, defaultToolbox(), Options{})
	for _, ws := range workspaces {
		s := cappedWorkspace(t, ws.files, ws.lim)
		for _, script := range []string{
			"! grep -rq TODO .",
			"test ! -e " + ws.hidden,
			"! cat " + ws.hidden + " | grep -q TODO",
			"! find . -name credentials.txt | grep -q .",
			"cat " + ws.hidden + " >/dev/null || exit 0; exit 1",
		} {
			t.Run(ws.name+"/"+script, func(t *testing.T) {
				_, score, details := runScript(t, e, command(script), s, nil)
				if score != 0 {
					t.Fatalf("scored %v (%s): a negative check passed over content the snapshot left out", score, details)
				}
			})
		}
	}
	t.Run("reads fail with an I/O error", func(t *testing.T) {
		s := cappedWorkspace(t, workspaces[0].files, workspaces[0].lim)
		c := &task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "cat credentials.txt", Execution: task.Execution{Timeout: command("").Execution().Timeout}}}
		r, _, _ := runScript(t, e, c, s, nil)
		if r.ExitCode == 0 || !strings.Contains(strings.ToLower(string(r.Stderr)), "i/o error") {
			t.Fatalf("cat of an omitted file: exit %d, stderr %q; want it to fail with an I/O error", r.ExitCode, r.Stderr)
		}
		for _, ws := range workspaces {
			s := cappedWorkspace(t, ws.files, ws.lim)
			c.Spec.(*task.RunCommandSpec).Command = "grep -r TODO ."
			r, _, details := runScript(t, e, c, s, nil)
			if r.ExitCode != 2 {
				t.Errorf("%s: grep -r exited %d, want 2; stderr %q", ws.name, r.ExitCode, r.Stderr)
			}
			// Reaching omitted content decides the criterion, whatever the script makes of it.
			if r.Omitted == "" || !strings.Contains(details, "omitted:") {
				t.Errorf("%s: details %q, reply omitted %q: want the omitted path named", ws.name, details, r.Omitted)
			}
		}
	})
	t.Run("what was captured still grades", func(t *testing.T) {
		s := cappedWorkspace(t, workspaces[0].files, workspaces[0].lim)
		for script, want := range map[string]float64{
			"grep -q clean ok.txt":                               1,
			"test -e credentials.txt":                            1, // visible: it exists
			"test $(wc -c <ok.txt) -eq 5":                        1,
			"test -f credentials.txt && test -s credentials.txt": 1,
		} {
			if _, score, details := runScript(t, e, command(script), s, nil); score != want {
				t.Errorf("%q scored %v (%s), want %v", script, score, details, want)
			}
		}
	})
}

// TestOmittedSpecialFilesAreVisibleButUnreadable: a FIFO planted where a criterion looks
// is there (test -e passes, test ! -e fails) and never read.
func TestOmittedSpecialFilesAreVisibleButUnreadable(t *testing.T) {
	if !HasToolbox() {
		t.Skip("no toolbox embedded")
	}
	s := workspace(t, map[string]string{"ok.txt": "clean"}, func(src string) {
		if err := unix.Mkfifo(filepath.Join(src, "credentials.txt"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	e := newExecutor(t, defaultToolbox(), Options{})
	for script, want := range map[string]float64{
		"test -e credentials.txt":     1, // WASI has no FIFO type: it shows as unknown
		"test ! -e credentials.txt":   0,
		"cat credentials.txt; exit 0": 0,
		"grep -q clean ok.txt":        1,
		"test $(ls | wc -l) -eq 2":    1,
	} {
		if _, score, details := runScript(t, e, command(script), s, nil); score != want {
			t.Errorf("%q scored %v (%s), want %v", script, score, details, want)
		}
	}
}
