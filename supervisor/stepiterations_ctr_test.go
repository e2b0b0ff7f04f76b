package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

// followUpStepsDoc is a two-step task for a command agent running script, with extra (its
// iterations or simulated_user): step 1 wants a.txt saying yes, step 2 b.txt holding b.
func followUpStepsDoc(script, extra string) string {
	return "task_id: stepruns\nagent:\n  type: command\n  command: [/bin/sh, -c, " + quote(script) + "]\n" +
		"sandbox:\n  limits: {timeout: 60s, memory_mb: 256, pids: 128, disk_mb: 64}\n" + extra + `stop_on_failure: true
steps:
  - name: first
    prompt: write a.txt
    success_criteria:
      - {type: file_contains, path: a.txt, includes: ["yes"], description: a.txt says yes}
  - name: second
    prompt: write b.txt
    success_criteria:
      - {type: file_contains, path: b.txt, includes: [b], description: b.txt holds b}
`
}

// followUpStepsScript keeps each prompt it got (prompt-STEP-RUN.txt) and writes a.txt
// saying yes only once its prompt says "yes"; step 2 it solves at once.
const followUpStepsScript = `echo "step $CEVAL_STEP run $CEVAL_ITERATION"; cp "$CEVAL_PROMPT_FILE" "prompt-$CEVAL_STEP-$CEVAL_ITERATION.txt"; ` +
	`case $CEVAL_STEP in 1) if grep -q yes "$CEVAL_PROMPT_FILE"; then echo yes > a.txt; else echo no > a.txt; fi;; 2) echo b > b.txt;; esac`

// TestMultiStepIterationsFollowUpWithinEachStep runs against the real containerd a two-step
// task with iterations: step 1's first run fails, the feedback from step 1's own criteria
// (never step 2's) brings a second run of step 1 that passes, then step 2 passes at its
// first run, its run count starting again at 1. Each run is a fresh attested container
// over the same workspace; step 1's first run is kept under task_steps/1/iterations/1/.
func TestMultiStepIterationsFollowUpWithinEachStep(t *testing.T) {
	res, err := runTask(t, followUpStepsDoc(followUpStepsScript, "iterations: {max: 2, feedback: descriptions}\n"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	read := func(rel string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(res.Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := stepStatuses(res); !slices.Equal(got, []string{"SUCCESS", "SUCCESS"}) || res.Status != record.StatusSuccess || res.Score != 1 {
		t.Fatalf("steps %v %+v, task %s %v", got, res.TaskSteps, res.Status, res.Score)
	}
	s1, s2 := res.TaskSteps[0].Iterations, res.TaskSteps[1].Iterations
	if len(s1) != 2 || s1[0].Status != record.StatusFailure || s1[0].Prompt != PromptInitial || s1[0].Over != "" ||
		s1[1].Status != record.StatusSuccess || s1[1].Prompt != PromptFeedback || s1[1].Over != "SUCCESS" {
		t.Fatalf("step 1's runs %+v", s1)
	}
	if len(s2) != 1 || s2[0].Status != record.StatusSuccess || s2[0].Prompt != PromptInitial {
		t.Fatalf("step 2's runs %+v", s2)
	}
	if len(res.Iterations) != 0 {
		t.Errorf("the run's own iterations %+v: a multi-step task's are its steps'", res.Iterations)
	}
	// The feedback names step 1's failed criterion only.
	if fb := read("workspace/prompt-1-2.txt"); !strings.Contains(fb, "a.txt says yes") || strings.Contains(fb, "b.txt holds b") {
		t.Errorf("step 1's feedback prompt: %q", fb)
	}
	if got := read("workspace/prompt-2-1.txt"); got != "write b.txt" {
		t.Errorf("step 2's first prompt %q", got)
	}
	if got := read("task_steps/1/iterations/1/workspace/a.txt"); got != "no\n" {
		t.Errorf("step 1's first run's snapshot: %q", got)
	}
	if got := read("task_steps/1/iterations/1/" + record.StdoutFile); got != "step 1 run 1\n" {
		t.Errorf("step 1's first run's stdout: %q", got)
	}
	if got := read("task_steps/1/workspace/a.txt"); got != "yes\n" {
		t.Errorf("step 1's snapshot: %q", got)
	}
	if got := read(record.StdoutFile); got != "step 2 run 1\n" {
		t.Errorf("step 2's stdout: %q", got)
	}
	if n := strings.Count(read(record.EventsFile), `"attested"`); n != 3 {
		t.Errorf("%d attestations, want one per run of the agent", n)
	}
	onDisk, err := record.ReadResult(res.Dir)
	if err != nil || len(onDisk.TaskSteps) != 2 || len(onDisk.TaskSteps[0].Iterations) != 2 {
		t.Fatalf("result.json %+v %v", onDisk.TaskSteps, err)
	}
}

// TestMultiStepIterationsSpentEndTheStep: a step still failing after its iterations ends
// the steps under stop_on_failure (step 2 SKIPPED), its runs recorded.
func TestMultiStepIterationsSpentEndTheStep(t *testing.T) {
	res, err := runTask(t, followUpStepsDoc(followUpStepsScript, "iterations: {max: 2, feedback: none}\n"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stepStatuses(res); !slices.Equal(got, []string{"FAILURE", record.StatusSkipped}) || res.Status != record.StatusFailure {
		t.Fatalf("steps %v, task %s", got, res.Status)
	}
	if s1 := res.TaskSteps[0].Iterations; len(s1) != 2 || s1[1].Over != "iterations.max 2 reached" {
		t.Fatalf("step 1's runs %+v", s1)
	}
}

// TestMultiStepSimulatedUserAnswersWithinAStep: with a simulated user (replay fixture), the
// user's answer to step 1's failed run is step 1's second prompt; step 2 passes at once and
// the user is not asked again.
func TestMultiStepSimulatedUserAnswersWithinAStep(t *testing.T) {
	files := map[string]string{"user.yaml": "answers:\n  - {done: false, prompt: \"Make a.txt say yes.\"}\n"}
	res, err := runTask(t, followUpStepsDoc(followUpStepsScript,
		"simulated_user: {instructions: \"You want a.txt to say yes.\", max_turns: 2, fixture: user.yaml}\n"), files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stepStatuses(res); !slices.Equal(got, []string{"SUCCESS", "SUCCESS"}) || res.Status != record.StatusSuccess {
		t.Fatalf("steps %v %+v, task %s", got, res.TaskSteps, res.Status)
	}
	if s1 := res.TaskSteps[0].Iterations; len(s1) != 2 || s1[1].Prompt != PromptSimulatedUser {
		t.Fatalf("step 1's runs %+v", s1)
	}
	b, err := os.ReadFile(filepath.Join(res.Dir, "workspace", "prompt-1-2.txt"))
	if err != nil || string(b) != "Make a.txt say yes." {
		t.Fatalf("step 1's second prompt %q %v", b, err)
	}
	calls, err := os.ReadFile(filepath.Join(res.Dir, SimulatedUserCallsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(strings.TrimSpace(string(calls)), "\n")); n != 1 || !strings.Contains(string(calls), "step 1 run 1") {
		t.Fatalf("simulated user calls (%d):\n%s", n, calls)
	}
}
