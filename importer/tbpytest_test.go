package importer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostDistPackages holds Debian's python3-pytest, what ceval's verifier lends an image whose
// python3 has none (verifier.HarborPytestPath): here the test's CEVAL_PYTEST points at it.
const hostDistPackages = "/usr/lib/python3/dist-packages"

// The rewritten test.sh runs ceval's own pytest (named by CEVAL_PYTEST) when the image's real
// python3 has none (here python3 -S: no site directory, so no pytest), offline: the tests pass
// or fail by the workspace, the reward follows. Without CEVAL_PYTEST, or with no python3 at
// all, the original lines run and test.sh says precisely why. Red without the fix: the
// original lines ran (network calls, reward 0) whenever the image's python3 lacked pytest.
func TestTerminalBenchPreambleRunsCevalsPytestWhenTheImageHasNone(t *testing.T) {
	if _, err := os.Stat(filepath.Join(hostDistPackages, "pytest-7.2.1.dist-info")); err != nil {
		t.Skip("Debian's python3-pytest 7.2.1 is not installed: scripts/containerd.sh install")
	}
	if err := exec.Command("/usr/bin/python3", "-S", "-c", "import pytest").Run(); err == nil {
		t.Fatal("python3 -S imports pytest: the test cannot stand in for an image without it")
	}
	src, err := os.ReadFile(filepath.Join("testdata", "tbpreamble", "apt-uvx-ctrf.sh"))
	if err != nil {
		t.Fatal(err)
	}
	script, _, calls, _ := tbRewrite(string(src))
	if len(calls) == 0 {
		t.Fatal("not rewritten")
	}
	stubs := tbStubs(t)
	// python3 is the host's without its site directories: an image whose python3 has no pytest.
	noPytest := filepath.Join(stubs, "python3")
	if err := os.WriteFile(noPytest, []byte("#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// run runs the script with the answer; top runs first, where harbor_reward's shell has
	// already gone into the workspace.
	run := func(answer, top string, env ...string) tbRun {
		t.Helper()
		s := strings.Replace(script, "\n", "\n"+top+"\n", 1)
		s = strings.Replace(s, "set +e\n", "set +e\nprintf '%s\\n' "+answer+" > @TESTS@/answer.txt\ncat > @TESTS@/test_outputs.py <<'PY'\n"+
			"import os\n\ndef test_answer():\n    assert open(os.path.join(os.path.dirname(__file__), 'answer.txt')).read().strip() == '42'\n\n"+
			"def test_ceval_pytest():\n    import pytest\n    assert pytest.__file__.startswith(os.environ['CEVAL_PYTEST'])\nPY\n", 1)
		return runTestSh(t, "bash", s, stubs, false, "0", env...)
	}
	for _, c := range []struct{ answer, reward string }{{"42", "1"}, {"41", "0"}} {
		r := run(c.answer, "", "CEVAL_PYTEST="+hostDistPackages)
		if r.net != "" || r.reward != c.reward || !strings.Contains(r.out, "the tests run with ceval's own") {
			t.Errorf("answer %s with ceval's pytest: network calls %q, reward %q, want none and %s\n%s", c.answer, r.net, r.reward, c.reward, r.out)
		}
		if c.reward == "1" && !strings.Contains(r.out, "2 passed") {
			t.Errorf("pytest did not run both tests:\n%s", r.out)
		}
	}
	// The agent's pytest.py in the directory test.sh runs from (the workspace) is neither the
	// image's pytest nor ceval's: the wrong answer still scores 0 (it scored 1 before, whether
	// the image had pytest or not: the check imported it from the working directory).
	fake := "cd @TESTS@/.. && printf 'import sys\\nprint(\"2 passed\")\\nsys.exit(0)\\n' > pytest.py"
	for _, env := range [][]string{{"CEVAL_PYTEST=" + hostDistPackages}, nil} {
		if r := run("41", fake, env...); r.reward == "1" {
			t.Errorf("the agent's pytest.py in the working directory (%v) scored 1:\n%s", env, r.out)
		}
	}
	r := run("42", "")
	if r.net == "" || r.reward == "1" || !strings.Contains(r.out, "lacks pytest (and ceval lends none") {
		t.Errorf("without CEVAL_PYTEST: network calls %q, reward %q: want the original lines and the reason\n%s", r.net, r.reward, r.out)
	}
	if err := os.WriteFile(noPytest, []byte("#!/bin/sh\nexit 127\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r = run("42", "", "CEVAL_PYTEST="+hostDistPackages)
	if r.net == "" || r.reward == "1" || !strings.Contains(r.out, "the image has no python3") {
		t.Errorf("without python3: network calls %q, reward %q: want the original lines and the reason\n%s", r.net, r.reward, r.out)
	}
}

// Docker's official images that ship no python3 are known by any spelling of their name; a
// python image, another repository or an unknown base is not claimed to lack one.
func TestNoPythonBase(t *testing.T) {
	for base, want := range map[string]string{
		"ubuntu:24.04": "ubuntu", "docker.io/library/debian:bookworm-slim": "debian", "alpine": "alpine",
		"busybox@sha256:0123": "busybox", "library/ubuntu": "ubuntu",
		"python:3.12-slim": "", "ghcr.io/me/ubuntu:1": "", "its base image": "", "127.0.0.1:5000/ubuntu:24.04": "",
	} {
		if got := noPythonBase(base); got != want {
			t.Errorf("noPythonBase(%q) = %q, want %q", base, got, want)
		}
	}
}
