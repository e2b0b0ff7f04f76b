package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// A Harbor tests/test.sh of the standard Terminal-Bench shape (install uv/pytest, run pytest
// over tests/test_*.py, write 1 or 0 to the reward file by pytest's exit status) grades
// exactly what a pytest criterion with all_or_nothing: true grades. As a harbor_reward
// criterion its pytest runs the tests, and so the agent's modules they import, in one
// process, whose code can rewrite every outcome and the exit status test.sh rewards (issue
// 32, the in-process forgery). The import emits such a test.sh's grade as a pytest criterion
// in ceval's hardened mode (sandbox: container, isolation: process) instead: the agent's code
// and the code that decides pass or fail never share a process. Any other test.sh keeps
// harbor_reward (and validate --strict's warning when it runs pytest).

// harborPytestGrade is what a standard test.sh runs: the tests (a file or directory of
// tests/, relative to the task) and the line of its pytest call.
type harborPytestGrade struct {
	tests string
	line  int
	ctrf  string // the file --ctrf names, when the call writes a CTRF report
}

var (
	hpgSet      = lazyregexp.New(`^set(\s+([-+][euxo]+|pipefail))+$`)
	hpgMkdir    = lazyregexp.New(`^mkdir\s+-p\s+/logs/verifier/?$`)
	hpgReward   = `>\s*/logs/verifier/reward\.txt`
	hpgEcho1    = lazyregexp.New(`^echo\s+1(\.0)?\s*` + hpgReward + `$`)
	hpgEcho0    = lazyregexp.New(`^echo\s+0(\.0)?\s*` + hpgReward + `$`)
	hpgEcho1Bar = lazyregexp.New(`^echo\s+1(\.0)?$`)
	hpgEcho0Bar = lazyregexp.New(`^echo\s+0(\.0)?$`)
	hpgFiR      = lazyregexp.New(`^fi\s*` + hpgReward + `$`)
	hpgStatus   = lazyregexp.New(`^([A-Za-z_][A-Za-z0-9_]*)=\$\?$`)
	hpgCond     = lazyregexp.New(`^\[\s+"?\$(\?|[A-Za-z_][A-Za-z0-9_]*)"?\s+(-eq|=)\s+0\s+\]$`)
	hpgTestFile = lazyregexp.New(`^/tests/((test_[A-Za-z0-9_]*|[A-Za-z0-9_]*_test)\.py)$`)
	hpgWithPkg  = lazyregexp.New(`^(pytest|pytest-json-ctrf)([=<>~!]=?[0-9][0-9A-Za-z.*]*)?$`)
	hpgPyFlag   = lazyregexp.New(`^(-r[a-zA-Z]+|-q|-qq|-v|-vv|-s|--tb=(short|long|line|no|native|auto)|--color=(yes|no|auto)|-p\s*no:cacheprovider)$`)
)

// harborStandardPytest says whether test.sh (its text; tests is the task's tests/
// directory) is exactly the standard pattern, and what it runs. Every line must be one of:
// the preamble (apt-get of curl/ca-certificates/wget, uv's installer and env file, a pip
// install of pytest), set, mkdir -p /logs/verifier, exit 0, one pytest call (uvx or uv run
// with only --python and --with pytest/pytest-json-ctrf, python3 -m pytest, pytest) over
// /tests's test files with output flags only, and the reward written from its status: 1 to
// /logs/verifier/reward.txt when it passed, 0 otherwise (&& ... ||, an if over $? or a
// variable holding it, an if over the call itself). Anything else is not the pattern.
func harborStandardPytest(text []byte, tests string) (harborPytestGrade, bool) {
	lines, nums := logicalLines(string(text))
	var toks []string
	var tokLine []int
	deb := debNone
	for i, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case l == "", strings.HasPrefix(l, "#"):
			continue
		case deb == debNone && (hpgSet.MatchString(l) || hpgMkdir.MatchString(l) || l == "exit 0"):
			continue
		}
		// the preamble's tools installed only on Debian: if [ -f /etc/debian_version ]; then
		// (preamble lines only) fi, on one line or several
		prev, ok := deb, false
		if deb, ok = hpgDebianBlock(deb, l); !ok {
			return harborPytestGrade{}, false
		} else if prev != debNone || deb != debNone || hpgDebianIf.MatchString(l) {
			continue
		}
		if pre, ok := hpgPreamble(l); !ok {
			return harborPytestGrade{}, false
		} else if pre {
			continue
		}
		if strings.ContainsAny(l, "#'\"`<(){}*") || strings.Contains(strings.ReplaceAll(l, "||", ""), "|") {
			return harborPytestGrade{}, false // quoting, pipes, subshells, globs: not the pattern
		}
		for _, st := range strings.Split(l, ";") {
			st = strings.TrimSpace(st)
			for _, kw := range []string{"then", "else", "do"} {
				if rest, ok := strings.CutPrefix(st, kw+" "); ok {
					toks, tokLine = append(toks, kw), append(tokLine, nums[i])
					st = strings.TrimSpace(rest)
				}
			}
			if st != "" {
				toks, tokLine = append(toks, st), append(tokLine, nums[i])
			}
		}
	}
	if len(toks) == 0 || deb != debNone {
		return harborPytestGrade{}, false
	}
	var g harborPytestGrade
	var ok bool
	// if PYTEST; then 1; else 0; fi
	if call, found := strings.CutPrefix(toks[0], "if "); found {
		if g, ok = hpgCall(call, tests); !ok {
			return g, false
		}
		g.line = tokLine[0]
		return g, hpgIfRest(toks[1:])
	}
	// PYTEST && echo 1 > R || echo 0 > R
	if call, rest, found := strings.Cut(toks[0], "&&"); found {
		one, zero, found := strings.Cut(rest, "||")
		if g, ok = hpgCall(strings.TrimSpace(call), tests); !ok || !found || len(toks) != 1 ||
			!hpgEcho1.MatchString(strings.TrimSpace(one)) || !hpgEcho0.MatchString(strings.TrimSpace(zero)) {
			return g, false
		}
		g.line = tokLine[0]
		return g, true
	}
	if g, ok = hpgCall(toks[0], tests); !ok {
		return g, false
	}
	g.line = tokLine[0]
	status, rest := "?", toks[1:]
	if len(rest) > 0 {
		if m := hpgStatus.FindStringSubmatch(rest[0]); m != nil {
			status, rest = m[1], rest[1:]
		}
	}
	if len(rest) == 0 {
		return g, false
	}
	// [ $status -eq 0 ] && echo 1 > R || echo 0 > R
	if cond, r, found := strings.Cut(rest[0], "&&"); found {
		one, zero, found := strings.Cut(r, "||")
		m := hpgCond.FindStringSubmatch(strings.TrimSpace(cond))
		return g, found && len(rest) == 1 && m != nil && m[1] == status &&
			hpgEcho1.MatchString(strings.TrimSpace(one)) && hpgEcho0.MatchString(strings.TrimSpace(zero))
	}
	cond, found := strings.CutPrefix(rest[0], "if ")
	m := hpgCond.FindStringSubmatch(strings.TrimSpace(cond))
	return g, found && m != nil && m[1] == status && hpgIfRest(rest[1:])
}

// hpgPreamble says whether l is a line of the preamble (pre), and !ok when it is one that
// installs what the tests need besides pytest (not the pattern).
func hpgPreamble(l string) (pre, ok bool) {
	if is, _ := tbPreambleLine(l); !is {
		return false, true
	}
	if m := tbPipPytest.FindStringSubmatch(l); m != nil {
		for _, w := range strings.Fields(m[1]) {
			if w = strings.Trim(w, `"'`); !strings.HasPrefix(w, "-") && !hpgWithPkg.MatchString(w) {
				return true, false
			}
		}
	}
	return true, true
}

// Where harborStandardPytest is in a Terminal-Bench variant's Debian-only preamble block.
const (
	debNone = iota // outside
	debIf          // after its if line, before then
	debBody        // between then and fi
)

// hpgDebianIf opens the block: if [ -f /etc/debian_version ] (-e too), then and what
// follows on the same line.
var hpgDebianIf = lazyregexp.New(`^if\s+\[\s+-[ef]\s+/etc/debian_version\s+\](?:\s*;\s*then(?:\s+(.*))?)?$`)

// hpgDebianBlock reads line l in state deb: the next state, and !ok when l breaks the
// block (anything but then, preamble lines and fi inside it). Outside the block, only an
// opening line changes the state.
func hpgDebianBlock(deb int, l string) (int, bool) {
	body := func(rest string) (int, bool) {
		rest = strings.TrimSpace(rest)
		closes := false
		if r, found := strings.CutSuffix(rest, "fi"); found && (r == "" || strings.HasSuffix(strings.TrimSpace(r), ";")) {
			rest, closes = strings.TrimSuffix(strings.TrimSpace(r), ";"), true
		}
		if rest = strings.TrimSpace(rest); rest != "" {
			for _, part := range strings.Split(rest, ";") {
				if part = strings.TrimSpace(part); part == "" {
					continue
				}
				if pre, ok := hpgPreamble(part); !pre || !ok {
					return deb, false
				}
			}
		}
		if closes {
			return debNone, true
		}
		return debBody, true
	}
	switch deb {
	case debNone:
		m := hpgDebianIf.FindStringSubmatch(l)
		switch {
		case m == nil:
			return debNone, true
		case !strings.Contains(l, "then"):
			return debIf, true
		}
		return body(m[1])
	case debIf:
		rest, found := strings.CutPrefix(l+" ", "then ")
		if !found {
			return deb, false
		}
		return body(rest)
	}
	return body(l)
}

// hpgIfRest matches the rest of an if over pytest's status: then, 1, else, 0, fi, each 1
// and 0 written to the reward, or both echoed and the fi redirected into it.
func hpgIfRest(t []string) bool {
	if len(t) != 5 || t[0] != "then" || t[2] != "else" {
		return false
	}
	if t[4] == "fi" {
		return hpgEcho1.MatchString(t[1]) && hpgEcho0.MatchString(t[3])
	}
	return hpgFiR.MatchString(t[4]) && hpgEcho1Bar.MatchString(t[1]) && hpgEcho0Bar.MatchString(t[3])
}

// hpgCall reads one pytest call: the runner (uvx, uv run, python3 -m pytest, pytest) and its
// arguments, which must be output flags, --ctrf FILE (a report the reward never reads) and
// test files of /tests (or /tests itself). The tests are tests/FILE for one file, tests for
// the directory or for every test file it holds.
func hpgCall(call, tests string) (harborPytestGrade, bool) {
	w := strings.Fields(call)
	switch {
	case len(w) > 0 && (w[0] == "uvx" || len(w) > 1 && w[0] == "uv" && w[1] == "run"):
		if w[0] == "uv" {
			w = w[1:]
		}
		w = w[1:]
		for len(w) > 0 && strings.HasPrefix(w[0], "-") {
			opt, val, eq := strings.Cut(w[0], "=")
			switch opt {
			case "-p", "--python":
				if !eq {
					if len(w) < 2 {
						return harborPytestGrade{}, false
					}
					w = w[1:]
				}
			case "-w", "--with":
				if !eq {
					if len(w) < 2 {
						return harborPytestGrade{}, false
					}
					val, w = w[1], w[1:]
				}
				for _, p := range strings.Split(val, ",") {
					if !hpgWithPkg.MatchString(p) {
						return harborPytestGrade{}, false
					}
				}
			case "-q", "--quiet", "--isolated", "--no-cache", "--offline":
			default:
				return harborPytestGrade{}, false
			}
			w = w[1:]
		}
		if len(w) > 2 && (w[0] == "python" || w[0] == "python3") && w[1] == "-m" && w[2] == "pytest" {
			w = w[3:]
		} else if len(w) > 0 && w[0] == "pytest" {
			w = w[1:]
		} else {
			return harborPytestGrade{}, false
		}
	case len(w) > 2 && (w[0] == "python" || w[0] == "python3") && w[1] == "-m" && w[2] == "pytest":
		w = w[3:]
	case len(w) > 0 && (w[0] == "pytest" || w[0] == "py.test"):
		w = w[1:]
	default:
		return harborPytestGrade{}, false
	}
	var files []string
	dir := false
	ctrf := ""
	for i := 0; i < len(w); i++ {
		a := w[i]
		switch {
		case a == "--ctrf" && i+1 < len(w):
			i++
			ctrf = w[i]
		case strings.HasPrefix(a, "--ctrf="):
			ctrf = strings.TrimPrefix(a, "--ctrf=")
		case hpgPyFlag.MatchString(a):
		case a == "/tests" || a == "/tests/":
			dir = true
		case hpgTestFile.MatchString(a):
			name := hpgTestFile.FindStringSubmatch(a)[1]
			if fi, err := os.Lstat(filepath.Join(tests, name)); err != nil || !fi.Mode().IsRegular() {
				return harborPytestGrade{}, false
			}
			files = append(files, name)
		default:
			return harborPytestGrade{}, false
		}
	}
	switch {
	case dir && len(files) == 0:
		return harborPytestGrade{tests: "tests", ctrf: ctrf}, true
	case dir || len(files) == 0:
		return harborPytestGrade{}, false
	case len(files) == 1:
		return harborPytestGrade{tests: "tests/" + files[0], ctrf: ctrf}, true
	}
	// several files: the directory, when they are every test file it holds
	all, err := filepath.Glob(filepath.Join(tests, "*.py"))
	if err != nil {
		return harborPytestGrade{}, false
	}
	var held []string
	for _, f := range all {
		if hpgTestFile.MatchString("/tests/" + filepath.Base(f)) {
			held = append(held, filepath.Base(f))
		}
	}
	sort.Strings(files)
	files = compactStrings(files)
	if strings.Join(files, ",") != strings.Join(held, ",") {
		return harborPytestGrade{}, false
	}
	return harborPytestGrade{tests: "tests", ctrf: ctrf}, true
}

func compactStrings(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// harborImageHasPython says the task's image is not known to lack python3, which the
// hardened mode runs pytest with: a docker_image or a Dockerfile's base other than Docker's
// ubuntu, debian, alpine and busybox, or a Dockerfile that installs python3. No image at
// all is ceval's default (busybox): none.
func harborImageHasPython(dir string, cfg map[string]tomlValue) bool {
	if img := cfg["environment.docker_image"].str; img != "" {
		return noPythonBase(img) == ""
	}
	df, err := readCapped(filepath.Join(dir, "environment", "Dockerfile"))
	if err != nil {
		return false
	}
	base := ""
	if m := tbFrom.FindStringSubmatch(string(df)); m != nil {
		base = m[1]
	}
	return dockerfileHasPython(df, base) || base != "" && noPythonBase(base) == ""
}

// harborPytestCriterion is the hardened pytest criterion for a standard test.sh (nil when
// test.sh is not the pattern, the verifier gets variables of task.toml's, or the image is
// known to have no python3), and the note saying so at test.sh's pytest line.
func harborPytestCriterion(dir string, cfg map[string]tomlValue, verifierEnv []string) (*yaml.Node, []Problem) {
	file := filepath.Join(dir, "tests", "test.sh")
	data, err := readCapped(file)
	if err != nil || len(verifierEnv) > 0 || !harborImageHasPython(dir, cfg) {
		return nil, nil
	}
	g, ok := harborStandardPytest(data, filepath.Join(dir, "tests"))
	if !ok {
		return nil, nil
	}
	crit := &yaml.Node{Kind: yaml.MappingNode, HeadComment: "Harbor's verifier: tests/test.sh is the standard pytest-then-reward pattern, graded as a pytest criterion in ceval's hardened mode (the agent's modules in a process of their own)."}
	set(crit, "type", scalar("pytest"))
	set(crit, "description", str("Harbor tests ("+g.tests+"); 1 when every test passes, as tests/test.sh's reward"))
	set(crit, "tests", str(g.tests))
	set(crit, "sandbox", scalar("container"))
	set(crit, "isolation", scalar("process"))
	set(crit, "all_or_nothing", scalar("true"))
	notes := []Problem{{File: file, Line: g.line, Field: "tests/test.sh",
		Reason: fmt.Sprintf(hardenedNote+" (install pytest, run it over %s, write 1 or 0 to the reward): graded as a pytest criterion with sandbox: container, isolation: process and all_or_nothing: true instead of harbor_reward, so the agent's code the tests import cannot rewrite their outcomes (pytest from the image, else ceval's own lent read-only; the preamble, uvx's options and pytest's output flags are not needed)", "/"+g.tests)}}
	if g.ctrf != "" {
		// Harbor keeps the CTRF report as a log beside the reward; the reward never reads it
		notes = append(notes, Problem{File: file, Line: g.line, Field: "tests/test.sh",
			Reason: fmt.Sprintf("--ctrf %s: the grade never read this CTRF report and the hardened pytest writes none (it runs no plugin of test.sh's): each test's outcome is in the criterion's details in result.json instead (pytest: N/M passed, every failed or erroring test named, up to 20); a tool that reads ctrf.json from Harbor's verifier logs must read result.json", g.ctrf)})
	}
	return crit, notes
}

// hardenedNote opens the note of a test.sh graded as a hardened pytest criterion.
const hardenedNote = "the standard pattern"

// hardenedPreambleNotes are the notes of rewriteTBPreamble the import keeps: all of them,
// unless the import graded test.sh as a hardened pytest criterion (its note among problems),
// which runs no test.sh: then only what is unmapped (a requirements file it cannot read, an
// image without python3).
func hardenedPreambleNotes(problems, notes []Problem) []Problem {
	hardened := false
	for _, p := range problems {
		hardened = hardened || p.Field == "tests/test.sh" && !p.Unmapped && strings.HasPrefix(p.Reason, hardenedNote)
	}
	if !hardened {
		return notes
	}
	var kept []Problem
	for _, n := range notes {
		if n.Unmapped {
			kept = append(kept, n)
		}
	}
	return kept
}

// harborHardened is the test.sh criterion crit (harbor_reward) the import emits, or, when
// test.sh is the standard pattern, the hardened pytest criterion with crit's services and
// timeout (the image and workdir are the task's, as crit's), with the note.
func harborHardened(crit *yaml.Node, dir string, cfg map[string]tomlValue, verifierEnv []string) (*yaml.Node, []Problem) {
	pc, notes := harborPytestCriterion(dir, cfg, verifierEnv)
	if pc == nil {
		return crit, nil
	}
	for _, k := range []string{"services", "timeout"} {
		if v := get(crit, k); v != nil {
			set(pc, k, v)
		}
	}
	return pc, notes
}
