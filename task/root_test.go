package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rootTree writes repo/tasks/t1/task.yaml naming a template two levels up (under
// repo/skills), and an outside directory beside repo.
func rootTree(t *testing.T, templateDir string) (repo, taskFile string) {
	t.Helper()
	top := t.TempDir()
	repo = filepath.Join(top, "repo")
	for _, d := range []string{"repo/tasks/t1", "repo/skills/tmpl", "outside"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(top, "repo/skills/tmpl/a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	taskFile = filepath.Join(repo, "tasks/t1/task.yaml")
	body := "task_id: t1\ninitial_prompt: p\nsandbox:\n  workspace:\n    template_dir: " + templateDir +
		"\nsuccess_criteria:\n  - type: file_exists\n    path: a.txt\n"
	if err := os.WriteFile(taskFile, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo, taskFile
}

func TestDeclaredRootLetsATaskNameMaterialInsideIt(t *testing.T) {
	repo, f := rootTree(t, "../../skills/tmpl")
	if _, err := Load(f); err == nil || !strings.Contains(err.Error(), "declare the tree with --root") {
		t.Fatalf("without a root: %v, want the path refused with a hint at --root", err)
	}
	tk, err := LoadWith(f, LoadOptions{Root: repo})
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if got := tk.Sandbox.Workspace.TemplateDir.Path; got != filepath.Join(repo, "skills/tmpl") {
		t.Fatalf("template_dir = %s", got)
	}
}

// TestDeclaredRootConfinesDotDotPastIt: ".." past the root, an absolute path, and a symlink
// inside the root that leaves it are refused with a root declared.
func TestDeclaredRootConfinesDotDotPastIt(t *testing.T) {
	for _, tc := range []struct{ name, path, want string }{
		{"dotdot past the root", "../../../outside", "leaves the declared root"},
		{"absolute", "/etc", "is absolute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, f := rootTree(t, tc.path)
			if _, err := LoadWith(f, LoadOptions{Root: repo}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDeclaredRootRefusesASymlinkLeavingIt(t *testing.T) {
	repo, f := rootTree(t, "../../skills/escape")
	if err := os.Symlink(filepath.Join(filepath.Dir(repo), "outside"), filepath.Join(repo, "skills/escape")); err != nil {
		t.Fatal(err)
	}
	_, err := LoadWith(f, LoadOptions{Root: repo})
	if err == nil || !strings.Contains(err.Error(), "template_dir") {
		t.Fatalf("a symlink out of the root was accepted: %v", err)
	}
}

func TestDeclaredRootMustHoldTheTaskFile(t *testing.T) {
	repo, f := rootTree(t, "../../skills/tmpl")
	_, err := LoadWith(f, LoadOptions{Root: filepath.Join(repo, "skills")})
	if err == nil || !strings.Contains(err.Error(), "outside the declared root") {
		t.Fatalf("got %v", err)
	}
}
