package verifier

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/importer"
	"ceval.dev/ceval/task"
)

// harborImage is the default image with Debian's bash-static as /bin/bash: Harbor runs
// tests/test.sh with bash, and harbor_reward needs one.
const harborImage = "ceval.local/test-verifier-harbor:1"

var harborImageOnce sync.Once

// harborCriterion is the criterion ceval import harbor writes, with tests/test.sh taken
// from the workspace (the grader_files' /task/tests is not mounted here).
func harborCriterion(t *testing.T, ctx context.Context, c *client.Client) *task.Criterion {
	t.Helper()
	var err error
	harborImageOnce.Do(func() {
		var bash []byte
		if bash, err = os.ReadFile(images.BashStatic); err != nil {
			return
		}
		_, err = images.BuildDefault(ctx, c, images.DefaultOptions{Name: harborImage, Extra: []images.File{{Path: "bin/bash", Mode: 0o755, Data: bash}}})
	})
	if err != nil {
		t.Fatalf("the test image with bash (apt-get install bash-static): %v", err)
	}
	cr := container(". /workspace/tests/test.sh")
	cr.Spec.(*task.RunCommandSpec).HarborReward = true
	cr.Verifier().Image = harborImage
	return cr
}

func scoreHarborTask(t *testing.T, files map[string]string) (float64, string) {
	t.Helper()
	e, cl, ctx := newExecutor(t)
	c := harborCriterion(t, ctx, cl)
	score, details, err := scoreParts(e.Execute(ctx, c, snap(t, files), nil))
	if err != nil {
		t.Fatal(err)
	}
	return score, details
}

// What test.sh's own shell writes is the score, whether by a builtin or by a program whose
// output it redirects; the tests' programs write the rest of /tmp/logs/verifier as usual.
func TestHarborRewardTestShWritesCounts(t *testing.T) {
	for _, tc := range []struct {
		name, testSh string
		want         float64
	}{
		{"echo", "mkdir -p /tmp/logs/verifier\necho '{}' > /tmp/logs/verifier/ctrf.json\ncat /tmp/logs/verifier/ctrf.json >/dev/null || exit 3\necho 1 > /tmp/logs/verifier/reward.txt\n", 1},
		{"a program's output redirected", "printf 0.25 > /tmp/logs/verifier/reward.txt\n", 0.25},
		{"reward.json from a subshell", "r=/tmp/logs/verifier\n( echo '{\"a\": 1, \"b\": 0.5}' > $r/reward.json )\n", 0.75},
		{"an EXIT trap, exit status ignored", "reward=0\ntrap 'echo \"$reward\" > /tmp/logs/verifier/reward.txt' EXIT\nreward=1\nexit 1\n", 1},
		{"none", "true\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			score, details := scoreHarborTask(t, map[string]string{"tests/test.sh": tc.testSh})
			if score != tc.want {
				t.Errorf("score %v (%s), want %v", score, details, tc.want)
			}
		})
	}
}

// The tests run the agent's code, which writes reward 1 and kills the shell running
// tests/test.sh before test.sh writes its own 0: the reward does not count.
func TestHarborRewardWrittenByCodeThatKillsTestShDoesNotCount(t *testing.T) {
	score, details := scoreHarborTask(t, map[string]string{
		"solution.sh*":  "#!/bin/sh\necho 1 > /tmp/logs/verifier/reward.txt\nkill -9 $PPID\n",
		"tests/test.sh": "./solution.sh\necho 0 > /tmp/logs/verifier/reward.txt\n",
	})
	if score != 0 || !strings.Contains(details, "killed by signal 9") {
		t.Errorf("score %v (%s): the reward of code that killed test.sh counted", score, details)
	}
}

// Each way the tests' code (the agent's solution.sh, run by test.sh as Harbor's tests run
// the agent's program) has of making its reward 1 count where test.sh writes 0. The first
// two scored 1 with the old command (`bash test.sh; kill -9 -1 ...; head -n 1 reward.txt`,
// stdout as the score), which killed the survivors only after test.sh ended and read the
// file they had last touched; the next scored 1 with a readable copy of bash, the one after
// with a listable reward directory.
func TestHarborRewardTheTestsCodeWritesDoesNotCount(t *testing.T) {
	const r = "/tmp/logs/verifier"
	for _, tc := range []struct{ name, solution string }{
		{"a survivor rewrites the reward after test.sh wrote it", `( i=0; while [ $i -lt 400 ]; do
  if [ "$(cat ` + r + `/reward.txt 2>/dev/null)" = 0 ] || [ -n "$(ls ` + r + `/zero 2>/dev/null)" ]; then rm -f ` + r + `/reward.txt; echo 1 > ` + r + `/reward.txt; exit; fi
  sleep 0.01; i=$((i+1)); done ) >/dev/null 2>&1 &
`},
		{"a read-only reward written first", "rm -f " + r + "/reward.txt; echo 1 > " + r + "/reward.txt; chmod 444 " + r + "/reward.txt; chmod 555 " + r + "\n"},
		{"reach into test.sh's shell for the reward directory", `for p in /proc/[0-9]*; do
  d=$(tr '\0' '\n' < $p/environ 2>/dev/null | sed -n 's/^CEVAL_HARBOR_REWARD=//p')
  [ -n "$d" ] && echo 1 > "$d/reward.txt" && rm -f ` + r + `/reward.txt
  for f in $p/fd/*; do [ -f "$f/reward.txt" ] || continue; echo 1 > "$f/reward.txt" && rm -f ` + r + `/reward.txt; done
done
`},
		{"search the filesystem for the reward directory", `for d in $(find / -xdev -type d 2>/dev/null) $HOME/.ceval-reward/*; do
  case $d in /proc*|/sys*) continue;; esac
  [ -w "$d" ] && [ "$d" != ` + r + ` ] && echo 1 > "$d/reward.txt" 2>/dev/null && rm -f ` + r + `/reward.txt
done
`},
		{"write 1 to every stdout in reach", "for f in /proc/[0-9]*/fd/1; do echo 1 > $f; done 2>/dev/null\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			score, details := scoreHarborTask(t, map[string]string{
				"solution.sh*":  "#!/bin/sh\n" + tc.solution,
				"tests/test.sh": "./solution.sh\necho 0 > " + r + "/reward.txt\ntouch " + r + "/zero\nsleep 1\n",
			})
			if score != 0 {
				t.Errorf("score %v (%s): the reward the tests' code wrote counted", score, details)
			}
		})
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
		cr := container(". /workspace/tests/test.sh")
		cr.Spec.(*task.RunCommandSpec).HarborReward = true
		cr.Execution().Timeout = 120 * time.Second
		vc := *v
		cr.GraderTier().Verifier = &vc
		sc, err := e.Execute(ctx, cr, s, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if sc.Score != c.want {
			t.Errorf("%s: score %v, want %v (%s)", c.name, sc.Score, c.want, sc.Details)
		}
		if c.name == "imported, right answer" && (sc.Output == nil || !strings.Contains(string(sc.Output.Stdout)+string(sc.Output.Stderr), "2 passed")) {
			t.Errorf("%s: pytest's report is not in the output: %+v", c.name, sc.Output)
		}
	}
}
