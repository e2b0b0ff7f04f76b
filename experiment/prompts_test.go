package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// seenPrompt is an agent that copies the prompt it was given into its workspace.
const seenPrompt = "cat /home/agent/.ceval/prompt.md > seen.txt"

func readSeen(t *testing.T, runDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, record.WorkspaceDir, "seen.txt"))
	if err != nil {
		t.Fatalf("the agent's copy of its prompt: %v", err)
	}
	return string(b)
}

// Each variant's agent gets the prompt the variant makes: the task's as written, a
// variant's prefix/suffix, a static mutation and a rephrase replayed from a fixture; the
// rephrase is recorded (prompts.json, prompt_calls.jsonl), and a resume reuses it without
// asking anything again, so the agent of a re-run gets the same prompt.
func TestMutatedPromptExperimentGivesTheAgentTheMutatedPrompt(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	exp := `experiment_id: m
tasks: [a/task.yaml]
variants:
  - variant_id: plain
  - variant_id: framed
    prompt: {prefix: "PRE ", suffix: " POST"}
prompt_mutations:
  - {variant_id: loud, type: replace, pattern: "do the", replacement: "DO THE"}
  - {variant_id: formal, type: rephrase, instructions: "Make it formal.", fixture: formal.yaml}
`
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "task.yaml"), []byte(agentTask("a", seenPrompt, "  - {type: file_exists, path: seen.txt}\n")), 0o644)
	os.WriteFile(filepath.Join(dir, "formal.yaml"), []byte("answers: [\"Kindly carry out the task, if you would.\"]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "exp.yaml"), []byte(exp), 0o644)
	e, err := task.LoadExperiment(filepath.Join(dir, "exp.yaml"), task.ExperimentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	o := Options{Run: supervisor.Options{Client: c, RunsDir: runs, RunID: "m1", Grace: time.Second}, Parallel: 2}
	res, err := Run(ctx, e, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"plain":  "do the task",
		"framed": "PRE do the task POST",
		"loud":   "DO THE task",
		"formal": "Kindly carry out the task, if you would.",
	}
	for _, r := range res.Records {
		if r == nil || resultOf(r) == nil || resultOf(r).Status != "SUCCESS" {
			t.Fatalf("run %+v", r)
		}
		if got := readSeen(t, r.Dir); got != want[r.Variant] {
			t.Errorf("variant %s: the agent saw %q, want %q", r.Variant, got, want[r.Variant])
		}
	}
	prompts, err := record.ReadPrompts(res.Dir)
	if err != nil || len(prompts.Entries) != 1 || prompts.Entries[0].Mode != "replay" || prompts.Entries[0].Prompt != want["formal"] {
		t.Fatalf("prompts.json %+v %v", prompts, err)
	}
	calls, _ := os.ReadFile(filepath.Join(res.Dir, record.PromptCallsFile))
	if !strings.Contains(string(calls), `"mode":"replay"`) || !strings.Contains(string(calls), "Make it formal.") {
		t.Errorf("prompt_calls.jsonl does not record the rephrase:\n%s", calls)
	}
	plan, _ := record.ReadPlan(res.Dir)
	for _, pe := range plan.Entries {
		if pe.Variant != "plain" && pe.Prompt != want[pe.Variant] {
			t.Errorf("plan.json %s prompt %q", pe.Variant, pe.Prompt)
		}
	}

	// Resume after the formal run was lost: it runs again with the recorded prompt, and
	// nothing is asked again.
	formal := ""
	for _, r := range res.Records {
		if r.Variant == "formal" {
			formal = r.Dir
		}
	}
	os.RemoveAll(formal)
	e2, err := task.LoadExperiment(e.Path, task.ExperimentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.Resume = true
	res2, err := Run(ctx, e2, o)
	if err != nil {
		t.Fatal(err)
	}
	resumed := 0
	for _, r := range res2.Records {
		if r.Resumed {
			resumed++
		}
	}
	if resumed != 3 || readSeen(t, formal) != want["formal"] {
		t.Errorf("resume: %d runs kept (want 3); the re-run formal agent saw %q", resumed, readSeen(t, formal))
	}
	if again, _ := os.ReadFile(filepath.Join(res.Dir, record.PromptCallsFile)); string(again) != string(calls) {
		t.Errorf("the resume asked for the rephrase again:\n%s", again)
	}
}
