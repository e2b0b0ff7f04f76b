package experiment

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// TestRephraseOfAMultiStepTaskRecordsEveryStepsPrompt: a rephrase over a multi-step task
// rephrases each step's prompt (a fixture's answers one per step, after the plain task's),
// and prompts.json's record holds every step's prompt (step_prompts, plan.json's too), which a resume reuses
// for each step; a record without them (one made for the task's first prompt only) is not
// reused, and a changed later step is another input.
func TestRephraseOfAMultiStepTaskRecordsEveryStepsPrompt(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"plain.yaml": "task_id: plain\ninitial_prompt: do it\nsuccess_criteria: [{type: file_exists, path: a}]\n",
		"ms.yaml": "task_id: ms\nsteps:\n  - {name: one, prompt: first, success_criteria: [{type: file_exists, path: a}]}\n" +
			"  - {name: two, prompt: second, success_criteria: [{type: file_exists, path: b}]}\n",
		"f.yaml":   "answers: [PLAIN, ONE, TWO]\n",
		"exp.yaml": "experiment_id: e\ntasks: [plain.yaml, ms.yaml]\nprompt_mutations:\n  - {variant_id: r, type: rephrase, instructions: x, fixture: f.yaml}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func() *task.Experiment {
		e, err := task.LoadExperiment(filepath.Join(dir, "exp.yaml"), task.ExperimentOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	entry := func(e *task.Experiment, taskID string) task.Entry {
		for _, en := range e.Entries {
			if en.Variant == "r" && en.Task.ID == taskID {
				return en
			}
		}
		t.Fatalf("no entry r/%s", taskID)
		return task.Entry{}
	}
	steps := func(en task.Entry) []string {
		var out []string
		for _, s := range en.Task.TaskSteps {
			out = append(out, s.Prompt)
		}
		return out
	}
	e := load()
	made, _, err := ResolvePrompts(context.Background(), e, PromptsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(made.Entries) != 2 || made.Entries[0].Prompt != "PLAIN" || made.Entries[0].StepPrompts != nil {
		t.Fatalf("the plain task's record: %+v", made.Entries)
	}
	ms := made.Entries[1]
	if ms.TaskID != "ms" || ms.Prompt != "ONE" || !slices.Equal(ms.StepPrompts, []string{"ONE", "TWO"}) || ms.Mode != "replay" {
		t.Fatalf("the multi-step task's record: %+v", ms)
	}
	if got := steps(entry(e, "ms")); !slices.Equal(got, []string{"ONE", "TWO"}) || entry(e, "ms").Task.Prompt != "ONE" {
		t.Fatalf("the steps' prompts the agent gets: %q (task %q)", got, entry(e, "ms").Task.Prompt)
	}
	// plan.json holds every step's prompt too (ceval plan --json)
	plan, err := NewPlan(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, pe := range plan.Entries {
		if pe.Variant == "r" && pe.TaskID == "ms" && (pe.Prompt != "ONE" || !slices.Equal(pe.StepPrompts, []string{"ONE", "TWO"})) ||
			pe.TaskID == "plain" && pe.StepPrompts != nil || pe.Variant != "r" && (pe.Prompt != "" || pe.StepPrompts != nil) {
			t.Errorf("plan entry %+v", pe)
		}
	}
	// written and read back as a resume does
	if err := record.WriteJSONAtomic(filepath.Join(dir, record.PromptsFile), made); err != nil {
		t.Fatal(err)
	}
	back, err := record.ReadPrompts(dir)
	if err != nil {
		t.Fatal(err)
	}
	e2 := load()
	again, _, err := ResolvePrompts(context.Background(), e2, PromptsOptions{Reuse: back})
	if err != nil {
		t.Fatal(err)
	}
	if r := again.Entries[1]; r.Mode != "reused" || !slices.Equal(r.StepPrompts, []string{"ONE", "TWO"}) || !slices.Equal(steps(entry(e2, "ms")), []string{"ONE", "TWO"}) {
		t.Fatalf("a resume's record %+v, steps %q", r, steps(entry(e2, "ms")))
	}
	// a record holding the first step's prompt only is not reused for a multi-step task
	firstOnly := &record.Prompts{Entries: slices.Clone(back.Entries)}
	firstOnly.Entries[1].StepPrompts = nil
	e3 := load()
	third, _, err := ResolvePrompts(context.Background(), e3, PromptsOptions{Reuse: firstOnly})
	if err != nil {
		t.Fatal(err)
	}
	if third.Entries[0].Mode != "reused" || third.Entries[1].Mode != "replay" {
		t.Fatalf("modes %q %q, want reused replay", third.Entries[0].Mode, third.Entries[1].Mode)
	}
	// a later step's prompt is part of the rephrase's input
	os.WriteFile(filepath.Join(dir, "ms.yaml"), []byte(files["ms.yaml"][:len(files["ms.yaml"])-len("prompt: second, success_criteria: [{type: file_exists, path: b}]}\n")]+"prompt: changed, success_criteria: [{type: file_exists, path: b}]}\n"), 0o644)
	e4 := load()
	if PromptInput(entry(e4, "ms")) == ms.InputSHA256 || PromptInput(entry(e4, "plain")) != made.Entries[0].InputSHA256 {
		t.Fatal("a changed second step left the multi-step task's input as it was (or changed the plain task's)")
	}
}
