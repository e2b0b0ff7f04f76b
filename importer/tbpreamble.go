package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"ceval.dev/ceval/internal/lazyregexp"
)

// The standard Terminal-Bench 2 tests/test.sh installs its test runner at test time (curl
// from apt, uv from astral.sh) and runs `uvx --with pytest ... pytest /tests/...`: it needs
// the network and root, which a verifier has only when the user gives it. The importer
// guards that preamble and routes uvx and uv through a shell function: when the image's
// python3 imports pytest, the preamble is skipped and the tests run offline with it;
// otherwise the original lines run as written.

// tbShim is inserted after test.sh's first line (its #! line) or at its top; @DISTS@ becomes
// the distributions test.sh installs besides pytest (tbRequirements).
const tbShim = `# ceval: the install preamble (apt-get curl, uv from astral.sh, pip) below runs only when this
# image's python3 lacks pytest or a package the tests install; with them, uvx/uv run pytest
# becomes python3 -m pytest, offline. An image whose python3 (3.7 to 3.13) has no pytest runs
# ceval's own, which ceval's verifier mounts read-only where $CEVAL_PYTEST says.
CEVAL_OFFLINE_PYTEST=
ceval_rc=0
ceval_missing=$(python3 -c '
import sys, os
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0] # the working directory (the workspace, say): no pytest of the agent counts
own = 0
try:
    import pytest
except Exception:
    p = os.environ.get("CEVAL_PYTEST", "")
    if p and not (3, 7) <= sys.version_info[:2] <= (3, 13):
        print("pytest (the pytest lent at %s runs in python3 3.7 to 3.13, not %d.%d)" % (p, sys.version_info[0], sys.version_info[1])); sys.exit(1)
    if not p:
        print("pytest"); sys.exit(1)
    sys.path.append(p)
    try:
        import pytest
    except Exception as e:
        print("pytest (the pytest lent at %s does not import in this python3 %d.%d: %r)" % (p, sys.version_info[0], sys.version_info[1], e)); sys.exit(1)
    own = 2
from importlib import metadata
m = []
for d in sys.argv[1:]:
    try:
        metadata.version(d)
    except Exception:
        m.append(d)
print(" ".join(m)); sys.exit(1 if m else own)
' @DISTS@ 2>/dev/null) || ceval_rc=$?
case $ceval_rc in
  0) CEVAL_OFFLINE_PYTEST=1 ;;
  2) CEVAL_OFFLINE_PYTEST=$CEVAL_PYTEST
     echo "ceval: the image's python3 has no pytest: the tests run with ceval's own (Debian's pytest 7.2.1, read-only at $CEVAL_PYTEST)" >&2 ;;
  127) echo "ceval: the image has no python3, which test.sh's pytest needs: its original install lines run, which need root and the network (verifier_network: host); offline, give the image python3 (RUN apt-get install -y python3)" >&2 ;;
  *) if [ "$ceval_missing" = pytest ] && [ -z "${CEVAL_PYTEST:-}" ]; then ceval_missing="pytest (and ceval lends none: its host lacks python3-pytest)"; fi
     echo "ceval: the image's python3 lacks ${ceval_missing:-pytest}, which test.sh installs at test time: its original install lines run, which need root and the network (verifier_network: host)" >&2 ;;
esac
ceval_uvx() {
  [ -n "$CEVAL_OFFLINE_PYTEST" ] || { uvx "$@"; return; }
  while [ $# -gt 0 ]; do
    case $1 in
      -p|--python|-w|--with|--from|--with-requirements|--with-editable|--index-url|--extra-index-url|--project|--directory|--group|--extra) [ $# -ge 2 ] || break; shift 2 ;;
      -*=*|-q|--quiet|--isolated|--no-cache|--offline|--no-project|--frozen|--locked|--active|--all-extras|--all-groups|--dev|--no-dev|--no-sync|--system) shift ;;
      *) break ;;
    esac
  done
  case ${1:-} in
    pytest|py.test) shift ;;
    python|python3|python3.*)
      if [ "${2:-}" = -m ] && [ "${3:-}" = pytest ]; then shift 3; else echo "ceval: uvx runs $*, not pytest: run with verifier_network: host so uv can fetch it" >&2; return 127; fi ;;
    *) echo "ceval: uvx runs ${1:-nothing}, not pytest: run with verifier_network: host so uv can fetch it" >&2; return 127 ;;
  esac
  ceval_n=$#
  while [ "$ceval_n" -gt 0 ]; do
    ceval_a=$1; shift; ceval_n=$((ceval_n-1))
    case $ceval_a in
      --ctrf) [ "$ceval_n" -gt 0 ] && { shift; ceval_n=$((ceval_n-1)); } ;;
      --ctrf=*) ;;
      *) set -- "$@" "$ceval_a" ;;
    esac
  done
  if [ "$CEVAL_OFFLINE_PYTEST" = 1 ]; then python3 -m pytest "$@"; return; fi
  python3 -c '
import sys, os
cwd = sys.path.pop(0) if sys.path and sys.path[0] in ("", os.getcwd()) else None
sys.path.append(sys.argv.pop(1))
import pytest, _pytest, pluggy, _pytest.config, _pytest.main, _pytest.python, _pytest.runner, _pytest.reports, _pytest.junitxml
if cwd is not None:
    sys.path.insert(0, cwd) # as python3 -m pytest has it, once pytest came from the lent directory
sys.argv[0] = "pytest"
sys.exit(pytest.console_main())' "$CEVAL_OFFLINE_PYTEST" "$@"
}
ceval_uv() {
  if [ -n "$CEVAL_OFFLINE_PYTEST" ]; then
    case ${1:-} in
      run) shift; ceval_uvx "$@"; return ;;
      sync|pip|add|venv) return 0 ;; # the image has what they would install
    esac
  fi
  uv "$@"
}
`

var (
	// a uvx or uv command word: at a line's start or after ; & | ( ! if then else do time
	tbUVCall = lazyregexp.New(`(^|[;&|(!]\s*|\b(?:if|then|else|do|time)\s+)(uvx|uv)(\s)`)
	// apt-get update / install, alone or chained with && or ;
	tbApt = lazyregexp.New(`^(?:sudo\s+)?(?:DEBIAN_FRONTEND=\S+\s+)?apt(?:-get)?\s+(update|install)\b(.*)$`)
	// uv's installer piped to a shell
	tbUVInstaller = lazyregexp.New(`^(?:curl|wget)\s[^|]*https://astral\.sh/uv/[^|\s]*install\.sh[^|]*\|\s*(?:env\s+\S+\s+)?(?:sh|bash)\s*$`)
	// the installer's environment file
	tbUVEnv = lazyregexp.New(`^(?:source|\.)\s+"?(?:\$HOME|\$\{HOME\}|~)/\.(?:local/bin|cargo)/env"?\s*$`)
	// pytest and its plugins installed with uv pip or pip
	tbPipPytest = lazyregexp.New(`^(?:uv\s+pip|pip3?|python3?\s+-m\s+pip)\s+install\s+(.*)$`)
	// the Dockerfile's last FROM's image (the stage that runs)
	tbFrom = lazyregexp.New(`(?im)^\s*FROM\s+(?:--\S+\s+)*(\S+)`)
	// the separators of a chained line
	tbChain = lazyregexp.New(`\s*(?:&&|;)\s*`)
)

// tbToolPackages are the packages the preamble installs with apt-get for uv's installer.
var tbToolPackages = map[string]bool{"curl": true, "ca-certificates": true, "wget": true}

// rewriteTBPreamble rewrites dst/tests/test.sh (a copy; src is the input task directory)
// when it runs its tests through uvx or uv: the shim is inserted, each preamble line is
// guarded, each uvx/uv call goes through the shim. It returns a note per rewritten script
// and per apt-get that installs more than the preamble's tools.
func rewriteTBPreamble(src, dst string) ([]Problem, error) {
	p := filepath.Join(dst, "tests", "test.sh")
	info, err := os.Lstat(p)
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxInput {
		return nil, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	out, guarded, calls, other, reqs, unread := tbRewriteTask(string(data), src)
	file := filepath.Join(src, "tests", "test.sh")
	var problems []Problem
	for _, o := range other {
		problems = append(problems, Problem{File: file, Line: o.line, Field: "apt-get",
			Reason: fmt.Sprintf("test.sh installs %s at test time: the verifier needs root and the network for it (verifier_network: host in ceval's config), or an image that has it", strings.Join(o.pkgs, " "))})
	}
	if len(calls) == 0 {
		return problems, nil
	}
	what := "uvx/uv run pytest at line " + joinInts(calls)
	if strings.Contains(out, "\nceval_pytest() {") {
		what = "uvx/uv run or bare pytest at line " + joinInts(calls) // tbbarepytest.go
	}
	if len(guarded) > 0 {
		what += "; preamble at line " + joinInts(guarded)
	}
	needs := "pytest"
	for _, r := range reqs {
		needs += ", " + r.name
	}
	problems = append(problems, Problem{File: file, Line: calls[0], Field: "preamble",
		Reason: "rewritten in the copy (" + what + "): when the image's python3 has " + needs + ", the tests run offline with python3 -m pytest " +
			"(the image's pytest, else ceval's own, lent read-only to a python3 3.7 to 3.13; uvx's --python/--with and --ctrf dropped; versions pinned by test.sh are not checked) and the preamble is skipped; otherwise the original lines run, which need root and the network (verifier_network: host)"})
	for _, u := range unread {
		problems = append(problems, Problem{File: file, Line: u.line, Field: "preamble", Unmapped: true,
			Reason: u.what + ": the import cannot tell which packages the tests need, so the offline run does not check them: put the file among the task's files (tests/), or install the packages into environment/Dockerfile"})
	}
	problems = append(problems, tbImageLacks(src, file, calls[0], reqs)...)
	return problems, os.WriteFile(p, []byte(out), info.Mode().Perm())
}

// tbImageLacks says which of pytest and reqs environment/Dockerfile installs none of: unless
// its base has them, the rewritten test.sh cannot run offline there.
func tbImageLacks(src, file string, line int, reqs []tbReq) []Problem {
	df := filepath.Join(src, "environment", "Dockerfile")
	data, err := readCapped(df)
	if err != nil {
		return nil
	}
	names := []string{"pytest"}
	how := map[string]string{"pytest": "uvx/uv run pytest"}
	lineOf := map[string]int{"pytest": line}
	for _, r := range reqs {
		names = append(names, r.name)
		how[r.name], lineOf[r.name] = r.how+" "+r.spec, r.line
	}
	has := dockerfileProvides(data, names)
	base := "its base image"
	if m := tbFrom.FindStringSubmatch(string(data)); m != nil {
		base = m[1]
	}
	python := dockerfileHasPython(data, base)
	var lacks, apt, pip []string
	lent := false
	for _, n := range names {
		if has[n] {
			continue
		}
		if n == "pytest" && python {
			lent = true // ceval's verifier lends its own to the image's python3
			continue
		}
		lacks = append(lacks, fmt.Sprintf("%s (%s, test.sh:%d)", n, how[n], lineOf[n]))
		apt, pip = append(apt, debianPackage(n)), append(pip, n)
	}
	var problems []Problem
	if lent {
		problems = append(problems, Problem{File: file, Line: line, Field: "preamble",
			Reason: "environment/Dockerfile installs python3 but no pytest: unless " + base + " has one, the tests run with ceval's own (Debian's pytest 7.2.1, which ceval's verifier mounts read-only for an image's python3 3.7 to 3.13 without pytest); tests written for a newer pytest may need the image's own (RUN apt-get install -y python3-pytest, or pip install pytest)"})
	}
	if len(lacks) == 0 {
		return problems
	}
	also := ""
	if !python && !has["pytest"] {
		apt = append([]string{"python3"}, apt...)
		also = " and python3 (ceval's verifier lends pytest to an image's python3, never a python3)"
		if repo := noPythonBase(base); repo != "" {
			// Known to have none: the task cannot pass offline, and online its apt-get
			// cannot run (UID 3000, read-only root), so it cannot pass at all.
			return append(problems, Problem{File: file, Line: line, Field: "preamble", Unmapped: true,
				Reason: fmt.Sprintf("test.sh runs pytest, which needs python3, and the image has none: environment/Dockerfile installs no python3 and its base %s ships none (Docker's %s images have no python3); ceval's verifier lends pytest to an image's python3, never a python3, and test.sh's own install (apt-get, uv) cannot run as harbor_reward's UID 3000 over the read-only root, so the tests fail: add RUN apt-get update && apt-get install -y %s to environment/Dockerfile",
					base, repo, strings.Join(apt, " "))})
		}
	}
	return append(problems, Problem{File: file, Line: line, Field: "preamble",
		Reason: fmt.Sprintf("environment/Dockerfile installs none of %s%s: unless %s has them, the tests cannot run offline; add them to the image (RUN apt-get install -y %s, or pip install %s). "+
			"Otherwise test.sh fetches them, which needs the internet (verifier_network: host, and a host that reaches astral.sh and PyPI) and curl already in the image: its apt-get cannot run (harbor_reward runs test.sh as UID 3000 over the image's read-only root)",
			strings.Join(lacks, ", "), also, base, strings.Join(apt, " "), strings.Join(pip, " "))})
}

// noPythonBase is the repository of base when it is one of Docker's official images known to
// ship no python3 (ubuntu, debian, alpine, busybox), else "".
func noPythonBase(base string) string {
	repo := strings.ToLower(base)
	if i := strings.IndexAny(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	repo = strings.TrimPrefix(strings.TrimPrefix(repo, "docker.io/"), "library/")
	switch repo {
	case "ubuntu", "debian", "alpine", "busybox":
		return repo
	}
	return ""
}

// tbPythonBase matches a base image that ships python3 (Docker's python images).
var tbPythonBase = lazyregexp.New(`(?i)(^|/)python:`)

// dockerfileHasPython says the Dockerfile's image has python3: its base is a python image, or
// it installs python3 (or a python3-* package, which depends on it) with apt-get.
func dockerfileHasPython(df []byte, base string) bool {
	if tbPythonBase.MatchString(base) {
		return true
	}
	lines, _ := logicalLines(string(df))
	for _, l := range lines {
		for _, part := range tbChain.Regexp().Split(l, -1) {
			part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), "RUN "))
			if m := tbApt.FindStringSubmatch(part); m != nil && m[1] == "install" {
				for _, w := range shellWords(m[2]) {
					if w = strings.Split(w, "=")[0]; w == "python3" || strings.HasPrefix(w, "python3-") || w == "python-is-python3" {
						return true
					}
				}
			}
		}
	}
	return false
}

type aptExtra struct {
	line int
	pkgs []string
}

// tbRewrite is rewriteTBPreamble on text: it returns the new text, the 1-based lines
// guarded and with a uvx/uv call, and apt-get lines that install more than the tools. With
// no uvx/uv call it returns the text unchanged.
func tbRewrite(text string) (out string, guarded, calls []int, other []aptExtra) {
	out, guarded, calls, other, _, _ = tbRewriteTask(text, "")
	return
}

// tbRewriteTask is tbRewrite reading the files test.sh names from the task directory dir
// ("" reads none); it also returns the packages test.sh installs and the lines whose
// packages it could not read.
func tbRewriteTask(text, dir string) (out string, guarded, calls []int, other []aptExtra, reqs []tbReq, unread []tbUnread) {
	reqs, unread = tbRequirements(text, dir)
	bare := false
	lines := strings.Split(text, "\n")
	next := make([]string, len(lines))
	continued := false
	for i, line := range lines {
		next[i] = line
		cont := continued
		continued = strings.HasSuffix(strings.TrimRight(line, " \t"), `\`)
		if cont {
			continue // inside a continued command: its first line decides
		}
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if ok, extra := tbPreambleLine(trimmed); ok && !continued {
			next[i] = leadingSpace(line) + `[ -n "$CEVAL_OFFLINE_PYTEST" ] || { ` + strings.TrimRight(trimmed, "; ") + `; }`
			guarded = append(guarded, i+1)
			continue
		} else if len(extra) > 0 {
			other = append(other, aptExtra{i + 1, extra})
		}
		if tbUVCall.MatchString(line) && !strings.Contains(line, "#") {
			next[i] = tbUVCall.ReplaceAllString(line, "${1}ceval_${2}${3}")
			calls = append(calls, i+1)
		} else if routed, ok := tbRouteBarePytest(line); ok {
			next[i], bare = routed, true // tbbarepytest.go
			calls = append(calls, i+1)
		}
	}
	if len(calls) == 0 {
		return text, nil, nil, other, nil, nil
	}
	at := 0
	if strings.HasPrefix(lines[0], "#!") {
		at = 1
	}
	shimText := tbShimFor(reqs)
	if bare {
		shimText += tbBareShim
	}
	shim := strings.Split(strings.TrimSuffix(shimText, "\n"), "\n")
	next = append(next[:at], append(shim, next[at:]...)...)
	return strings.Join(next, "\n"), guarded, calls, other, reqs, unread
}

// tbPreambleLine says whether a line (trimmed, not continued) is the preamble's: apt-get
// update or install of only the installer's tools, uv's installer, its env file, or pytest
// installed with pip. extra lists what an apt-get line installs beyond the tools.
func tbPreambleLine(line string) (bool, []string) {
	if line == "" || strings.Contains(line, "#") {
		return false, nil
	}
	if tbUVInstaller.MatchString(line) || tbUVEnv.MatchString(line) {
		return true, nil
	}
	if m := tbPipPytest.FindStringSubmatch(line); m != nil {
		// packages from an index (their names join the shim's check), not a local path
		for _, w := range strings.Fields(m[1]) {
			w = strings.Trim(w, `"'`)
			if !strings.HasPrefix(w, "-") && (strings.HasPrefix(w, ".") || strings.HasPrefix(w, "/") && !strings.HasSuffix(w, ".txt") ||
				strings.HasSuffix(w, ".whl") || strings.HasSuffix(w, ".tar.gz") || strings.Contains(w, "$")) {
				return false, nil
			}
		}
		return true, nil
	}
	var extra []string
	for _, part := range tbChain.Regexp().Split(line, -1) {
		if part == "" {
			continue
		}
		m := tbApt.FindStringSubmatch(part)
		if m == nil {
			return false, nil
		}
		if m[1] == "install" {
			for _, w := range strings.Fields(m[2]) {
				if !strings.HasPrefix(w, "-") && !tbToolPackages[w] {
					extra = append(extra, w)
				}
			}
		}
	}
	return len(extra) == 0, extra
}

func leadingSpace(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
