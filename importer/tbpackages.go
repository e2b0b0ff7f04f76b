package importer

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"ceval.dev/ceval/internal/lazyregexp"
)

// A Terminal-Bench test.sh installs more than pytest at test time: `uvx --with numpy`,
// `pip install pandas`, `pip install -r requirements.txt`, `uv sync` over a pyproject.toml.
// The importer reads each of those statically (the requirements file and pyproject.toml from
// the task's own files) so that the rewritten test.sh runs offline only when the image's
// python3 has every one of them, says at test time which it lacks, and the import says which
// the task's Dockerfile does not install and how to provide it.

// tbReq is a Python distribution test.sh installs at test time.
type tbReq struct {
	name string // normalised (PEP 503): lowercase, runs of -_. as -
	spec string // as written (numpy==1.26)
	line int    // test.sh's line
	how  string // "uvx --with", "pip install", "requirements.txt", "uv sync (pyproject.toml)"
}

// tbUnread is a test.sh line whose packages the import cannot know (a requirements file or
// pyproject.toml not among the task's files).
type tbUnread struct {
	line int
	what string
}

var (
	// uvx or uv run (or uv tool run) and what follows
	tbUVXArgs = lazyregexp.New(`(?:^|[;&|(!]\s*|\b(?:if|then|else|do|time)\s+)(?:uvx|uv\s+(?:tool\s+)?run)\s+(.*)$`)
	// uv sync, with its arguments
	tbUVSync = lazyregexp.New(`(?:^|[;&|(!]\s*|\b(?:if|then|else|do|time)\s+)uv\s+sync\b(.*)$`)
	// uv add PKG...
	tbUVAdd = lazyregexp.New(`(?:^|[;&|(!]\s*|\b(?:if|then|else|do|time)\s+)uv\s+add\s+(.*)$`)
	// a requirement's distribution name: up to a version, extra, marker or URL
	tbReqName = lazyregexp.New(`^([A-Za-z0-9][A-Za-z0-9._-]*)`)
	// a quoted string in a TOML array
	tbQuoted = lazyregexp.New(`"((?:[^"\\]|\\.)*)"|'([^']*)'`)
	// cd DIR at a line's start (where uv sync finds its project)
	tbCd = lazyregexp.New(`^cd\s+["']?([^"'\s;&|]+)`)
)

// tbCTRFOnly are the plugins a test.sh installs only for --ctrf, which the offline rewrite
// drops: they need not be in the image.
var tbCTRFOnly = map[string]bool{"pytest-json-ctrf": true}

// normDist is PEP 503's normal form of a distribution name.
func normDist(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '-' || r == '_' || r == '.' }), "-")
}

// logicalLines joins backslash-continued lines: each logical line with its first line's
// number (1-based). Comment lines are dropped.
func logicalLines(text string) (lines []string, nums []int) {
	cur, start := "", 0
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		if cur == "" {
			start = i + 1
			if strings.HasPrefix(t, "#") {
				continue
			}
		}
		if strings.HasSuffix(t, `\`) {
			cur += strings.TrimSuffix(t, `\`) + " "
			continue
		}
		cur += t
		lines, nums = append(lines, cur), append(nums, start)
		cur = ""
	}
	if cur != "" {
		lines, nums = append(lines, cur), append(nums, start)
	}
	return lines, nums
}

// shellWords splits a command's words (quotes dropped; no expansion), up to a separator.
func shellWords(s string) []string {
	var words []string
	for _, w := range strings.Fields(s) {
		if w == "&&" || w == "||" || w == ";" || w == "|" || strings.HasPrefix(w, "#") {
			break
		}
		end := strings.HasSuffix(w, ";")
		words = append(words, strings.Trim(strings.TrimSuffix(w, ";"), `"'`))
		if end {
			break
		}
	}
	return words
}

// tbRequirements reads, from test.sh's text, every Python package it installs at test time
// (dir, the task's directory, gives the files it names: "" reads none). pytest itself and
// the CTRF plugin are left out (the shim checks pytest; --ctrf is dropped).
func tbRequirements(text, dir string) (reqs []tbReq, unread []tbUnread) {
	seen := map[string]bool{}
	add := func(spec string, line int, how string) {
		spec, _, _ = strings.Cut(spec, ";") // an environment marker
		spec = strings.Trim(strings.TrimSpace(spec), `"'`)
		m := tbReqName.FindStringSubmatch(spec)
		if m == nil {
			return
		}
		name := normDist(m[1])
		if name == "pytest" || tbCTRFOnly[name] || seen[name] {
			return
		}
		seen[name] = true
		reqs = append(reqs, tbReq{name: name, spec: spec, line: line, how: how})
	}
	file := func(p string, line int, how string) {
		data, label := tbTaskFile(dir, p, "")
		if data == nil {
			unread = append(unread, tbUnread{line, fmt.Sprintf("%s %s (not among the task's files)", how, p)})
			return
		}
		for _, s := range requirementsFile(data) {
			add(s, line, path.Base(label))
		}
	}
	cwd := ""
	lines, nums := logicalLines(text)
	for i, line := range lines {
		n := nums[i]
		if m := tbCd.FindStringSubmatch(line); m != nil {
			cwd = m[1]
		}
		for _, part := range tbChain.Regexp().Split(line, -1) {
			part = strings.TrimSpace(part)
			if m := tbPipPytest.FindStringSubmatch(part); m != nil {
				w := shellWords(m[1])
				for j := 0; j < len(w); j++ {
					switch {
					case w[j] == "-r" || w[j] == "--requirement":
						if j+1 < len(w) {
							j++
							file(w[j], n, "pip install -r")
						}
					case strings.HasPrefix(w[j], "--requirement="):
						file(strings.TrimPrefix(w[j], "--requirement="), n, "pip install -r")
					case w[j] == "-e" || w[j] == "--editable" || w[j] == "-c" || w[j] == "--constraint" || w[j] == "-i" || w[j] == "--index-url" ||
						w[j] == "--extra-index-url" || w[j] == "-f" || w[j] == "--find-links" || w[j] == "--target" || w[j] == "-t" || w[j] == "--python" || w[j] == "-p":
						j++
					case strings.HasPrefix(w[j], "-") || w[j] == ".":
					default:
						add(w[j], n, "pip install")
					}
				}
			}
		}
		if m := tbUVXArgs.FindStringSubmatch(line); m != nil {
			w := shellWords(m[1])
			for j := 0; j < len(w); j++ {
				switch {
				case w[j] == "--with" || w[j] == "-w":
					if j+1 < len(w) {
						j++
						for _, s := range strings.Split(w[j], ",") {
							add(s, n, "uvx --with")
						}
					}
				case strings.HasPrefix(w[j], "--with="):
					for _, s := range strings.Split(strings.TrimPrefix(w[j], "--with="), ",") {
						add(s, n, "uvx --with")
					}
				case w[j] == "--with-requirements":
					if j+1 < len(w) {
						j++
						file(w[j], n, "uvx --with-requirements")
					}
				case w[j] == "-p" || w[j] == "--python" || w[j] == "--from" || w[j] == "--project" || w[j] == "--directory" ||
					w[j] == "--group" || w[j] == "--extra" || w[j] == "--index-url" || w[j] == "--extra-index-url":
					j++
				case strings.HasPrefix(w[j], "-"):
				default:
					j = len(w) // the command: its own arguments are not uv's
				}
			}
		}
		if m := tbUVAdd.FindStringSubmatch(line); m != nil {
			for _, w := range shellWords(m[1]) {
				if !strings.HasPrefix(w, "-") {
					add(w, n, "uv add")
				}
			}
		}
		if m := tbUVSync.FindStringSubmatch(line); m != nil {
			project := cwd
			w := shellWords(m[1])
			for j := 0; j+1 < len(w); j++ {
				if w[j] == "--project" || w[j] == "--directory" {
					project = w[j+1]
				}
			}
			data, label := tbTaskFile(dir, path.Join(project, "pyproject.toml"), "tests/pyproject.toml")
			if data == nil {
				unread = append(unread, tbUnread{n, "uv sync: no pyproject.toml among the task's files where it runs"})
				continue
			}
			for _, s := range pyprojectDeps(data) {
				add(s, n, "uv sync ("+label+")")
			}
		}
	}
	return reqs, unread
}

// tbTaskFile reads a file test.sh names (a container path such as /tests/requirements.txt, or
// one relative to where test.sh runs) from the task's directory: /tests/X is tests/X; a
// relative X is tests/X, then X. fallback is tried last ("" for none). It returns nil when
// there is no such regular file.
func tbTaskFile(dir, p, fallback string) ([]byte, string) {
	if dir == "" {
		return nil, ""
	}
	var tries []string
	switch {
	case p == "/tests" || strings.HasPrefix(p, "/tests/"):
		tries = []string{path.Join("tests", strings.TrimPrefix(p, "/tests"))}
	case p == "/task/tests" || strings.HasPrefix(p, "/task/tests/"): // as the path rewrite left it
		tries = []string{path.Join("tests", strings.TrimPrefix(p, "/task/tests"))}
	case !path.IsAbs(p) && !strings.Contains(p, "$"):
		tries = []string{path.Join("tests", p), path.Clean(p)}
	}
	if fallback != "" {
		tries = append(tries, fallback)
	}
	for _, t := range tries {
		if strings.HasPrefix(t, "../") || t == ".." {
			continue
		}
		f := filepath.Join(dir, filepath.FromSlash(t))
		if info, err := os.Lstat(f); err != nil || !info.Mode().IsRegular() {
			continue
		}
		if data, err := readCapped(f); err == nil {
			return data, t
		}
	}
	return nil, ""
}

// requirementsFile lists a pip requirements file's requirements (options, nested -r and
// comments left out).
func requirementsFile(data []byte) []string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "-") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// pyprojectDeps lists a pyproject.toml's [project] dependencies, its [dependency-groups] (uv
// sync installs the dev group by default; every group is listed) and [tool.uv]
// dev-dependencies.
func pyprojectDeps(data []byte) []string {
	var out []string
	table := ""
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(stripComment(lines[i]))
		if strings.HasPrefix(line, "[") && !strings.Contains(line, "=") {
			table = strings.Trim(line, "[] ")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		want := table == "project" && k == "dependencies" || table == "dependency-groups" || table == "tool.uv" && k == "dev-dependencies"
		v = strings.TrimSpace(v)
		if !strings.HasPrefix(v, "[") {
			continue
		}
		for strings.Count(v, "[") > strings.Count(v, "]") && i+1 < len(lines) {
			i++
			v += " " + strings.TrimSpace(stripComment(lines[i]))
		}
		if !want {
			continue
		}
		for _, m := range tbQuoted.FindAllStringSubmatch(v, -1) {
			out = append(out, m[1]+m[2])
		}
	}
	return out
}

// debianPython names Debian's (and Ubuntu's) python3-NAME package of a distribution whose
// name differs from it; any other distribution d is python3-d.
var debianPython = map[string]string{
	"pyyaml": "yaml", "pillow": "pil", "beautifulsoup4": "bs4", "scikit-learn": "sklearn",
	"python-dateutil": "dateutil", "pyjwt": "jwt", "pyzmq": "zmq", "opencv-python": "opencv",
	"pyserial": "serial", "msgpack-python": "msgpack", "pycryptodome": "pycryptodome", "attrs": "attr",
}

// debianPackage is the Debian package that provides the distribution d (normalised).
func debianPackage(d string) string {
	if n, ok := debianPython[d]; ok {
		return "python3-" + n
	}
	return "python3-" + d
}

// dockerfileProvides says which of names (normalised distribution names, pytest among them)
// environment/Dockerfile's RUN lines install: pip/uv pip install NAME, or apt-get install
// python3-NAME (Debian's name: debianPackage). A pip install -r means it cannot tell (all are taken as provided).
func dockerfileProvides(df []byte, names []string) map[string]bool {
	got, apt := map[string]bool{}, map[string]bool{}
	unknown := false
	lines, _ := logicalLines(string(df))
	for _, l := range lines {
		for _, part := range tbChain.Regexp().Split(l, -1) {
			part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), "RUN "))
			if m := tbPipPytest.FindStringSubmatch(part); m != nil {
				for _, w := range shellWords(m[1]) {
					if w == "-r" || w == "--requirement" || strings.HasPrefix(w, "--requirement=") || w == "." || w == "-e" {
						unknown = true
					}
					if n := tbReqName.FindStringSubmatch(w); n != nil && !strings.HasPrefix(w, "-") {
						got[normDist(n[1])] = true
					}
				}
			}
			if m := tbApt.FindStringSubmatch(part); m != nil && m[1] == "install" {
				for _, w := range shellWords(m[2]) {
					apt[strings.Split(w, "=")[0]] = true
				}
			}
		}
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = unknown || got[n] || apt[debianPackage(n)]
	}
	return out
}

// tbShimFor is the shim with the check of reqs: the tests run offline when the image's
// python3 imports pytest and has each of reqs installed; otherwise it says which it lacks.
func tbShimFor(reqs []tbReq) string {
	names := make([]string, len(reqs))
	for i, r := range reqs {
		names[i] = r.name
	}
	slices.Sort(names)
	return strings.Replace(tbShim, "' @DISTS@ ", "' "+strings.Join(append(names, ""), " "), 1)
}
