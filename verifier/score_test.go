package verifier

import (
	"strings"
	"testing"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/task"
)

func TestPytestInAnImageWithoutPytestSaysWhatToAdd(t *testing.T) {
	c := &task.Criterion{Type: task.Pytest, Spec: &task.PytestSpec{}}
	for _, r := range []*Run{
		{CommandRun: grader.CommandRun{ExitCode: 1, Stderr: []byte("ModuleNotFoundError: No module named 'pytest'\n")}},
		{CommandRun: grader.CommandRun{ExitCode: 127, Stderr: []byte("exec: python3: not found\n")}},
	} {
		score, details, err := scoreParts(scoreRun(c, r))
		if err != nil || score != 0 || !strings.Contains(details, "packages: [python3-pytest]") {
			t.Errorf("exit %d: score %v, details %q, err %v", r.ExitCode, score, details, err)
		}
	}
}

// isolation: process lends ceval's pytest to an image whose python3 has none: when it finds
// none, its details say what the test process said it lacked (this host lends none, or ceval's
// does not import in that python3), never that the image lacks pytest as if ceval lent none,
// nor that pytest was called wrongly (its exit 4 is the same);
// an image without python3 is refused before the test process starts, saying so and what to do.
func TestIsolatedPytestWithoutPytestSaysWhatItLacked(t *testing.T) {
	c := &task.Criterion{Type: task.Pytest, Spec: &task.PytestSpec{Isolation: task.IsolationProcess}}
	for _, tc := range []struct{ stderr, want string }{
		{"isolation: process: the image's python3 has no pytest, and this host lends none (install python3-pytest on it: scripts/containerd.sh install), or give the image pytest (RUN apt-get install -y python3-pytest)\n",
			"this host lends none"},
		{"isolation: process: the image's python3 3.5 has no pytest, and ceval's (pytest 7.2.1, for python3 3.7 to 3.13) does not import in it: ModuleNotFoundError(\"No module named 'pytest'\"); give the image pytest (RUN apt-get install -y python3-pytest)\n",
			"does not import in it"},
	} {
		r := &Run{CommandRun: grader.CommandRun{ExitCode: 4, Stderr: []byte(tc.stderr)}, Guarded: true, Started: true}
		score, details, err := scoreParts(scoreRun(c, r))
		if err != nil || score != 0 || !strings.Contains(details, tc.want) || strings.Contains(details, "the image lacks python3 or pytest") || strings.Contains(details, "called wrongly") {
			t.Errorf("score %v, details %q, err %v: want 0 saying %q, never that the image lacks pytest nor that pytest was called wrongly", score, details, err, tc.want)
		}
	}
	_, err := scoreRun(c, &Run{CommandRun: grader.CommandRun{ExitCode: 127, Stderr: []byte("isolation: process: the image has no python3 (ceval lends pytest, not python3): give the criterion packages: [python3-pytest] or an image with python3\n")}, Guarded: true})
	if err == nil || !strings.Contains(err.Error(), "has no python3") || !strings.Contains(err.Error(), "packages: [python3-pytest]") {
		t.Errorf("no python3: %v, want an error saying so and what to do", err)
	}
	if !strings.Contains(isolatedSetup, "has no python3 (ceval lends pytest, not python3): give the criterion packages: [python3-pytest]") {
		t.Error("isolatedSetup no longer says what to do without python3")
	}
}

func TestPytestScoreComesFromTheReportCheckedAgainstTheExitStatus(t *testing.T) {
	c := &task.Criterion{Type: task.Pytest, Spec: &task.PytestSpec{}}
	report := []byte(`<testsuites><testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b"><failure/></testcase></testsuite></testsuites>`)
	if score, details, _ := scoreParts(scoreRun(c, &Run{CommandRun: grader.CommandRun{ExitCode: 1}, Report: report})); score != 0.5 {
		t.Errorf("score %v (%s), want 0.5", score, details)
	}
	// exit 0 beside a report with a failure: something rewrote one of them
	if score, details, _ := scoreParts(scoreRun(c, &Run{CommandRun: grader.CommandRun{ExitCode: 0}, Report: report})); score != 0 || !strings.Contains(details, "inconsistent") {
		t.Errorf("score %v (%s), want 0 as inconsistent", score, details)
	}
	// a limit that stopped the run scores 0 whatever the report says
	if score, _, _ := scoreParts(scoreRun(c, &Run{CommandRun: grader.CommandRun{Limit: "timeout"}, Report: report})); score != 0 {
		t.Errorf("score %v after a limit, want 0", score)
	}
}

// An isolated pytest whose test process its children could read (the kernel did not make the
// unreadable copy non-dumpable) is not run, and that is ceval's side: an error, not a score.
func TestIsolatedPytestNotRunForWantOfIsolationIsAnError(t *testing.T) {
	c := &task.Criterion{Type: task.Pytest, Spec: &task.PytestSpec{Isolation: task.IsolationProcess}}
	r := &Run{CommandRun: grader.CommandRun{ExitCode: 3, Stderr: []byte(isolationUnsafe + "\n")}, Guarded: true}
	if _, err := scoreRun(c, r); err == nil {
		t.Error("scored, want an error")
	}
	// Started, the same exit and words (pytest's internal error, the agent's code printing
	// them) are the agent's: scored.
	r.Started = true
	if _, err := scoreRun(c, r); err != nil {
		t.Errorf("started: %v, want a score", err)
	}
}

// A harbor_reward run scores the reward its shell wrote, whatever test.sh's exit status, and
// not at all when a signal ended it.
func TestHarborScoreIsTheRewardUnlessASignalEndedTestSh(t *testing.T) {
	c := &task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{HarborReward: true}}
	if _, err := scoreRun(c, &Run{CommandRun: grader.CommandRun{ExitCode: 1, Stderr: []byte("harbor_reward: the image has no bash")}, Guarded: true}); err == nil {
		t.Error("a harness that did not start test.sh scored, want an error")
	}
	for _, tc := range []struct {
		r    Run
		want float64
		says string
	}{
		{Run{CommandRun: grader.CommandRun{ExitCode: 1}, Reward: []byte("0.75"), RewardFile: "reward.txt"}, 0.75, "from reward.txt"},
		{Run{CommandRun: grader.CommandRun{ExitCode: 0}, Reward: []byte(`{"a": 1, "b": 0}`), RewardFile: "reward.json"}, 0.5, "rewards"},
		{Run{CommandRun: grader.CommandRun{ExitCode: 137}, Reward: []byte("1"), RewardFile: "reward.txt"}, 0, "killed by signal 9"},
		{Run{CommandRun: grader.CommandRun{ExitCode: 0}}, 0, "wrote no reward.txt or reward.json"},
		{Run{CommandRun: grader.CommandRun{ExitCode: 0}, Reward: []byte("2"), RewardFile: "reward.txt"}, 0, "the first line of reward.txt"},
	} {
		tc.r.Guarded, tc.r.Started = true, true
		score, details, err := scoreParts(scoreRun(c, &tc.r))
		if err != nil || score != tc.want || !strings.Contains(details, tc.says) {
			t.Errorf("%+v: score %v (%s, %v), want %v saying %q", tc.r.CommandRun, score, details, err, tc.want, tc.says)
		}
	}
}

// TestShadowsEncodingsNamesEveryFormCPythonImports: a directory, module, bytecode or
// extension module named encodings, at any depth (any directory may be on PYTHONPATH), and
// whatever lies below such a directory; other names are copied.
func TestShadowsEncodingsNamesEveryFormCPythonImports(t *testing.T) {
	for p, want := range map[string]bool{
		"encodings": true, "encodings/__init__.py": true, "src/encodings/utf_8.py": true, "encodings.py": true,
		"lib/encodings.pyc": true, "encodings.cpython-311-x86_64-linux-gnu.so": true, "encodings.abi3.so": true,
		"encodings2.py": false, "my_encodings.py": false, "encodings.txt": false, "src/codecs.py": false, "docs/encodings.md": false,
	} {
		if got := shadowsEncodings(p); got != want {
			t.Errorf("shadowsEncodings(%q) = %v, want %v", p, got, want)
		}
	}
}

// A pytest criterion without isolation: process is lent ceval's pytest too (pytestBoot):
// when it finds none its details say what the test process lacked, and an image without
// python3 is told that ceval lends pytest, not python3.
func TestPlainPytestWithoutPytestSaysWhatItLacked(t *testing.T) {
	c := &task.Criterion{Type: task.Pytest, Spec: &task.PytestSpec{}}
	r := &Run{CommandRun: grader.CommandRun{ExitCode: 4, Stderr: []byte("pytest: the image's python3 has no pytest, and this host lends none (install python3-pytest on it: scripts/containerd.sh install), or give the image pytest (RUN apt-get install -y python3-pytest)\n")}}
	if score, details, err := scoreParts(scoreRun(c, r)); err != nil || score != 0 || !strings.Contains(details, "this host lends none") || strings.Contains(details, "called wrongly") {
		t.Errorf("score %v, details %q, err %v", score, details, err)
	}
	r = &Run{CommandRun: grader.CommandRun{ExitCode: 127, Stderr: []byte("exec: python3: not found\n")}}
	if score, details, err := scoreParts(scoreRun(c, r)); err != nil || score != 0 || !strings.Contains(details, "ceval lends pytest, not python3") {
		t.Errorf("no python3: score %v, details %q, err %v", score, details, err)
	}
	if !strings.Contains(pytestBoot, HarborPytestEnv) {
		t.Error("pytestBoot does not use ceval's lent pytest")
	}
}
