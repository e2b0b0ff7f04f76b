package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// tree describes a source tree: a path ending in "/" is a directory, "-> T" a symlink to
// T, "|fifo" a named pipe, "=> P" a hard link to P (relative to the tree's parent),
// "x:" an executable file; anything else is a regular file's content.
type tree map[string]string

// makeTree creates t under a fresh directory and returns that directory.
func makeTree(tb testing.TB, t tree) string {
	tb.Helper()
	base := tb.TempDir()
	dir := filepath.Join(base, "src")
	mk := func(p string) { os.MkdirAll(filepath.Dir(p), 0o755) }
	os.Mkdir(dir, 0o755)
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := t[k]
		p := filepath.Join(dir, k)
		var err error
		switch {
		case strings.HasSuffix(k, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(v, "-> "):
			mk(p)
			err = os.Symlink(strings.TrimPrefix(v, "-> "), p)
		case strings.HasPrefix(v, "=> "):
			mk(p)
			err = os.Link(filepath.Join(base, strings.TrimPrefix(v, "=> ")), p)
		case v == "|fifo":
			mk(p)
			err = syscall.Mkfifo(p, 0o644)
		case strings.HasPrefix(v, "x:"):
			mk(p)
			err = os.WriteFile(p, []byte(strings.TrimPrefix(v, "x:")), 0o755)
		default:
			mk(p)
			err = os.WriteFile(p, []byte(v), 0o644)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// outDir returns a path for Build's output that is cleaned up even though Build makes it
// read-only.
func outDir(tb testing.TB) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "bundle")
	tb.Cleanup(func() { removeReadOnly(out) })
	return out
}

func build(tb testing.TB, t tree, o Options) (string, *Manifest, error) {
	tb.Helper()
	src := makeTree(tb, t)
	out := outDir(tb)
	m, err := Build(src, out, o)
	return out, m, err
}

// refused builds t and returns the offenders, failing the test when Build did not refuse
// or wrote anything.
func refused(t *testing.T, src tree) []Offender {
	t.Helper()
	out, _, err := build(t, src, Options{})
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("Build = %v, want a RefusedError", err)
	}
	if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused build left %s behind", out)
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 0 {
		t.Errorf("a refused build left files in the output's parent: %v", entries)
	}
	return re.Offenders
}

func offenderPaths(offs []Offender) []string {
	var ps []string
	for _, o := range offs {
		ps = append(ps, o.Path)
	}
	return ps
}

func wantOffenders(t *testing.T, got []Offender, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("offenders = %v, want exactly %d", got, len(want))
	}
	for _, o := range got {
		frag, ok := want[o.Path]
		if !ok {
			t.Errorf("unexpected offender %s", o)
			continue
		}
		if !strings.Contains(o.Reason, frag) {
			t.Errorf("offender %s: reason lacks %q", o, frag)
		}
	}
}

func TestBuildProjectsOnlyAllowlistedTrees(t *testing.T) {
	out, m, err := build(t, tree{
		"skills/fix/SKILL.md":          "---\nname: fix\n---\nFix it.\n",
		"skills/fix/scripts/run.sh":    "x:#!/bin/sh\necho run\n",
		"skills/fix/alias.md":          "-> SKILL.md",
		"skills/fix/dangling":          "-> nothing-here",
		"commands/go.md":               "Go.",
		".claude-plugin/plugin.json":   `{"name":"p"}`,
		"tests/test_fix.py":            "assert False",
		"solution/patch.diff":          "the answer",
		"README.md":                    "readme",
		".git/config":                  "[core]",
		"agents/":                      "",
		"hooks/hooks.json":             "{}",
		"skills/fix/scripts/helper.py": "print(1)",
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range m.Entries {
		got = append(got, e.Kind+" "+e.Mode+" "+e.Path+e.Target)
	}
	want := []string{
		"dir 0555 .claude-plugin", "file 0444 .claude-plugin/plugin.json",
		"dir 0555 agents",
		"dir 0555 commands", "file 0444 commands/go.md",
		"dir 0555 hooks", "file 0444 hooks/hooks.json",
		"dir 0555 skills", "dir 0555 skills/fix", "file 0444 skills/fix/SKILL.md",
		"symlink  skills/fix/alias.mdSKILL.md", "symlink  skills/fix/danglingnothing-here",
		"dir 0555 skills/fix/scripts", "file 0444 skills/fix/scripts/helper.py", "file 0555 skills/fix/scripts/run.sh",
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range []string{"tests", "solution", "README.md", ".git"} {
		if _, err := os.Lstat(filepath.Join(out, TreeDir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was projected", p)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, TreeDir, "skills/fix/SKILL.md"))
	if err != nil || !strings.Contains(string(data), "Fix it.") {
		t.Errorf("SKILL.md = %q, %v", data, err)
	}
	for p, mode := range map[string]os.FileMode{"": 0o555, TreeDir: 0o555, ManifestFile: 0o444, TreeDir + "/skills/fix": 0o555} {
		fi, err := os.Lstat(filepath.Join(out, p))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v (%v), want %o", p, fi.Mode(), err, mode)
		}
	}
	if _, err := Verify(out); err != nil {
		t.Errorf("Verify of a fresh build: %v", err)
	}
}

func TestBuildRefusesTestsDirInsideSkills(t *testing.T) {
	got := refused(t, tree{
		"skills/fix/SKILL.md":         "ok",
		"skills/fix/tests/test_a.py":  "assert answer == 42",
		"skills/fix/tests/expected.j": "{}",
	})
	wantOffenders(t, got, map[string]string{"skills/fix/tests": `denied by "tests/"`})
}

func TestBuildRefusesSolutionAndCheckerFilesInsideAllowedTree(t *testing.T) {
	got := refused(t, tree{
		"skills/fix/SKILL.md":         "ok",
		"skills/fix/solution.py":      "answer",
		"skills/fix/Solutions/a.txt":  "answer",
		"skills/fix/RESOLUTION.md":    "how it was fixed",
		"skills/fix/check_output.sh":  "grader",
		"skills/fix/test_fix.py":      "hidden test",
		"commands/fix_test.go":        "hidden test",
		"agents/reference/answer.txt": "answer",
		"hooks/run.sh":                "ok",
	})
	wantOffenders(t, got, map[string]string{
		"skills/fix/solution.py":     `"solution*"`,
		"skills/fix/Solutions":       `"solution*"`,
		"skills/fix/RESOLUTION.md":   `"resolution.md"`,
		"skills/fix/check_output.sh": `"check_*"`,
		"skills/fix/test_fix.py":     `"test_*"`,
		"commands/fix_test.go":       `"*_test.*"`,
		"agents/reference":           `"reference*"`,
	})
}

func TestBuildRefusesSymlinkToEtcPasswdInSkill(t *testing.T) {
	got := refused(t, tree{"skills/fix/SKILL.md": "ok", "skills/fix/passwd": "-> /etc/passwd"})
	wantOffenders(t, got, map[string]string{"skills/fix/passwd": "absolute symlink"})
}

func TestBuildRefusesSymlinkEscapingTree(t *testing.T) {
	got := refused(t, tree{
		"skills/fix/SKILL.md": "ok",
		"skills/fix/secret":   "-> ../../secret",
		"skills/fix/sibling":  "-> ../../commands/go.md", // another allowlisted tree is still outside its own
		"commands/go.md":      "go",
		"secret":              "the answer key",
	})
	wantOffenders(t, got, map[string]string{
		"skills/fix/secret":  "leaves its tree skills/",
		"skills/fix/sibling": "leaves its tree skills/",
	})
}

func TestBuildRefusesSymlinkThatLeavesThroughAnotherLink(t *testing.T) {
	// Lexically "up/../secret" stays in skills/; the kernel resolves up first, to skills/
	// itself, so its ".." is the repository root.
	got := refused(t, tree{
		"skills/SKILL.md": "ok",
		"skills/up":       "-> .",
		"skills/esc":      "-> up/../secret",
		"skills/abs":      "-> hop",
		"skills/hop":      "-> /etc",
		"skills/loop1":    "-> loop2",
		"skills/loop2":    "-> loop1",
		"secret":          "the answer key",
	})
	wantOffenders(t, got, map[string]string{
		"skills/esc":   "leaves its tree",
		"skills/abs":   "absolute symlink",
		"skills/hop":   "absolute symlink",
		"skills/loop1": "too many levels",
		"skills/loop2": "too many levels",
	})
}

func TestBuildRefusesSymlinkIntoDeniedPath(t *testing.T) {
	got := refused(t, tree{
		"skills/fix/SKILL.md":          "ok",
		"skills/fix/expected":          "-> ../golden/solution.txt",
		"skills/golden/solution.txt":   "the answer",
		"skills/fix/hidden":            "-> ../tests",
		"skills/tests/test_answers.py": "x",
	})
	wantOffenders(t, got, map[string]string{
		"skills/fix/expected":        "denied path skills/golden/solution.txt",
		"skills/fix/hidden":          "denied path skills/tests",
		"skills/golden/solution.txt": `"solution*"`,
		"skills/tests":               `"tests/"`,
	})
}

func TestBuildRefusesHardLinkToFileOutside(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "answers.txt")
	os.WriteFile(outside, []byte("the answer key"), 0o600)
	src := filepath.Join(base, "src")
	os.MkdirAll(filepath.Join(src, "skills/fix"), 0o755)
	os.WriteFile(filepath.Join(src, "skills/fix/SKILL.md"), []byte("ok"), 0o644)
	if err := os.Link(outside, filepath.Join(src, "skills/fix/notes.txt")); err != nil {
		t.Fatal(err)
	}
	_, err := Build(src, outDir(t), Options{})
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("Build = %v, want refused", err)
	}
	wantOffenders(t, re.Offenders, map[string]string{"skills/fix/notes.txt": "hard-linked file (2 links)"})
}

func TestBuildRefusesFIFO(t *testing.T) {
	got := refused(t, tree{"skills/fix/SKILL.md": "ok", "skills/fix/pipe": "|fifo"})
	wantOffenders(t, got, map[string]string{"skills/fix/pipe": "special file (fifo)"})
}

func TestBuildRefusesSymlinkedTopLevelTree(t *testing.T) {
	got := refused(t, tree{"elsewhere/SKILL.md": "ok", "skills": "-> elsewhere"})
	wantOffenders(t, got, map[string]string{"skills": "not a directory"})
}

func TestBuildListsEveryOffenderAtOnce(t *testing.T) {
	got := refused(t, tree{
		"skills/a/SKILL.md": "ok",
		"skills/a/tests/":   "",
		"skills/a/passwd":   "-> /etc/passwd",
		"skills/a/up":       "-> ../../x",
		"skills/a/pipe":     "|fifo",
		"hooks/solution.sh": "x",
	})
	if ps := offenderPaths(got); !slices.Equal(ps, []string{"hooks/solution.sh", "skills/a/passwd", "skills/a/pipe", "skills/a/tests", "skills/a/up"}) {
		t.Errorf("offenders = %v", got)
	}
}

func TestBuildOptions(t *testing.T) {
	src := makeTree(t, tree{"skills/a/SKILL.md": "ok", "skills/a/references/api.md": "docs", "extra/x.md": "x"})
	tests := []struct {
		name    string
		opts    Options
		wantErr string
		paths   []string
	}{
		{"deny replaces the defaults", Options{Deny: []string{"tests/"}}, "", []string{"skills", "skills/a", "skills/a/SKILL.md", "skills/a/references", "skills/a/references/api.md"}},
		{"allow names the trees", Options{Allow: []string{"extra"}}, "", []string{"extra", "extra/x.md"}},
		{"allow must be a top-level name", Options{Allow: []string{"skills/a"}}, "top-level directory", nil},
		{"bad glob", Options{Deny: []string{"[x"}}, "syntax error", nil},
		{"nothing to project", Options{Allow: []string{"commands"}}, "none of the allowlisted trees", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Build(src, outDir(t), tc.opts)
			if tc.wantErr != "" {
				var ie *InputError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Build = %v, want an InputError with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range m.Entries {
				got = append(got, e.Path)
			}
			if !slices.Equal(got, tc.paths) {
				t.Errorf("paths = %v, want %v", got, tc.paths)
			}
		})
	}
}

func TestBuildRefusesNonEmptyOutput(t *testing.T) {
	src := makeTree(t, tree{"skills/a/SKILL.md": "ok"})
	out := t.TempDir()
	os.WriteFile(filepath.Join(out, "keep"), []byte("x"), 0o644)
	_, err := Build(src, out, Options{})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Build = %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(out, "keep")); string(data) != "x" {
		t.Error("Build touched a non-empty output directory")
	}
}

func TestBuildRefusesNamesAManifestCannotHold(t *testing.T) {
	got := refused(t, tree{"skills/a/SKILL.md": "ok", "skills/a/bad\xff.md": "x", "skills/a/l": "-> x\xfe"})
	wantOffenders(t, got, map[string]string{"skills/a/bad?.md": "not valid UTF-8", "skills/a/l": "target is not valid UTF-8"})
}
