package grader

import (
	"testing"

	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// withOutput attaches the snapshot of tr as the copy of the output at p.
func withOutput(t *testing.T, ws *snapshot.Snapshot, p string, tr tree) *snapshot.Snapshot {
	t.Helper()
	ws.Outputs = append(ws.Outputs, snapshot.Output{Path: p, Snapshot: snap(t, tr)})
	return ws
}

func TestAbsolutePathsReadTheOutputsCopy(t *testing.T) {
	ws := withOutput(t, snap(t, tree{"x.txt": "workspace\n", "output/x.txt": "planted in the workspace\n"}), "/output", tree{"x.txt": "answer 42\n", "logs/a.log": "", "link": "symlink:/etc/passwd"})
	want(t, gradeOne(t, task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "/output/x.txt", Includes: []string{"answer 42"}}}, ws), Pass, 1, "")
	want(t, gradeOne(t, task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "x.txt", Includes: []string{"workspace"}}}, ws), Pass, 1, "")
	want(t, gradeOne(t, task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "/output/**/*.log"}}, ws), Pass, 1, "/output/logs/a.log")
	want(t, gradeOne(t, task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "/output/nope"}}, ws), Fail, 0, "/output/nope does not exist in its output's copy")
	// A link planted in an output is a link, never its target.
	want(t, gradeOne(t, task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "/output/link", Includes: []string{"root"}}}, ws), Fail, 0, "symlink")
	want(t, gradeOne(t, task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "/output/link"}}, ws), Fail, 0, "does not follow links")
	// An absolute path below no output reads nothing, not the workspace's same-named file.
	want(t, gradeOne(t, task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "/elsewhere/x.txt", Includes: []string{"workspace"}}}, ws), Fail, 0, "below none of the task's sandbox.outputs")
}

// A cap on an output's copy never makes a file look absent.
func TestOutputCapNeverHidesAFile(t *testing.T) {
	out := take(t, makeTree(t, tree{"big.bin": "0123456789abcdef"}), snapshotLimits(8))
	ws := snap(t, tree{})
	ws.Outputs = []snapshot.Output{{Path: "/tmp", Snapshot: out}}
	want(t, gradeOne(t, task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "/tmp/big.bin"}}, ws), Pass, 1, "")
	want(t, gradeOne(t, task.Criterion{Type: task.FileContains, Spec: &task.FileContainsSpec{Path: "/tmp/big.bin", Includes: []string{"0123"}}}, ws), Fail, 0, "omitted")
}

// llm_judge's files may name an output's files too: the judge is shown them by their
// container paths.
func TestJudgeFilesReadTheOutputsCopy(t *testing.T) {
	ws := withOutput(t, snap(t, tree{"notes.md": "workspace notes"}), "/output", tree{"report.md": "the report", "more/a.md": "a", "link.md": "symlink:/etc/passwd"})
	shown, _ := judgeFiles(&task.LLMJudgeSpec{Files: []string{"notes.md", "/output/report.md", "/output/**/*.md", "/nowhere/x"}, MaxFileBytes: 1000}, ws)
	got := map[string]string{}
	for _, f := range shown {
		got[f.Path] = string(f.Content) + f.Missing
	}
	for p, want := range map[string]string{
		"notes.md": "workspace notes", "/output/report.md": "the report", "/output/more/a.md": "a",
		"/output/link.md": "a symlink; ceval does not follow links", "/nowhere/x": "below none of the task's sandbox.outputs",
	} {
		if got[p] != want {
			t.Errorf("%s: shown %q, want %q (all: %v)", p, got[p], want, got)
		}
	}
}
