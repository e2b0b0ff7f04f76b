package verifier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// A Terminal-Bench-style task's test.sh (installs curl and uv at test time, then uvx pytest)
// as the importer rewrites it runs offline in a verifier with the image's pytest: the answer
// scores 1, a wrong one 0. As written, it cannot run there (no network, no root): 0 either way.
func TestTerminalBenchTestShRunsOfflineAsImported(t *testing.T) {
	v := toolchainVerifier(t)
	e, _, ctx := newExecutor(t)
	out := t.TempDir()
	rs, err := importer.ImportHarbor([]string{"../importer/testdata/harbor/tb-pytest"}, out, importer.Options{})
	if err != nil || !rs[0].OK() {
		t.Fatalf("import: %v %v", err, rs)
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(b), "/task/tests/", "/workspace/tests/")
	}
	imported := read(filepath.Join(out, "tb-pytest", "tests", "test.sh"))
	tests := read(filepath.Join(out, "tb-pytest", "tests", "test_outputs.py"))
	original := strings.NewReplacer("/logs/verifier", "/tmp/logs/verifier", "/tests/", "/workspace/tests/").
		Replace(read("../importer/testdata/harbor/tb-pytest/tests/test.sh"))
	for _, c := range []struct {
		name, script, answer string
		want                 float64
	}{
		{"imported, right answer", imported, "42", 1},
		{"imported, wrong answer", imported, "41", 0},
		{"as written, right answer", original, "42", 0},
	} {
		s := snap(t, map[string]string{"tests/test.sh*": c.script, "tests/test_outputs.py": tests, "answer.txt": c.answer + "\n"})
		cr := container(harborCommand())
		cr.ScoreFromStdout = true
		cr.Timeout = 120 * time.Second
		vc := *v
		cr.Verifier = &vc
		sc, err := e.Execute(ctx, cr, s, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if sc.Score != c.want {
			t.Errorf("%s: score %v, want %v (%s)", c.name, sc.Score, c.want, sc.Details)
		}
		if c.name == "imported, right answer" && (sc.Output == nil || !strings.Contains(string(sc.Output.Stderr), "2 passed")) {
			t.Errorf("%s: pytest's report is not in the output: %+v", c.name, sc.Output)
		}
	}
}
