package verifier

import (
	"strings"
	"testing"

	"ceval.dev/ceval/importer"
)

// harborCommand is the command an imported Harbor task's criterion runs, with tests/test.sh
// taken from the workspace (the grader_files' /task/tests is not mounted here).
func harborCommand() string {
	return strings.ReplaceAll(importer.HarborVerifierCommand, "/task/tests/", "/workspace/tests/")
}

// The tests run the agent's code, which writes reward 1 and kills the shell running
// tests/test.sh before test.sh writes its own 0: the reward does not count.
func TestHarborRewardWrittenByCodeThatKillsTestShDoesNotCount(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{
		"solution.sh*":  "#!/bin/sh\necho 1 > /tmp/logs/verifier/reward.txt\nkill -9 $PPID\n",
		"tests/test.sh": "./solution.sh\necho 0 > /tmp/logs/verifier/reward.txt\n",
	})
	c := container(harborCommand())
	c.ScoreFromStdout = true
	score, details, err := scoreParts(e.Execute(ctx, c, s, nil))
	if err != nil {
		t.Fatal(err)
	}
	if score != 0 || !strings.Contains(details, "killed by signal 9") {
		t.Errorf("score %v (%s): the reward of code that killed test.sh counted", score, details)
	}
}

// A reward already there when test.sh starts (here planted by a workspace hook that runs
// before it, as a stand-in for anything that fills /tmp/logs first) is removed: a test.sh
// that writes none scores 0.
func TestHarborPlantedRewardIsIgnored(t *testing.T) {
	e, _, ctx := newExecutor(t)
	s := snap(t, map[string]string{"tests/test.sh": "true\n"})
	c := container("mkdir -p /tmp/logs/verifier && echo 1 > /tmp/logs/verifier/reward.txt && " + harborCommand())
	c.ScoreFromStdout = true
	score, details, err := scoreParts(e.Execute(ctx, c, s, nil))
	if err != nil {
		t.Fatal(err)
	}
	if score != 0 {
		t.Errorf("score %v (%s): a reward planted before test.sh counted", score, details)
	}
}
