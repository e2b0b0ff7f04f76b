package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hostileWorkspace makes a workspace of what an agent can leave to trip a grader: a symlink
// loop, a FIFO, a 2 GiB sparse file, a name that is not UTF-8, a JSON nested 200,000 deep,
// a tree 63 deep of 200-byte names with a file at the bottom.
func hostileWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("loop", filepath.Join(ws, "loop")))
	must(os.Symlink("b", filepath.Join(ws, "a")))
	must(os.Symlink("a", filepath.Join(ws, "b")))
	must(syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	f, err := os.Create(filepath.Join(ws, "big.bin"))
	must(err)
	must(f.Truncate(2 << 30))
	must(f.Close())
	must(os.Mkdir(filepath.Join(ws, "adir"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "bad\xff.txt"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(ws, "deep.json"), []byte(strings.Repeat("[", 200000)+strings.Repeat("]", 200000)), 0o644))
	root, err := os.OpenRoot(ws)
	must(err)
	defer root.Close()
	p := ""
	for range 63 {
		p = filepath.Join(p, strings.Repeat("d", 200))
		must(root.Mkdir(p, 0o755))
	}
	must(root.WriteFile(filepath.Join(p, "deep.txt"), []byte("x"), 0o644))
	return ws
}

// Whatever shape the agent leaves the workspace in is its doing: every criterion that reads
// it ends FAILURE with the reason, never ERROR (which is excluded from pass rates, re-run by
// --resume and exit 3). Each criterion of testdata/hostile-workspace points at one of the
// workspace's traps.
func TestHostileWorkspaceFailsTheGradeNeverErrs(t *testing.T) {
	ws := hostileWorkspace(t)
	r := ceval(t, "grade", "--json", "--containerd-address", "/nonexistent/containerd.sock", "testdata/hostile-workspace/task.yaml", "--workspace", ws)
	var res struct {
		Criteria []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Details string `json:"details"`
		} `json:"criteria"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("grade: exit %d: %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if len(res.Criteria) != 13 {
		t.Fatalf("%d criteria graded, want 13\n%s", len(res.Criteria), r.stdout)
	}
	for i, c := range res.Criteria {
		if c.Status != "FAIL" || c.Details == "" {
			t.Errorf("criterion %d (%s): %s (%s), want FAIL with the reason", i, c.Type, c.Status, c.Details)
		}
	}
	if r.code != 1 {
		t.Errorf("grade: exit %d, want 1 (failed, not errored)\n%s", r.code, r.stderr)
	}
}
