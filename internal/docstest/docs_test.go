package docstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the module's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// docs are README.md and every docs/*.md, relative to the root.
func docs(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range files {
		out = append(out, filepath.Join("docs", filepath.Base(f)))
	}
	return out
}

// prose is a Markdown file's lines outside fenced code blocks, with inline code spans blanked
// (a link or heading inside code is text, not Markdown).
func prose(doc string) []string {
	var out []string
	fence := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			out = append(out, "")
			continue
		}
		if fence {
			out = append(out, "")
			continue
		}
		out = append(out, l)
	}
	return out
}

var (
	codeSpan  = regexp.MustCompile("`[^`]*`")
	heading   = regexp.MustCompile(`^#{1,6} (.*)$`)
	htmlID    = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)
	htmlTag   = regexp.MustCompile(`<[^>]+>`)
	inlineLnk = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	notSlug   = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	link      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	scheme    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// slug is the anchor GitHub gives a heading: its text lowercased, punctuation but '-' and '_'
// dropped, spaces as '-'.
func slug(h string) string {
	h = htmlTag.ReplaceAllString(h, "")
	h = inlineLnk.ReplaceAllString(h, "$1")
	h = strings.ToLower(strings.TrimSpace(strings.ReplaceAll(h, "`", "")))
	return strings.ReplaceAll(notSlug.ReplaceAllString(h, ""), " ", "-")
}

// anchors are the fragments a Markdown file defines: each heading's slug (a repeated one gets
// -1, -2, ...) and every <a id="...">.
func anchors(doc string) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	for _, l := range prose(doc) {
		for _, m := range htmlID.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		if m := heading.FindStringSubmatch(l); m != nil {
			s := slug(m[1])
			if n := seen[s]; n > 0 {
				out[s+"-"+strconv.Itoa(n)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
	}
	return out
}

func TestSlugIsGitHubs(t *testing.T) {
	for h, want := range map[string]string{
		"Migrating from Harbor / Terminal-Bench 2":         "migrating-from-harbor--terminal-bench-2",
		"Real userlands: packages, pip, Dockerfiles":       "real-userlands-packages-pip-dockerfiles",
		"Migrating from coder_eval":                        "migrating-from-coder_eval",
		"Criteria on what the agent did, and model judges": "criteria-on-what-the-agent-did-and-model-judges",
		"`ceval audit` in CI":                              "ceval-audit-in-ci",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	a := anchors("# A\n## A\n```\n# not a heading\n```\n<a id=\"x\"></a>text\n")
	for _, want := range []string{"a", "a-1", "x"} {
		if !a[want] {
			t.Errorf("anchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a line in a code block became an anchor")
	}
}

// TestEveryRelativeLinkResolves: every relative link in README.md and docs/*.md names a file
// or directory of the repository, and its #fragment an anchor of that file, so no link breaks
// when text moves between documents.
func TestEveryRelativeLinkResolves(t *testing.T) {
	root := repoRoot(t)
	files := docs(t, root)
	anchorsOf := map[string]map[string]bool{}
	read := func(rel string) (string, error) {
		data, err := os.ReadFile(filepath.Join(root, rel))
		return string(data), err
	}
	for _, f := range files {
		doc, err := read(f)
		if err != nil {
			t.Fatal(err)
		}
		anchorsOf[f] = anchors(doc)
	}
	checked := 0
	for _, f := range files {
		doc, _ := read(f)
		for n, l := range prose(doc) {
			l = codeSpan.ReplaceAllString(l, "``")
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
					continue
				}
				checked++
				path, frag, _ := strings.Cut(target, "#")
				rel := f
				if path != "" {
					rel = filepath.Clean(filepath.Join(filepath.Dir(f), path))
					if strings.HasPrefix(rel, "..") {
						t.Errorf("%s:%d: link %s leaves the repository", f, n+1, target)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
						t.Errorf("%s:%d: link %s: no file %s", f, n+1, target, rel)
						continue
					}
				}
				if frag == "" {
					continue
				}
				a, ok := anchorsOf[rel]
				if !ok {
					if !strings.HasSuffix(rel, ".md") {
						t.Errorf("%s:%d: link %s: a fragment into %s, which is not Markdown", f, n+1, target, rel)
						continue
					}
					doc, err := read(rel)
					if err != nil {
						t.Fatal(err)
					}
					a = anchors(doc)
					anchorsOf[rel] = a
				}
				if !a[frag] {
					t.Errorf("%s:%d: link %s: %s has no anchor #%s", f, n+1, target, rel, frag)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links found in %v: the link pattern no longer matches the documents", checked, files)
	}
}

// TestQuickStartIsTwoCommandsAndCIRunsTheTestOne: the README's quick start is two commands,
// the first setting up and running the examples (make demo), the second running the whole
// suite (make test), each a target of the Makefile; and .ci/run runs that second command, so
// what the README calls the test suite is what CI runs.
func TestQuickStartIsTwoCommandsAndCIRunsTheTestOne(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n## Quick start\n")
	if !ok {
		t.Fatal("README.md has no ## Quick start section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, block, _ := strings.Cut(sec, "```sh\n")
	block, _, ok = strings.Cut(block, "\n```")
	if !ok {
		t.Fatal("README.md's Quick start has no sh block")
	}
	var cmds []string
	for _, l := range strings.Split(block, "\n") {
		l, _, _ = strings.Cut(l, "#")
		if l = strings.TrimSpace(l); l != "" {
			cmds = append(cmds, l)
		}
	}
	if len(cmds) != 2 || cmds[0] != "make demo" || cmds[1] != "make test" {
		t.Fatalf("README.md's quick start is %q, want [make demo, make test]: one command that sets up and runs the examples, one that runs the whole suite", cmds)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		target := strings.TrimPrefix(c, "make ")
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
			t.Errorf("the quick start's %q: the Makefile has no target %s", c, target)
		}
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(cmds[1]) + `(\s|$)`).Match(ci) {
		t.Errorf(".ci/run does not run the quick start's test command %q (a line starting with it)", cmds[1])
	}
}
