package importer

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// tbStubs makes a PATH directory where every network tool test.sh's preamble calls (apt-get,
// curl, wget, uv, uvx) logs its call and fails, and python3 has pytest when HAS_PYTEST is
// set: `python3 -m pytest ARGS` logs ARGS and exits PYTEST_EXIT.
func tbStubs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"apt-get", "curl", "wget", "uv", "uvx", "sudo"} {
		os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho \"$(basename \"$0\") $*\" >> \"$NET_LOG\"\nexit 1\n"), 0o755)
	}
	// python3 -c PROG DIST...: the shim's check; it prints what HAS_PYTEST and HAS_DISTS lack.
	os.WriteFile(filepath.Join(dir, "python3"), []byte(`#!/bin/sh
if [ "$1" = -c ]; then
  [ -n "$HAS_PYTEST" ] || { echo pytest; exit 1; }
  shift 2; miss=
  for d in "$@"; do case " $HAS_DISTS " in *" $d "*) ;; *) miss="$miss $d" ;; esac; done
  [ -z "$miss" ] || { echo $miss; exit 1; }
  exit 0
fi
if [ "$1" = -m ] && [ "$2" = pytest ]; then shift 2; echo "$*" >> "$PYTEST_LOG"; exit "${PYTEST_EXIT:-0}"; fi
exit 2
`), 0o755)
	return dir
}

type tbRun struct{ net, pytest, reward, out string }

// runTestSh runs a rewritten test.sh with shell under the stubs.
func runTestSh(t *testing.T, shell, script, stubs string, hasPytest bool, pytestExit string, env ...string) tbRun {
	t.Helper()
	dir := t.TempDir()
	logs, tests := filepath.Join(dir, "logs"), filepath.Join(dir, "tests")
	os.MkdirAll(logs, 0o755)
	os.MkdirAll(tests, 0o755)
	script = strings.NewReplacer("@LOGS@", logs, "@TESTS@", tests).Replace(script)
	p := filepath.Join(dir, "test.sh")
	os.WriteFile(p, []byte(script), 0o755)
	cmd := exec.Command(shell, p)
	has := ""
	if hasPytest {
		has = "1"
	}
	cmd.Env = []string{"PATH=" + stubs + ":/usr/bin:/bin", "HOME=" + dir, "NET_LOG=" + filepath.Join(dir, "net"),
		"PYTEST_LOG=" + filepath.Join(dir, "pytest"), "HAS_PYTEST=" + has, "PYTEST_EXIT=" + pytestExit}
	cmd.Env = append(cmd.Env, env...)
	out, _ := cmd.CombinedOutput()
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(strings.ReplaceAll(string(b), dir, "DIR"))
	}
	r := tbRun{net: read("net"), pytest: read("pytest"), reward: read("logs/reward.txt"), out: strings.ReplaceAll(string(out), dir, "DIR")}
	if testing.Verbose() {
		t.Logf("%s %s: %+v\n%s", shell, filepath.Base(p), r, out)
	}
	return r
}

// The importer's rewrite of Terminal-Bench test.sh variants (written here in that pattern):
// with pytest in the image the tests run offline (no apt-get, curl, uv; pytest gets the test
// file and its own flags, CTRF dropped) and the reward follows pytest's exit; without, the
// original lines run; an apt-get of more than the installer's tools stays and is reported.
func TestTerminalBenchPreambleRunsOfflineWithTheImagesPytest(t *testing.T) {
	stubs := tbStubs(t)
	for _, c := range []struct {
		file, shell  string
		guarded      []int
		calls        []int
		pytestArgs   string
		pass, fail   string
		netOffline   string
		otherAptLine int
		dists        string // the packages besides pytest test.sh installs, which the image has
	}{
		{"apt-uvx-ctrf.sh", "bash", []int{5, 6, 8, 9}, []int{12}, "DIR/tests/test_outputs.py -rA", "1", "0", "", 0, ""},
		{"debian-if-python-m.sh", "bash", []int{7, 9, 10}, []int{12}, "DIR/tests/test_outputs.py", "1.0", "0.0", "", 0, ""},
		{"uv-pip-run.sh", "sh", []int{4, 5, 6}, []int{9}, "DIR/tests/test_outputs.py -q", "1", "0", "", 0, "pytest-timeout"},
		{"apt-extra.sh", "bash", []int{4, 5}, []int{6}, "DIR/tests/test_outputs.py", "1", "0", "apt-get update", 3, ""},
	} {
		t.Run(c.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "tbpreamble", c.file))
			if err != nil {
				t.Fatal(err)
			}
			out, guarded, calls, other := tbRewrite(string(src))
			if !reflect.DeepEqual(guarded, c.guarded) || !reflect.DeepEqual(calls, c.calls) {
				t.Errorf("guarded lines %v, calls %v; want %v, %v", guarded, calls, c.guarded, c.calls)
			}
			if c.otherAptLine != 0 && (len(other) != 1 || other[0].line != c.otherAptLine || !reflect.DeepEqual(other[0].pkgs, []string{"jq"})) {
				t.Errorf("apt-get beyond the tools: %+v, want jq at line %d", other, c.otherAptLine)
			}
			for _, code := range []struct{ exit, reward string }{{"0", c.pass}, {"1", c.fail}} {
				r := runTestSh(t, c.shell, out, stubs, true, code.exit, "HAS_DISTS="+c.dists)
				if r.net != c.netOffline || r.pytest != c.pytestArgs || r.reward != code.reward {
					t.Errorf("pytest exit %s: network calls %q, pytest args %q, reward %q; want %q, %q, %q",
						code.exit, r.net, r.pytest, r.reward, c.netOffline, c.pytestArgs, code.reward)
				}
			}
			// Without pytest in the image, the original preamble and uvx run (and fail here).
			r := runTestSh(t, c.shell, out, stubs, false, "0")
			if !strings.Contains(r.net, "curl") && !strings.Contains(r.net, "wget") || !strings.Contains(r.net, "uv") || r.pytest != "" {
				t.Errorf("without pytest: network calls %q, pytest %q: the original lines did not run", r.net, r.pytest)
			}
		})
	}
	// A test.sh without uv keeps its lines but its bare pytest call, routed to ceval_pytest
	// (tbbarepytest.go); a test.sh without pytest is left as it is.
	plain, _ := os.ReadFile(filepath.Join("testdata", "tbpreamble", "plain.sh"))
	if out, g, c, _ := tbRewrite(string(plain)); !strings.Contains(out, "\nceval_pytest python3 -m pytest @TESTS@/test_outputs.py &&") || g != nil || len(c) != 1 {
		t.Errorf("a test.sh without uv: its pytest call not routed:\n%s", out)
	}
	noPytest := "#!/bin/sh\nmake check && echo 1 > /logs/verifier/reward.txt\n"
	if out, g, c, _ := tbRewrite(noPytest); out != noPytest || g != nil || c != nil {
		t.Errorf("a test.sh without uv or pytest was rewritten:\n%s", out)
	}
}

// The Harbor import of a Terminal-Bench-style task rewrites both the paths and the preamble
// of its copied test.sh, one note each at test.sh:LINE; the input is untouched.
func TestImportHarborRewritesTheTerminalBenchPreamble(t *testing.T) {
	out := t.TempDir()
	// tb-pytest with pytest's -x: not exactly the standard pattern, so its test.sh is graded
	// with harbor_reward (the standard one is a hardened pytest criterion: harborpytestgrade.go)
	src := filepath.Join(t.TempDir(), "tb-pytest")
	copyDir(t, "testdata/harbor/tb-pytest", src)
	sh, _ := os.ReadFile(filepath.Join(src, "tests", "test.sh"))
	if err := os.WriteFile(filepath.Join(src, "tests", "test.sh"), []byte(strings.Replace(string(sh), " -rA\n", " -rA -x\n", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	rs, err := ImportHarbor([]string{src}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if !r.OK() {
		t.Fatalf("not OK: invalid %v; %v", r.Invalid, r.Problems)
	}
	var preamble *Problem
	for i, p := range r.Problems {
		if p.Field == "preamble" {
			preamble = &r.Problems[i]
		}
	}
	if preamble == nil || filepath.Base(preamble.File) != "test.sh" || preamble.Line != 11 ||
		!strings.Contains(preamble.Reason, "preamble at line 5, 6, 8, 9") || !strings.Contains(preamble.Reason, "verifier_network: host") {
		t.Fatalf("preamble note %+v in %v", preamble, r.Problems)
	}
	script, _ := os.ReadFile(filepath.Join(out, "tb-pytest", "tests", "test.sh"))
	for _, want := range []string{
		"ceval_uvx \\\n", "pytest --ctrf /tmp/logs/verifier/ctrf.json /task/tests/test_outputs.py -rA",
		`[ -n "$CEVAL_OFFLINE_PYTEST" ] || { curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh; }`,
	} {
		if !strings.Contains(string(script), want) {
			t.Errorf("rewritten test.sh lacks %q:\n%s", want, script)
		}
	}
	if orig, _ := os.ReadFile("testdata/harbor/tb-pytest/tests/test.sh"); strings.Contains(string(orig), "ceval_uvx") {
		t.Error("the input was rewritten")
	}
	if err := exec.Command("bash", "-n", filepath.Join(out, "tb-pytest", "tests", "test.sh")).Run(); err != nil {
		t.Errorf("bash -n: %v", err)
	}
}

// The other forms of installing the tests' packages at test time (uvx --with PKG, pip install
// -r requirements.txt, uv sync over the tests' pyproject.toml; conformance tasks written
// here): the import reads each package, and the rewritten test.sh runs offline only when the
// image's python3 has pytest and every one of them. With one missing it says which and runs
// the original lines (here they fail: no network), never pytest without the package.
func TestTerminalBenchPreambleChecksThePackagesTheTestsInstall(t *testing.T) {
	stubs := tbStubs(t)
	for _, c := range []struct {
		task, shell string
		dists       string // what the import must ask the image for
		pytestArgs  string
	}{
		{"tb-uvx-with", "bash", "numpy pyyaml", "DIR/tests/test_outputs.py -rA"},
		{"tb-pip-requirements", "sh", "numpy pyyaml", "DIR/tests/test_outputs.py -q"},
		{"tb-uv-sync", "bash", "numpy pytest-timeout pyyaml", "DIR/tests/test_outputs.py -rA"},
	} {
		t.Run(c.task, func(t *testing.T) {
			out := t.TempDir()
			rs, err := ImportHarbor([]string{filepath.Join("testdata", "conformance", "harbor", c.task)}, out, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var note string
			for _, p := range rs[0].Problems {
				if p.Field == "preamble" && strings.HasPrefix(p.Reason, "rewritten") {
					note = p.Reason
				}
			}
			if want := "has pytest, " + strings.ReplaceAll(c.dists, " ", ", "); !sameWords(note, c.dists) {
				t.Errorf("preamble note %q does not name %q", note, want)
			}
			data, err := os.ReadFile(filepath.Join(out, c.task, "tests", "test.sh"))
			if err != nil {
				t.Fatal(err)
			}
			script := strings.NewReplacer("/tmp/logs/verifier", "@LOGS@", "/task/tests", "@TESTS@").Replace(string(data))
			for _, code := range []struct{ exit, reward string }{{"0", "1"}, {"1", "0"}} {
				r := runTestSh(t, c.shell, script, stubs, true, code.exit, "HAS_DISTS="+c.dists)
				if r.net != "" || r.pytest != c.pytestArgs || r.reward != code.reward {
					t.Errorf("all present, pytest exit %s: network calls %q, pytest args %q, reward %q; want none, %q, %q\n%s",
						code.exit, r.net, r.pytest, r.reward, c.pytestArgs, code.reward, r.out)
				}
			}
			missing := strings.Fields(c.dists)[0]
			r := runTestSh(t, c.shell, script, stubs, true, "0", "HAS_DISTS="+strings.Join(strings.Fields(c.dists)[1:], " "))
			if r.pytest != "" || r.net == "" || !strings.Contains(r.out, "python3 lacks "+missing+",") || r.reward == "1" {
				t.Errorf("without %s: network calls %q, pytest %q, reward %q, output %q: want the original lines, no pytest, no 1 (none or 0) and the missing package named",
					missing, r.net, r.pytest, r.reward, r.out)
			}
		})
	}
}

// sameWords says the note's "has pytest, A, B, the tests" list holds exactly the words of want.
func sameWords(note, want string) bool {
	_, rest, ok := strings.Cut(note, "has pytest")
	if !ok {
		return false
	}
	list, _, _ := strings.Cut(rest, " the tests run")
	var got []string
	for _, w := range strings.Split(strings.Trim(list, ", "), ",") {
		if w = strings.TrimSpace(w); w != "" {
			got = append(got, w)
		}
	}
	ws := strings.Fields(want)
	slices.Sort(got)
	slices.Sort(ws)
	return slices.Equal(got, ws)
}
