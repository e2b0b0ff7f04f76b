package task

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes dir a git repository with one commit, using the host's git.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "--initial-branch=main"}, {"add", "."}, {"commit", "-qm", "one"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// A template's repository that reaches a repository elsewhere on the host (through a
// symlinked objects/ or refs/, alternates, a commondir or gitdir file, or config paths)
// would hand the agent that repository's history: each is a validation error at
// template_dir's line.
func TestTemplateGitReachingOutsideIsRefusedAtTemplateDirLine(t *testing.T) {
	host := t.TempDir()
	gitRepo(t, host)
	hostGit := filepath.Join(host, ".git")
	tests := []struct {
		name  string
		plant func(t *testing.T, repo string) // repo is tpl/project, a repository of its own
		want  string
	}{
		{"objects symlinked to a host repository", func(t *testing.T, repo string) {
			os.RemoveAll(filepath.Join(repo, ".git/objects"))
			os.Symlink(filepath.Join(hostGit, "objects"), filepath.Join(repo, ".git/objects"))
		}, `project/.git/objects is a symlink to "` + hostGit + `/objects" (outside the task's directory)`},
		{"refs symlinked to a host repository", func(t *testing.T, repo string) {
			os.RemoveAll(filepath.Join(repo, ".git/refs"))
			os.Symlink(filepath.Join(hostGit, "refs"), filepath.Join(repo, ".git/refs"))
		}, `project/.git/refs is a symlink`},
		{"a packed-refs link inside the template", func(t *testing.T, repo string) {
			os.WriteFile(filepath.Join(repo, "refs.txt"), nil, 0o644)
			os.Symlink("../refs.txt", filepath.Join(repo, ".git/packed-refs"))
		}, `(inside the template); a template's .git must hold no links`},
		{"alternates naming a host repository", func(t *testing.T, repo string) {
			os.WriteFile(filepath.Join(repo, ".git/objects/info/alternates"), []byte(filepath.Join(hostGit, "objects")+"\n"), 0o644)
		}, "project/.git/objects/info/alternates names other object stores"},
		{"commondir", func(t *testing.T, repo string) {
			os.WriteFile(filepath.Join(repo, ".git/commondir"), []byte(hostGit+"\n"), 0o644)
		}, "project/.git/commondir shares another repository's objects"},
		{"a worktree's gitdir file", func(t *testing.T, repo string) {
			os.MkdirAll(filepath.Join(repo, ".git/worktrees/wt"), 0o755)
			os.WriteFile(filepath.Join(repo, ".git/worktrees/wt/gitdir"), []byte(hostGit+"\n"), 0o644)
		}, `project/.git/worktrees/wt/gitdir points to "` + hostGit + `", outside the template`},
		{"a .git file pointing at a host repository", func(t *testing.T, repo string) {
			os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
			os.WriteFile(filepath.Join(repo, "sub/.git"), []byte("gitdir: "+hostGit+"\n"), 0o644)
		}, `project/sub/.git points to "` + hostGit + `", outside the template`},
		{"a .git file climbing out", func(t *testing.T, repo string) {
			os.WriteFile(filepath.Join(repo, "..", ".git"), []byte("gitdir: ../../../elsewhere/.git\n"), 0o644)
		}, `.git points to "../../../elsewhere/.git", outside the template`},
		{".git a symlink to a host repository", func(t *testing.T, repo string) {
			os.MkdirAll(filepath.Join(repo, "other"), 0o755)
			os.Symlink(hostGit, filepath.Join(repo, "other/.git"))
		}, "project/other/.git is a symlink"},
		{"config including a host file", func(t *testing.T, repo string) {
			f, _ := os.OpenFile(filepath.Join(repo, ".git/config"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("[include]\n\tpath = " + filepath.Join(hostGit, "config") + "\n[includeIf \"gitdir:/\"]\n\tpath = ../../../../x\n[core]\n\tworktree = /etc\n")
			f.Close()
		}, `project/.git/config sets include.path = "` + hostGit + `/config", outside the template`},
		{"config includeIf climbing out", func(t *testing.T, repo string) {
			f, _ := os.OpenFile(filepath.Join(repo, ".git/config"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("[includeIf \"gitdir:/\"]\n\tpath = ../../../../x\n")
			f.Close()
		}, `sets includeif.gitdir:/.path = "../../../../x", outside the template`},
		{"config worktree elsewhere", func(t *testing.T, repo string) {
			f, _ := os.OpenFile(filepath.Join(repo, ".git/config"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("[core]\n\tworktree = /etc\n")
			f.Close()
		}, `sets core.worktree = "/etc", outside the template`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			repo := filepath.Join(dir, "tpl", "project")
			gitRepo(t, repo)
			tt.plant(t, repo)
			p := filepath.Join(dir, "task.yaml")
			doc := "task_id: t\ninitial_prompt: p\nsandbox:\n  workspace:\n    template_dir: tpl\nsuccess_criteria: [{type: file_exists, path: x}]\n"
			os.WriteFile(p, []byte(doc), 0o644)
			_, err := Load(p)
			if err == nil {
				t.Fatal("BREACH: the template validated")
			}
			if !strings.Contains(err.Error(), "task.yaml:5:19: sandbox.workspace.template_dir: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v\nwant at template_dir's line (5:19): %s", err, tt.want)
			}
		})
	}

	t.Run("a plain repository, nested or not, validates", func(t *testing.T) {
		dir := t.TempDir()
		gitRepo(t, filepath.Join(dir, "tpl"))
		gitRepo(t, filepath.Join(dir, "tpl", "nested"))
		p := filepath.Join(dir, "task.yaml")
		os.WriteFile(p, []byte("task_id: t\ninitial_prompt: p\nsandbox: {workspace: {template_dir: tpl}}\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644)
		if _, err := Load(p); err != nil {
			t.Fatal(err)
		}
	})
}
