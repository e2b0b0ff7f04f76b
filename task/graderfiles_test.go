package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const graderFilesTask = `task_id: t1
initial_prompt: do it
grader_files: [checks/, single.txt]
success_criteria:
  - {type: run_command, command: "python3 $TASK_DIR/checks/c.py"}
  - {type: file_exists, path: a.txt}
`

func TestGraderFilesReachEveryExecutingCriterion(t *testing.T) {
	p := writeTask(t, graderFilesTask, map[string]string{"checks/c.py": "print(1)\n", "single.txt": "x"})
	tk, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(p)
	g := tk.GraderFiles
	if len(g) != 2 || g[0].Root.Path != dir || g[0].Rel != "checks" || !g[0].Dir || g[1].Root != g[0].Root || g[1].Rel != "single.txt" || g[1].Dir {
		t.Errorf("GraderFiles = %+v, want checks/ and single.txt in %s", tk.GraderFiles, dir)
	}
	if len(tk.Criteria[0].Execution().GraderFiles) != 2 || tk.Criteria[1].Execution() != nil {
		t.Errorf("criteria grader files: %+v / %+v", tk.Criteria[0].Execution().GraderFiles, tk.Criteria[1].Spec)
	}
}

func TestGraderFilesCannotLeaveTheTaskDirectory(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.py"), []byte("x"), 0o644)
	for _, tc := range []struct{ entry, want string }{
		{"../secret.py", "leaves the task file's directory"},
		{"/etc/passwd", "is absolute"},
		{"link/secret.py", "grader_files[0]"},
		{"missing/", "grader_files[0]"},
		{".", "the whole task directory"},
	} {
		t.Run(tc.entry, func(t *testing.T) {
			doc := strings.Replace(graderFilesTask, "[checks/, single.txt]", "["+tc.entry+"]", 1)
			p := writeTask(t, doc, nil)
			if err := os.Symlink(outside, filepath.Join(filepath.Dir(p), "link")); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "task.yaml:3:") {
				t.Errorf("err = %v, want %q at task.yaml:3", err, tc.want)
			}
		})
	}
}

func TestDigestCoversGraderFiles(t *testing.T) {
	p := writeTask(t, graderFilesTask, map[string]string{"checks/c.py": "print(1)\n", "single.txt": "x"})
	digest := func() string {
		tk, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Digest(tk)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	before := digest()
	os.WriteFile(filepath.Join(filepath.Dir(p), "checks", "c.py"), []byte("print(2)\n"), 0o644)
	if digest() == before {
		t.Error("changing a grader file left the task digest unchanged")
	}
}
