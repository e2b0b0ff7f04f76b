package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
)

// TestMultiStepIterationsRunWithinEachStep (no daemon): with iterations, step 1's failed
// first run is followed up with feedback from step 1's criteria, in a container whose
// environment says CEVAL_STEP=1 and CEVAL_ITERATION=2; step 2 starts its count again;
// after_agent logs once per run of each step.
func TestMultiStepIterationsRunWithinEachStep(t *testing.T) {
	var prompts []string
	rt := &fakeRuntime{agent: func(ws, home string) (*sandbox.Outcome, error) {
		p, err := os.ReadFile(filepath.Join(home, ".ceval", "prompt.md"))
		if err != nil {
			return nil, err
		}
		prompts = append(prompts, string(p))
		switch {
		case string(p) == "write b.txt":
			return exited(0), os.WriteFile(filepath.Join(ws, "b.txt"), []byte("b"), 0o644)
		case strings.Contains(string(p), "a.txt exists"):
			return exited(0), os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
		}
		return exited(1), nil
	}}
	doc := strings.Replace(multiStepTask("iterations: {max: 3, feedback: descriptions}\nafter_agent: [\"true\"]\n"),
		"{type: file_exists, path: a.txt}", "{type: file_exists, path: a.txt, description: a.txt exists}", 1)
	res := runMultiStep(t, doc, rt)
	if res.Status != record.StatusSuccess || !slices.Equal(stepStatuses(res), []string{"SUCCESS", "SUCCESS"}) {
		t.Fatalf("task %s, steps %+v", res.Status, res.TaskSteps)
	}
	if len(prompts) != 3 || !strings.Contains(prompts[1], feedbackIntro) || strings.Contains(prompts[1], "b.txt") {
		t.Fatalf("prompts %q: want step 1's, its feedback naming a.txt's criterion only, step 2's", prompts)
	}
	if len(rt.again) != 2 || !slices.Contains(rt.again[0].Env, "CEVAL_STEP=1") || !slices.Contains(rt.again[0].Env, "CEVAL_ITERATION=2") ||
		!slices.Contains(rt.again[1].Env, "CEVAL_STEP=2") || !slices.Contains(rt.again[1].Env, "CEVAL_ITERATION=1") {
		t.Fatalf("the runs after the first: %+v", rt.again)
	}
	if want := []string{"after_agent-1-step-1-iteration-1", "after_agent-1-step-1-iteration-2", "after_agent-1-step-2-iteration-1"}; !slices.Equal(rt.steps, want) {
		t.Fatalf("after_agent runs %v, want %v", rt.steps, want)
	}
	if it := res.TaskSteps[0].Iterations; len(it) != 2 || it[0].Status != record.StatusFailure || it[1].Prompt != PromptFeedback {
		t.Fatalf("step 1's runs %+v", it)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "task_steps/1/iterations/1/result.json")); err != nil {
		t.Fatal(err)
	}
}
