package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

// multiStepDoc is a two-step task for a command agent running script: step 1 wants a.txt,
// step 2 (whose files bring given.txt) wants b.txt holding "b".
func multiStepDoc(script, extra string) string {
	return "task_id: twostep\nagent:\n  type: command\n  command: [/bin/sh, -c, " + quote(script) + "]\n" +
		"sandbox:\n  limits: {timeout: 60s, memory_mb: 256, pids: 128, disk_mb: 64}\n" + extra + `steps:
  - name: first
    prompt: write a.txt
    success_criteria:
      - {type: file_exists, path: a.txt}
  - name: second
    prompt: write b.txt
    files: step2
    success_criteria:
      - {type: file_contains, path: b.txt, includes: [b]}
`
}

// stepScript records in the workspace, per step, whether step 2's file is there and
// whether the agent may change it, then solves the steps named in $SOLVE... as the words
// of solve say.
func stepScript(solve string) string {
	return `echo "step $CEVAL_STEP $CEVAL_STEP_NAME: $(cat "$CEVAL_PROMPT_FILE")"; ` +
		`if [ -f given.txt ]; then echo "$CEVAL_STEP" >> seen.txt; echo mine >> given.txt && echo "$CEVAL_STEP" >> wrote.txt; fi; ` +
		`case " ` + solve + ` " in *" $CEVAL_STEP "*) ;; *) exit 1;; esac; ` +
		`case $CEVAL_STEP in 1) echo a > a.txt;; 2) echo b > b.txt;; esac`
}

var stepFiles = map[string]string{"step2/given.txt": "given\n"}

// TestMultiStepTaskAgainstContainerd: a command agent that solves step 1 and not step 2,
// and one that solves both, each step graded after its own turn in a fresh attested
// container over the same workspace; step 2's files appear (owned by the agent, which may
// change them) only from step 2; stop_on_failure skips step 2 after a failed step 1.
func TestMultiStepTaskAgainstContainerd(t *testing.T) {
	read := func(t *testing.T, res *record.Result, rel string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(res.Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	t.Run("solves step 1 only", func(t *testing.T) {
		res, err := runTask(t, multiStepDoc(stepScript("1"), ""), stepFiles, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := stepStatuses(res); !slices.Equal(got, []string{"SUCCESS", "FAILURE"}) || res.Status != "FAILURE" || res.Score != 0 {
			t.Fatalf("steps %v, task %s %v", got, res.Status, res.Score)
		}
		if got := read(t, res, "workspace/seen.txt"); got != "2\n" {
			t.Errorf("given.txt seen in steps %q; want only step 2", got)
		}
		if got := read(t, res, "workspace/given.txt"); got != "given\nmine\n" {
			t.Errorf("given.txt after step 2: %q; want the agent's line added to it", got)
		}
		if got := read(t, res, "task_steps/1/"+record.StdoutFile); got != "step 1 first: write a.txt\n" {
			t.Errorf("step 1's stdout %q", got)
		}
		if got := read(t, res, record.StdoutFile); got != "step 2 second: write b.txt\n" {
			t.Errorf("step 2's stdout %q", got)
		}
		if _, err := os.Stat(filepath.Join(res.Dir, "task_steps/1/workspace/given.txt")); err == nil {
			t.Error("step 1's snapshot holds step 2's file")
		}
		if n := strings.Count(read(t, res, record.EventsFile), `"attested"`); n != 2 {
			t.Errorf("%d attestations, want one per step's container", n)
		}
	})
	t.Run("solves both", func(t *testing.T) {
		res, err := runTask(t, multiStepDoc(stepScript("1 2"), "step_score: mean\n"), stepFiles, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := stepStatuses(res); !slices.Equal(got, []string{"SUCCESS", "SUCCESS"}) || res.Status != "SUCCESS" || res.Score != 1 {
			t.Fatalf("steps %v, task %s %v", got, res.Status, res.Score)
		}
	})
	t.Run("stop_on_failure", func(t *testing.T) {
		res, err := runTask(t, multiStepDoc(stepScript("2"), "stop_on_failure: true\n"), stepFiles, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := stepStatuses(res); !slices.Equal(got, []string{"FAILURE", record.StatusSkipped}) || res.Status != "FAILURE" {
			t.Fatalf("steps %v, task %s", got, res.Status)
		}
		if n := strings.Count(read(t, res, record.EventsFile), `"attested"`); n != 1 {
			t.Errorf("%d containers attested; want step 1's only", n)
		}
	})
}

// TestMultiStepAgentFillingItsWorkspaceEndsTheStepsNotTheRun: an agent that fills its
// workspace in step 1, so that step 2's files no longer fit, gets step 1's grade and step 2
// skipped (naming why): never an ERROR, which would drop the run from the pass rates and
// have it retried.
func TestMultiStepAgentFillingItsWorkspaceEndsTheStepsNotTheRun(t *testing.T) {
	script := `if [ "$CEVAL_STEP" = 1 ]; then echo a > a.txt; dd if=/dev/zero of=fill bs=1024 count=20000 2>/dev/null; fi; true`
	doc := strings.Replace(multiStepDoc(script, ""), "disk_mb: 64", "disk_mb: 8", 1)
	files := map[string]string{"step2/given.txt": strings.Repeat("x", 256<<10)}
	res, err := runTask(t, doc, files, Options{})
	if err != nil {
		t.Fatalf("%v (result %+v)", err, res)
	}
	if got := stepStatuses(res); !slices.Equal(got, []string{"SUCCESS", record.StatusSkipped}) || res.Status != "FAILURE" || !res.Complete {
		t.Fatalf("steps %v, task %s (complete %v): want step 1 graded, step 2 skipped, the agent's FAILURE", got, res.Status, res.Complete)
	}
	if !strings.Contains(res.TaskSteps[0].Over, "could not be copied into the workspace") {
		t.Errorf("why no step followed: %q", res.TaskSteps[0].Over)
	}
}
