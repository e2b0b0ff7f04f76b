package verifier

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/task"
)

// lentStampTest fails on purpose, its message the identity of the pytest package it imported
// (inode and change times of its directory): two criteria that show the same stamp ran
// the same copy.
const lentStampTest = `import os, pytest

def test_stamp():
    st = os.stat(os.path.dirname(pytest.__file__))
    assert False, "LENT-STAMP %s %d:%d:%d" % (pytest.__file__, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
`

var lentStamp = regexp.MustCompile(`LENT-STAMP (\S+) ([0-9]+:[0-9]+:[0-9]+)`)

// Every pytest criterion an Executor runs is lent the one read-only copy of ceval's pytest
// made for the first (it was copied again for each, 12-67 ms and 1.9 MB apiece): a plain and
// an isolation: process criterion over bookworm's python3 without pytest import pytest from
// /ceval/pytest, the same directory for both (same inode and times), and a new Executor makes
// a copy of its own. Close removes the copy. Red without the shared copy: each criterion's
// stamp differs (a copy made per criterion).
func TestEveryPytestCriterionOfAnExecutorIsLentTheOneCopy(t *testing.T) {
	if os.Getenv("CEVAL_SKIP_PACKAGE_IMAGES") != "" {
		t.Skip("CEVAL_SKIP_PACKAGE_IMAGES is set")
	}
	if _, err := os.Stat(filepath.Join(hostDistPackages, hostPytestPin)); err != nil {
		t.Skip("Debian's python3-pytest 7.2.1 is not installed: scripts/containerd.sh install")
	}
	e, cl, ctx := newExecutor(t)
	const image = "ceval.local/test-harbor-python3-bookworm:1"
	if _, err := images.BuildPackages(ctx, cl, images.PackageOptions{Name: image, Suite: "bookworm", Packages: []string{"python3", "bash"}}); err != nil {
		t.Fatalf("the image with python3 and no pytest: %v", err)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{
		"tests/test_a.py": lentStampTest, "tests/test_b.py": lentStampTest,
		"task.yaml": "task_id: lent-once\ninitial_prompt: p\nsandbox:\n  image: " + image + "\ngrader_files: [tests]\nsuccess_criteria:\n" +
			"  - {type: pytest, tests: tests/test_a.py, sandbox: container, timeout: 2m}\n" +
			"  - {type: pytest, tests: tests/test_b.py, sandbox: container, isolation: process, timeout: 2m}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := snap(t, map[string]string{"solution.py": goodSolution})
	stamp := func(ex *Executor, c *task.Criterion) string {
		t.Helper()
		start := time.Now()
		r, err := ex.Run(ctx, c, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := lentStamp.FindStringSubmatch(string(r.Stdout) + string(r.Stderr))
		if m == nil {
			t.Fatalf("no stamp from the tests (%s):\n%.3000s\n%.3000s", c.Spec.(*task.PytestSpec).Tests.Rel, r.Stdout, r.Stderr)
		}
		if !strings.HasPrefix(m[1], HarborPytestPath+"/") {
			t.Fatalf("pytest imported from %s, not ceval's lent copy", m[1])
		}
		t.Logf("%s: %s (%v)", c.Spec.(*task.PytestSpec).Tests.Rel, m[2], time.Since(start).Round(time.Millisecond))
		return m[2]
	}
	a, b := stamp(e, &tk.Criteria[0]), stamp(e, &tk.Criteria[1])
	again := stamp(e, &tk.Criteria[0])
	if a != b || a != again {
		t.Errorf("the criteria of one Executor were lent different copies: %s, %s, %s", a, b, again)
	}
	copies, _ := filepath.Glob(filepath.Join(e.opts.ScratchDir, "ceval-pytest-*"))
	if len(copies) != 1 {
		t.Errorf("%d copies of ceval's pytest in the scratch directory, want 1: %v", len(copies), copies)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if copies, _ := filepath.Glob(filepath.Join(e.opts.ScratchDir, "ceval-pytest-*")); len(copies) != 0 {
		t.Errorf("Close left %v", copies)
	}
	other, err := New(Options{Client: cl, Grace: 500 * time.Millisecond, ScratchDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if o := stamp(other, &tk.Criteria[0]); o == a {
		t.Errorf("another Executor was lent the first one's copy (%s)", o)
	}
}
