package importer

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// plant makes a FIFO and a listening unix socket at the given paths; the socket lives
// until the test ends.
func plant(t *testing.T, fifo, sock string) {
	t.Helper()
	for _, p := range []string{fifo, sock} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
}

// skippedLines are the report lines of the entries an import skipped, by input path.
func skippedLines(rs []FileResult) map[string]string {
	out := map[string]string{}
	for _, r := range rs {
		for _, p := range r.Problems {
			if p.Skipped != "" {
				out[p.File] = p.String()
			}
		}
	}
	return out
}

// A FIFO and a socket in a coder_eval tree are each a line of the report; the task whose
// template holds them is not ok (its copy lacks them), a task that names neither still is.
func TestImportCoderEvalReportsEveryFIFOAndSocketItSkips(t *testing.T) {
	src := filepath.Join(t.TempDir(), "tasks")
	writeFile(t, filepath.Join(src, "a", "task.yaml"), base+"sandbox:\n  template_sources:\n    - type: template_dir\n      path: tmpl\n")
	writeFile(t, filepath.Join(src, "a", "tmpl", "x.txt"), "x")
	writeFile(t, filepath.Join(src, "b", "task.yaml"), base)
	fifo, sock := filepath.Join(src, "a", "tmpl", "pipe"), filepath.Join(src, "a", "tmpl", "s.sock")
	plant(t, fifo, sock)
	loose := filepath.Join(src, "b", "junk.fifo")
	if err := syscall.Mkfifo(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rs, err := ImportCoderEval([]string{src}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := skippedLines(rs)
	for p, want := range map[string]string{fifo: "FIFO", sock: "socket", loose: "FIFO"} {
		if got := lines[p]; got != p+": skipped: "+want+" (not a regular file)" {
			t.Errorf("report line for %s: %q", p, got)
		}
		rel, _ := filepath.Rel(filepath.Dir(src), p)
		if _, err := os.Lstat(filepath.Join(out, rel)); !os.IsNotExist(err) {
			t.Errorf("%s was copied: %v", rel, err)
		}
	}
	ok := map[string]bool{}
	for _, r := range rs {
		if strings.HasSuffix(r.Input, "task.yaml") {
			ok[filepath.Base(filepath.Dir(r.Input))] = r.OK()
			if filepath.Base(filepath.Dir(r.Input)) == "a" && !strings.Contains(strings.Join(problemLines(r), "\n"), "references "+fifo) {
				t.Errorf("task a does not say it references the skipped FIFO: %v", problemLines(r))
			}
		}
	}
	if ok["a"] || !ok["b"] {
		t.Fatalf("task a ok %v (its template lost two entries), task b ok %v: %+v", ok["a"], ok["b"], rs)
	}
}

func problemLines(r FileResult) []string {
	var out []string
	for _, p := range r.Problems {
		out = append(out, p.String())
	}
	return out
}

// A Harbor task with a FIFO in its tests and a socket in its environment reports both and
// is not ok; a FIFO where task.toml should be is refused at once, not waited on.
func TestImportHarborReportsEveryFIFOAndSocketItSkips(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "odd")
	writeFile(t, filepath.Join(dir, "task.toml"), "version = \"1.0\"\n")
	writeFile(t, filepath.Join(dir, "instruction.md"), "do it")
	writeFile(t, filepath.Join(dir, "tests", "test.sh"), "echo 1 > /logs/verifier/reward.txt\n")
	fifo, sock := filepath.Join(dir, "tests", "fifo"), filepath.Join(dir, "environment", "s.sock")
	plant(t, fifo, sock)
	rs, err := ImportHarbor([]string{dir}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := skippedLines(rs)
	if lines[fifo] != fifo+": skipped: FIFO (not a regular file)" || lines[sock] != sock+": skipped: socket (not a regular file)" {
		t.Fatalf("report lines %q", lines)
	}
	if len(rs) != 1 || rs[0].OK() {
		t.Fatalf("the task was reported ok with entries skipped: %+v", rs)
	}

	bad := filepath.Join(t.TempDir(), "fifo-toml")
	writeFile(t, filepath.Join(bad, "instruction.md"), "do it")
	if err := syscall.Mkfifo(filepath.Join(bad, "task.toml"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ImportHarbor([]string{bad}, t.TempDir(), Options{}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("a FIFO task.toml: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the import waited on a FIFO task.toml")
	}
}
