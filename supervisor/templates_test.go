package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	"ceval.dev/ceval/task"
)

// TestTemplateDirListIsMergedInOrder: a template_dir list is copied in order, a later
// directory's files replace an earlier one's, directories merge, and a link an earlier
// template left is replaced, never followed.
func TestTemplateDirListIsMergedInOrder(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	writeT := func(p, body string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeT("a/keep.txt", "a")
	writeT("a/both.txt", "from a")
	writeT("a/sub/x.txt", "ax")
	if err := os.Symlink(filepath.Join(outside, "victim"), filepath.Join(dir, "a/link")); err != nil {
		t.Fatal(err)
	}
	writeT("b/both.txt", "from b")
	writeT("b/sub/y.txt", "by")
	writeT("b/link", "a file now")
	writeT("task.yaml", `task_id: t
initial_prompt: p
agent: {type: command, command: [/bin/true]}
sandbox:
  workspace:
    template_dir: [a, b]
success_criteria:
  - {type: file_exists, path: keep.txt}
`)
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if n := len(tk.Sandbox.Workspace.Templates()); n != 2 {
		t.Fatalf("%d templates, want 2", n)
	}
	ws := t.TempDir()
	if err := PrepareWorkspace(ws, tk); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"keep.txt": "a", "both.txt": "from b", "sub/x.txt": "ax", "sub/y.txt": "by", "link": "a file now"} {
		got, err := os.ReadFile(filepath.Join(ws, p))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(ws, "link")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("link: %v %v, want b's regular file", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "victim")); err == nil {
		t.Error("BREACH: the copy followed a's link out of the workspace")
	}
}
