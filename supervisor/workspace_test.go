package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// openDir opens dir as task material, as task.Load does.
func openDir(t *testing.T, dir string) *task.Dir {
	t.Helper()
	d, err := task.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Agents mine `git log --all`, tags, stashes and dangling objects for the answer.
func TestTemplateGitRepoArrivesWithHeadHistoryOnly(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	taskDir := t.TempDir()
	tpl := filepath.Join(taskDir, "tpl")
	os.MkdirAll(tpl, 0o755)
	git(t, tpl, "init", "-q", "--initial-branch=trunk")
	os.WriteFile(filepath.Join(tpl, "a.txt"), []byte("one\n"), 0o644)
	git(t, tpl, "add", ".")
	git(t, tpl, "commit", "-qm", "first")
	git(t, tpl, "checkout", "-qb", "solution")
	os.WriteFile(filepath.Join(tpl, "answer.txt"), []byte("SECRET-ANSWER\n"), 0o644)
	git(t, tpl, "add", ".")
	git(t, tpl, "commit", "-qm", "the solution SECRET-ANSWER")
	git(t, tpl, "tag", "v-solution")
	git(t, tpl, "checkout", "-q", "trunk")
	os.WriteFile(filepath.Join(tpl, "a.txt"), []byte("two\n"), 0o644)
	git(t, tpl, "commit", "-qam", "second")
	os.WriteFile(filepath.Join(tpl, "a.txt"), []byte("stashed SECRET-ANSWER\n"), 0o644)
	git(t, tpl, "stash", "-q")
	os.WriteFile(filepath.Join(tpl, "a.txt"), []byte("work in progress\n"), 0o644)

	ws := t.TempDir()
	tk := &task.Task{Dir: taskDir, Sandbox: task.Sandbox{Workspace: task.Workspace{TemplateDir: openDir(t, tpl),
		StarterFiles: []task.StarterFile{{Path: "notes/hint.md", Content: "hint"}}}}}
	if err := PrepareWorkspace(ws, tk); err != nil {
		t.Fatal(err)
	}
	if got := git(t, ws, "log", "--all", "--format=%s"); strings.TrimSpace(got) != "second\nfirst" {
		t.Errorf("git log --all = %q, want only HEAD's history", got)
	}
	if got := git(t, ws, "for-each-ref", "--format=%(refname)"); strings.TrimSpace(got) != "refs/heads/trunk" {
		t.Errorf("refs = %q", got)
	}
	if got := git(t, ws, "rev-parse", "--abbrev-ref", "HEAD"); strings.TrimSpace(got) != "trunk" {
		t.Errorf("HEAD = %q", got)
	}
	grep := exec.Command("grep", "-r", "SECRET-ANSWER", ws)
	if out, _ := grep.CombinedOutput(); len(out) > 0 {
		t.Errorf("the answer is reachable in the workspace:\n%s", out)
	}
	// Objects are compressed; ask git for every object it has, reachable or not.
	objs := git(t, ws, "cat-file", "--batch-all-objects", "--batch-check")
	for _, line := range strings.Split(strings.TrimSpace(objs), "\n") {
		sha := strings.Fields(line)[0]
		if body := git(t, ws, "cat-file", "-p", sha); strings.Contains(body, "SECRET-ANSWER") {
			t.Errorf("object %s holds the answer", sha)
		}
	}
	data, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
	if string(data) != "work in progress\n" {
		t.Errorf("working tree not kept: %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "notes/hint.md")); string(data) != "hint" {
		t.Errorf("starter file = %q", data)
	}
}

func TestTemplateSymlinkIsCopiedAsLinkNotFollowed(t *testing.T) {
	taskDir := t.TempDir()
	tpl := filepath.Join(taskDir, "tpl")
	os.MkdirAll(tpl, 0o755)
	os.Symlink("/etc/passwd", filepath.Join(tpl, "passwd"))
	ws := t.TempDir()
	tk := &task.Task{Dir: taskDir, Sandbox: task.Sandbox{Workspace: task.Workspace{TemplateDir: openDir(t, tpl)}}}
	if err := PrepareWorkspace(ws, tk); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(ws, "passwd"))
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("want a symlink, got %v %v", fi, err)
	}
}

// A template planting a symlink must not let a starter file be written through it.
func TestStarterFileIsNotWrittenThroughPlantedSymlink(t *testing.T) {
	taskDir := t.TempDir()
	outside := t.TempDir()
	tpl := filepath.Join(taskDir, "tpl")
	os.MkdirAll(tpl, 0o755)
	os.Symlink(outside, filepath.Join(tpl, "out"))
	ws := t.TempDir()
	tk := &task.Task{Dir: taskDir, Sandbox: task.Sandbox{Workspace: task.Workspace{TemplateDir: openDir(t, tpl),
		StarterFiles: []task.StarterFile{{Path: "out/pwned", Content: "x"}}}}}
	if err := PrepareWorkspace(ws, tk); err == nil {
		t.Fatal("starter file written through a symlink")
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Fatal("file created outside the workspace")
	}
}

// A repository nested in the template (project/.git) must not arrive with its other
// branches either: found by the selftest's git-nested-repo attack.
func TestNestedTemplateGitRepoArrivesWithHeadHistoryOnly(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	taskDir := t.TempDir()
	repo := filepath.Join(taskDir, "tpl", "project")
	os.MkdirAll(repo, 0o755)
	git(t, repo, "init", "-q", "--initial-branch=main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\n"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "first")
	git(t, repo, "checkout", "-qb", "answer")
	os.WriteFile(filepath.Join(repo, "answer.txt"), []byte("NESTED-SECRET\n"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "answer")
	git(t, repo, "checkout", "-q", "main")
	os.WriteFile(filepath.Join(taskDir, "tpl", ".git"), []byte("gitdir: /etc\n"), 0o644) // a pointer file: never copied
	ws := t.TempDir()
	tk := &task.Task{Dir: taskDir, Sandbox: task.Sandbox{Workspace: task.Workspace{TemplateDir: openDir(t, filepath.Join(taskDir, "tpl"))}}}
	if err := PrepareWorkspace(ws, tk); err != nil {
		t.Fatal(err)
	}
	if got := git(t, filepath.Join(ws, "project"), "log", "--all", "--format=%s"); strings.TrimSpace(got) != "first" {
		t.Errorf("nested git log --all = %q, want only HEAD's history", got)
	}
	objs := git(t, filepath.Join(ws, "project"), "cat-file", "--batch-all-objects", "--batch-check")
	for _, line := range strings.Split(strings.TrimSpace(objs), "\n") {
		if body := git(t, filepath.Join(ws, "project"), "cat-file", "-p", strings.Fields(line)[0]); strings.Contains(body, "NESTED-SECRET") {
			t.Error("an object of the nested repository holds the answer")
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git")); err == nil {
		t.Error("a .git pointer file was copied")
	}
}

// hostRepoWithCanary makes a repository outside any task, whose HEAD's history holds cn.
func hostRepoWithCanary(t *testing.T, cn string) string {
	t.Helper()
	host := t.TempDir()
	git(t, host, "init", "-q", "--initial-branch=main")
	os.WriteFile(filepath.Join(host, "secret.txt"), []byte(cn+"\n"), 0o644)
	git(t, host, "add", ".")
	git(t, host, "commit", "-qm", "host history "+cn)
	return host
}

// assertNoCanaryInWorkspace fails if cn is in any file of ws or any object of its
// repository.
func assertNoCanaryInWorkspace(t *testing.T, ws, cn string) {
	t.Helper()
	if out, _ := exec.Command("grep", "-r", cn, ws).CombinedOutput(); len(out) > 0 {
		t.Errorf("BREACH: the host repository's canary is in the workspace:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git")); err != nil {
		return
	}
	objs := git(t, ws, "cat-file", "--batch-all-objects", "--batch-check")
	for _, line := range strings.Split(strings.TrimSpace(objs), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(git(t, ws, "cat-file", "-p", f[0]), cn) {
			t.Errorf("BREACH: object %s of the workspace's repository holds the host repository's canary", f[0])
		}
	}
}

// Validation refuses these templates (task.TestTemplateGitReachingOutsideIsRefusedAtTemplateDirLine);
// the workspace is built the same way whatever: host git never reads the template's .git,
// only a copy ceval made of it without following links, alternates or commondir, so a
// template that borrows a host repository's objects gets an error, not that history.
func TestTemplateGitBorrowingHostRepositoryNeverBringsItsHistory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, tt := range []struct {
		name string
		make func(t *testing.T, host, tpl string)
	}{
		{"objects symlinked", func(t *testing.T, host, tpl string) {
			git(t, filepath.Dir(tpl), "clone", "-q", "--no-local", host, tpl)
			os.RemoveAll(filepath.Join(tpl, ".git/objects"))
			os.Symlink(filepath.Join(host, ".git/objects"), filepath.Join(tpl, ".git/objects"))
		}},
		{"alternates", func(t *testing.T, host, tpl string) {
			git(t, filepath.Dir(tpl), "clone", "-q", "--shared", host, tpl) // writes objects/info/alternates
		}},
		{"refs symlinked, objects through alternates", func(t *testing.T, host, tpl string) {
			os.MkdirAll(tpl, 0o755)
			git(t, tpl, "init", "-q", "--initial-branch=main")
			os.RemoveAll(filepath.Join(tpl, ".git/refs"))
			os.Symlink(filepath.Join(host, ".git/refs"), filepath.Join(tpl, ".git/refs"))
			os.WriteFile(filepath.Join(tpl, ".git/objects/info/alternates"), []byte(filepath.Join(host, ".git/objects")+"\n"), 0o644)
		}},
		{"commondir", func(t *testing.T, host, tpl string) {
			os.MkdirAll(filepath.Join(tpl, ".git"), 0o755)
			os.WriteFile(filepath.Join(tpl, ".git/HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
			os.WriteFile(filepath.Join(tpl, ".git/commondir"), []byte(filepath.Join(host, ".git")+"\n"), 0o644)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cn := canary(t)
			host := hostRepoWithCanary(t, cn)
			taskDir := t.TempDir()
			tpl := filepath.Join(taskDir, "tpl")
			tt.make(t, host, tpl)
			os.Remove(filepath.Join(tpl, "secret.txt")) // the working tree is the template's own
			ws := t.TempDir()
			err := PrepareWorkspace(ws, &task.Task{Dir: taskDir, Sandbox: task.Sandbox{Workspace: task.Workspace{TemplateDir: openDir(t, tpl)}}})
			t.Logf("PrepareWorkspace: %v", err)
			assertNoCanaryInWorkspace(t, ws, cn)
		})
	}
}

// Config, hooks and attributes of a template's repository that would execute a command (an
// fsmonitor, a filter, hooks, ssh or pager commands, a packObjects hook) are never
// honoured: no marker file appears, and the workspace's repository has none of them.
func TestTemplateGitConfigThatExecutesIsNeverHonoured(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	taskDir, markers := t.TempDir(), t.TempDir()
	tpl := filepath.Join(taskDir, "tpl")
	os.MkdirAll(tpl, 0o755)
	git(t, tpl, "init", "-q", "--initial-branch=main")
	os.WriteFile(filepath.Join(tpl, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(tpl, ".gitattributes"), []byte("* filter=x diff=x merge=x\n"), 0o644)
	git(t, tpl, "add", ".")
	git(t, tpl, "commit", "-qm", "one")
	mark := func(name string) string { return "touch " + filepath.Join(markers, name) + "; cat" }
	for key, value := range map[string]string{
		"core.fsmonitor": mark("fsmonitor"), "filter.x.smudge": mark("smudge"), "filter.x.clean": mark("clean"),
		"filter.x.process": mark("process"), "filter.x.required": "true", "diff.x.textconv": mark("textconv"),
		"core.sshCommand": mark("ssh"), "core.pager": mark("pager"), "uploadpack.packObjectsHook": mark("packobjects"),
		"core.alternateRefsCommand": mark("altrefs"), "core.hooksPath": ".git/hooks", "gc.auto": "1",
	} {
		git(t, tpl, "config", key, value)
	}
	for _, h := range []string{"pre-upload-pack", "post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc", "post-merge", "fsmonitor-watchman"} {
		os.WriteFile(filepath.Join(tpl, ".git/hooks", h), []byte("#!/bin/sh\n"+mark("hook-"+h)+" >/dev/null\n"), 0o755)
	}
	ws := t.TempDir()
	if err := PrepareWorkspace(ws, &task.Task{Dir: taskDir, Sandbox: task.Sandbox{Workspace: task.Workspace{TemplateDir: openDir(t, tpl)}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadDir(markers); len(got) > 0 {
		t.Errorf("BREACH: the template's repository ran %d command(s): %v", len(got), got)
	}
	cfg, _ := os.ReadFile(filepath.Join(ws, ".git/config"))
	for _, key := range []string{"fsmonitor", "filter", "sshCommand", "pager", "hooksPath", markers} {
		if strings.Contains(string(cfg), key) {
			t.Errorf("the workspace's repository config holds %q:\n%s", key, cfg)
		}
	}
	if got := git(t, ws, "log", "--format=%s"); strings.TrimSpace(got) != "one" {
		t.Errorf("git log = %q", got)
	}
}
