package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestBundleBuildAndVerifyExitCodes(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "repo")
	for p, content := range map[string]string{
		"skills/fix/SKILL.md":      "Fix it.\n",
		"skills/fix/tests/t.py":    "assert 1\n",
		"commands/solution.md":     "the answer\n",
		"tests/test_hidden.py":     "outside the allowlist: not copied, not an offender\n",
		"hooks/reference/notes.md": "answers\n",
	} {
		os.MkdirAll(filepath.Join(src, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(src, p), []byte(content), 0o644)
	}
	os.Symlink("/etc/passwd", filepath.Join(src, "skills/fix/passwd"))
	syscall.Mkfifo(filepath.Join(src, "skills/pipe"), 0o644)
	out := filepath.Join(dir, "bundle")
	t.Cleanup(func() { os.Chmod(out, 0o755); os.Chmod(filepath.Join(out, "tree"), 0o755) })

	r := ceval(t, "bundle", "build", src, "--out", out)
	if r.code != exitInvalid {
		t.Fatalf("refused build: exit %d, want 2\n%s", r.code, r.stderr)
	}
	for _, o := range []string{"commands/solution.md", "hooks/reference", "skills/fix/passwd", "skills/fix/tests", "skills/pipe"} {
		if !strings.Contains(r.stderr, "\n  "+o+": ") {
			t.Errorf("offender %s not listed:\n%s", o, r.stderr)
		}
	}
	if _, err := os.Lstat(out); err == nil {
		t.Error("a refused build created the output")
	}

	r = ceval(t, "bundle", "build", src, "--out", out, "--allow", "skills,commands", "--deny", "tests/,solution*", "--deny", "pipe")
	if r.code != exitInvalid || strings.Contains(r.stderr, "hooks/reference") || !strings.Contains(r.stderr, "skills/pipe: denied") {
		t.Fatalf("--allow/--deny: exit %d\n%s", r.code, r.stderr)
	}

	for _, p := range []string{"skills/fix/tests", "skills/fix/passwd", "skills/pipe", "commands/solution.md"} {
		os.RemoveAll(filepath.Join(src, p))
	}
	r = ceval(t, "bundle", "build", src, "--out", out, "--allow", "skills,commands")
	if r.code != exitOK || !strings.Contains(r.stdout, "built "+out+": 1 files, 0 symlinks, tree sha256 ") {
		t.Fatalf("build: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = ceval(t, "bundle", "verify", out); r.code != exitOK || !strings.Contains(r.stdout, ": ok, ") {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(out, "tree/skills/fix/SKILL.md"), []byte("Fix it!\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if r = ceval(t, "bundle", "verify", out); r.code != exitFailure || !strings.Contains(r.stdout, "skills/fix/SKILL.md: content changed") {
		t.Fatalf("verify after a change: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = ceval(t, "bundle", "verify", src); r.code != exitInvalid || !strings.Contains(r.stderr, "not a built bundle") {
		t.Fatalf("verify of a source tree: exit %d\n%s", r.code, r.stderr)
	}
	if r = ceval(t, "bundle", "build", src); r.code != exitInvalid || !strings.Contains(r.stderr, "--out DIR is required") {
		t.Fatalf("build without --out: exit %d\n%s", r.code, r.stderr)
	}
}
