package grader

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// readCriteria are the criteria that read hello.txt, each of which the text "Hello,
// ceval!" would satisfy.
func readCriteria(path string) []task.Criterion {
	return []task.Criterion{
		crit(task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: path}}),
		crit(task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: path, Includes: []string{"Hello, ceval!"}}}),
		crit(task.Criterion{Type: task.FileMatchesRegex, Spec: &task.FileMatchesRegexSpec{Path: path, Pattern: "Hello"}}),
		crit(task.Criterion{Type: task.FileCheck, Spec: &task.FileCheckSpec{Path: path, Patterns: []task.PatternCheck{{Pattern: "Hello", MustMatch: true}}}}),
		crit(task.Criterion{Type: task.ClassificationMatch, Spec: &task.ClassificationMatchSpec{Path: path, ExpectedLabel: "Hello, ceval!"}}),
		crit(task.Criterion{Type: task.JSONCheck, Spec: &task.JSONCheckSpec{Path: path, Assertions: []task.Assertion{{Expression: "@", Operator: "exists", Expected: true}}}}),
	}
}

// wantAllFail checks that every criterion FAILs (never ERROR) mentioning detail, and the
// task is a FAILURE.
func wantAllFail(t *testing.T, r *Result, detail string) {
	t.Helper()
	for _, cr := range r.Criteria {
		if cr.Status != Fail || cr.Score != 0 || cr.Passed {
			t.Errorf("%s: got %s score %v (%s), want FAIL score 0", cr.Type, cr.Status, cr.Score, cr.Details)
		}
		if !strings.Contains(cr.Details, detail) {
			t.Errorf("%s: details %q do not mention %q", cr.Type, cr.Details, detail)
		}
	}
	if r.Status != TaskFailure {
		t.Errorf("task status %s, want %s", r.Status, TaskFailure)
	}
}

func TestCriterionOnSymlinkNeverReadsTarget(t *testing.T) {
	target := filepath.Join(t.TempDir(), "host-secret.txt")
	if err := os.WriteFile(target, []byte("Hello, ceval!\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Any open or read of the target while the workspace is snapshotted and graded shows
	// up as an inotify event.
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, target, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
		t.Fatal(err)
	}
	events := func() int {
		buf := make([]byte, 4096)
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	s := snap(t, tree{"hello.txt": "symlink:" + target})
	r := Grade(context.Background(), newTask(readCriteria("hello.txt")...), s, Options{})
	wantAllFail(t, r, "symlink to "+`"`+target+`"`)
	if n := events(); n != 0 {
		t.Errorf("the symlink's target was opened or read during snapshot and grading (%d bytes of inotify events)", n)
	}

	// The watch works: reading the target ourselves is seen.
	if _, err := os.ReadFile(target); err != nil {
		t.Fatal(err)
	}
	if events() == 0 {
		t.Fatal("inotify saw no event for a read of the target; the check above proves nothing")
	}
}

func TestSymlinkedParentDirectoryIsNotFollowed(t *testing.T) {
	outside := makeTree(t, tree{"hello.txt": "Hello, ceval!\n"})
	s := snap(t, tree{"docs": "symlink:" + outside})
	r := Grade(context.Background(), newTask(readCriteria("docs/hello.txt")...), s, Options{})
	wantAllFail(t, r, "is a symlink to")
}

func TestSnapshotCapNeverHidesFile(t *testing.T) {
	// Every cap: the criteria that read hello.txt FAIL naming the cap, excludes included (a
	// negative check over content ceval did not see must not pass), and file_exists passes
	// exactly when the entry itself is still visible.
	todo := "Hello, ceval! TODO"
	tests := []struct {
		name    string
		tree    tree
		lim     snapshot.Limits
		path    string
		visible bool
		detail  string
	}{
		{"a file over the per-file cap", tree{"hello.txt": todo + strings.Repeat(" ", 100)}, snapshot.Limits{MaxFileBytes: 64}, "hello.txt", true, "omitted: over the 64 bytes per-file cap"},
		{"the total byte cap", tree{"a.bin": strings.Repeat("x", 100), "hello.txt": todo}, snapshot.Limits{MaxTotalBytes: 105}, "hello.txt", true, "omitted: over the 105 bytes total cap"},
		{"too many files before it", tree{"a/1": "", "a/2": "", "a/3": "", "hello.txt": todo}, snapshot.Limits{MaxEntries: 3}, "hello.txt", false, "may exist in the workspace (omitted: \".\" directory listing cut where the snapshot stopped (entry cap 3 reached))"},
		{"too deep", tree{"a/b/hello.txt": todo}, snapshot.Limits{MaxDepth: 2}, "a/b/hello.txt", false, "may exist in the workspace (omitted: \"a/b\" directory at the depth cap 2"},
		{"too many path bytes", tree{"a/1": "", "hello.txt": todo}, snapshot.Limits{MaxPathBytes: 8}, "hello.txt", false, "listing cut: path cap 8 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := take(t, makeTree(t, tt.tree), tt.lim)
			cs := append(readCriteria(tt.path)[1:], crit(task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: tt.path, Excludes: []string{"TODO"}}}))
			r := Grade(context.Background(), newTask(cs...), s, Options{})
			wantAllFail(t, r, tt.detail)
			if len(r.SnapshotNotes) == 0 {
				t.Error("result carries no snapshot notes")
			}
			got := gradeOne(t, task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: tt.path}}, s)
			if tt.visible {
				want(t, got, Pass, 1, "found")
			} else {
				want(t, got, Fail, 0, tt.detail)
			}
		})
	}
	t.Run("a glob over omitted files", func(t *testing.T) {
		s := take(t, makeTree(t, tree{"out/big.log": strings.Repeat("x", 100)}), snapshot.Limits{MaxFileBytes: 10})
		got := gradeOne(t, task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "out/*.log"}}, s)
		want(t, got, Pass, 1, `found "out/big.log"`)
	})
}

func TestInvalidJSONIsFailNotError(t *testing.T) {
	tests := map[string]string{
		"empty":            "",
		"truncated":        `{"status": "do`,
		"not JSON":         "status: done",
		"two documents":    `{"status": "done"}{"status": "done"}`,
		"trailing garbage": `{"status": "done"} x`,
		"not UTF-8":        "{\"status\": \"d\xffne\"}",
		"NaN":              `{"status": NaN}`,
		"deeply nested":    strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
	}
	schema := schemaDoc(t, `{"type": "object"}`)
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			s := snap(t, tree{"report.json": content})
			c := crit(task.Criterion{
				Type: task.JSONCheck,
				Spec: &task.JSONCheckSpec{Path: "report.json", JSONSchema: schema, Assertions: []task.Assertion{{Expression: "status", Operator: "exists", Expected: false}}},
			})
			r := Grade(context.Background(), newTask(c), s, Options{})
			wantAllFail(t, r, "not valid JSON")
		})
	}
}

func TestDirectoryWhereFileExpectedFails(t *testing.T) {
	s := snap(t, tree{"hello.txt/": "", "hello.txt/inner": "Hello, ceval!"})
	cs := readCriteria("hello.txt")[1:] // file_exists rightly accepts a directory
	r := Grade(context.Background(), newTask(cs...), s, Options{})
	wantAllFail(t, r, "hello.txt is a directory, not a file")
}

func TestNonUTF8TextFails(t *testing.T) {
	s := snap(t, tree{"hello.txt": "Hello, ceval!\xff\xfe"})
	cs := readCriteria("hello.txt")[1:5]
	r := Grade(context.Background(), newTask(cs...), s, Options{})
	wantAllFail(t, r, "not UTF-8 text (invalid byte at offset 13)")
}

func TestForgedResultJSONInWorkspaceIsIgnored(t *testing.T) {
	forged := `{"task_id": "t", "status": "SUCCESS", "score": 1, "criteria": [{"type": "file_exists", "status": "PASS", "score": 1, "passed": true}]}`
	cs := []task.Criterion{
		crit(task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "hello.txt", Includes: []string{"Hello, ceval!"}}}),
		crit(task.Criterion{Type: task.JSONCheck, Spec: &task.JSONCheckSpec{Path: "report.json", Assertions: []task.Assertion{{Expression: "status", Operator: "equals", Expected: "done"}}}}),
	}
	base := tree{"hello.txt": "Goodbye"}
	withForgery := tree{"hello.txt": "Goodbye", "result.json": forged, ".ceval/result.json": forged, "run/result.json": forged}
	clean := Grade(context.Background(), newTask(cs...), snap(t, base), Options{})
	attacked := Grade(context.Background(), newTask(cs...), snap(t, withForgery), Options{})
	if attacked.Status != TaskFailure || attacked.Score != 0 {
		t.Errorf("with a forged result.json: %s score %v, want FAILURE score 0", attacked.Status, attacked.Score)
	}
	if !reflect.DeepEqual(clean.Criteria, attacked.Criteria) || clean.Status != attacked.Status || clean.Score != attacked.Score {
		t.Errorf("a forged result.json changed the grade:\nclean    %+v\nattacked %+v", clean, attacked)
	}
}

// helloExecutor stands in for the WASM sandbox, which package wasm tests and cmd/ceval runs
// end to end on this example: it passes the run_command criterion when hello.txt was captured.
type helloExecutor struct{}

func (helloExecutor) Execute(_ context.Context, _ *task.Criterion, s *snapshot.Snapshot, _ *task.Dir) (Scored, error) {
	if _, ok := s.Lookup("hello.txt"); ok {
		return Scored{Score: 1, Details: "stand-in: hello.txt captured"}, nil
	}
	return Scored{Details: "stand-in: no hello.txt"}, nil
}

func TestExampleHelloGrades(t *testing.T) {
	tk, err := task.Load("../examples/hello/task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("solved workspace succeeds", func(t *testing.T) {
		s := take(t, "../examples/hello/solved", snapshot.Limits{})
		r := Grade(context.Background(), tk, s, Options{Executor: helloExecutor{}})
		if r.Status != TaskSuccess || !near(r.Score, 1) {
			t.Errorf("got %s score %v, want SUCCESS score 1: %+v", r.Status, r.Score, r.Criteria)
		}
		if r.TaskID != "hello" || len(r.Criteria) != len(tk.Criteria) {
			t.Errorf("task_id %q with %d criteria", r.TaskID, len(r.Criteria))
		}
		last := r.Criteria[len(r.Criteria)-1]
		if last.Gating || last.Weight != 0 {
			t.Errorf("the weight-0 regex criterion is gating: %+v", last)
		}
	})
	t.Run("empty workspace fails", func(t *testing.T) {
		s := snap(t, tree{})
		r := Grade(context.Background(), tk, s, Options{Executor: helloExecutor{}})
		if r.Status != TaskFailure || r.Score != 0 {
			t.Errorf("got %s score %v, want FAILURE score 0: %+v", r.Status, r.Score, r.Criteria)
		}
		for _, cr := range r.Criteria {
			if cr.Status != Fail {
				t.Errorf("%s: %s (%s), want FAIL", cr.Type, cr.Status, cr.Details)
			}
		}
	})
}

func TestGlobOverADepthCappedTreeSaysAMatchMayExist(t *testing.T) {
	s := take(t, makeTree(t, tree{"a/b/c/report.md": "x", "top.txt": "y"}), snapshot.Limits{MaxDepth: 2})
	got := gradeOne(t, task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "**/*.md"}}, s)
	want(t, got, Fail, 0, `1 director(ies) have incomplete listings and may hold a match (omitted: "a/b" directory at the depth cap 2`)
}
