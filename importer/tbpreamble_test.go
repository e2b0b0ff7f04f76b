package importer

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
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
	os.WriteFile(filepath.Join(dir, "python3"), []byte(`#!/bin/sh
if [ "$1" = -c ]; then [ -n "$HAS_PYTEST" ]; exit $?; fi
if [ "$1" = -m ] && [ "$2" = pytest ]; then shift 2; echo "$*" >> "$PYTEST_LOG"; exit "${PYTEST_EXIT:-0}"; fi
exit 2
`), 0o755)
	return dir
}

type tbRun struct{ net, pytest, reward string }

// runTestSh runs a rewritten test.sh with shell under the stubs.
func runTestSh(t *testing.T, shell, script, stubs string, hasPytest bool, pytestExit string) tbRun {
	t.Helper()
	dir := t.TempDir()
	logs, tests := filepath.Join(dir, "logs"), filepath.Join(dir, "tests")
	os.MkdirAll(logs, 0o755)
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
	out, _ := cmd.CombinedOutput()
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(strings.ReplaceAll(string(b), dir, "DIR"))
	}
	r := tbRun{net: read("net"), pytest: read("pytest"), reward: read("logs/reward.txt")}
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
	}{
		{"apt-uvx-ctrf.sh", "bash", []int{5, 6, 8, 9}, []int{12}, "DIR/tests/test_outputs.py -rA", "1", "0", "", 0},
		{"debian-if-python-m.sh", "bash", []int{7, 9, 10}, []int{12}, "DIR/tests/test_outputs.py", "1.0", "0.0", "", 0},
		{"uv-pip-run.sh", "sh", []int{4, 5, 6}, []int{9}, "DIR/tests/test_outputs.py -q", "1", "0", "", 0},
		{"apt-extra.sh", "bash", []int{4, 5}, []int{6}, "DIR/tests/test_outputs.py", "1", "0", "apt-get update", 3},
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
				r := runTestSh(t, c.shell, out, stubs, true, code.exit)
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
	// A test.sh without uv is left as it is.
	plain, _ := os.ReadFile(filepath.Join("testdata", "tbpreamble", "plain.sh"))
	if out, g, c, _ := tbRewrite(string(plain)); out != string(plain) || g != nil || c != nil {
		t.Errorf("a test.sh without uv was rewritten:\n%s", out)
	}
}

// The Harbor import of a Terminal-Bench-style task rewrites both the paths and the preamble
// of its copied test.sh, one note each at test.sh:LINE; the input is untouched.
func TestImportHarborRewritesTheTerminalBenchPreamble(t *testing.T) {
	out := t.TempDir()
	rs, err := ImportHarbor([]string{"testdata/harbor/tb-pytest"}, out, Options{})
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
