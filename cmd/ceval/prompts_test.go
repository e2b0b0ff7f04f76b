package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/experiment"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

func writePromptExperiment(t *testing.T, exp string) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "task.yaml"), []byte("task_id: a\ninitial_prompt: do the task\n"+
		"agent: {type: command, command: [/bin/sh, -c, \"cat /home/agent/.ceval/prompt.md > seen.txt\"]}\n"+
		"sandbox: {limits: {timeout: 60s, memory_mb: 256, pids: 128, disk_mb: 64}}\n"+
		"success_criteria:\n  - {type: file_contains, path: seen.txt, includes: [GOOD]}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "formal.yaml"), []byte("answers: [\"Kindly do the task.\"]\n"), 0o644)
	p := filepath.Join(dir, "exp.yaml")
	os.WriteFile(p, []byte(exp), 0o644)
	return p
}

// plan shows the prompt each variant makes (whole in --json), a live rephrase as pending,
// and stop_early.
func TestPlanShowsMutatedPromptsAndStopEarly(t *testing.T) {
	exp := writePromptExperiment(t, `experiment_id: p
tasks: [a/task.yaml]
variants:
  - variant_id: plain
  - variant_id: framed
    prompt: {suffix: " GOOD"}
prompt_mutations:
  - {variant_id: formal, type: rephrase, instructions: Be formal., fixture: formal.yaml}
  - {variant_id: live, type: rephrase, instructions: Be terse.}
stop_early: {compare: [plain, framed], confidence: 0.9}
`)
	r := ceval(t, "plan", exp)
	for _, want := range []string{
		`framed/a: "do the task GOOD"`,
		`formal/a: "Kindly do the task." (rephrase "Be formal." replayed from formal.yaml)`,
		"live/a: rephrased by the judge model of ceval's config when the run starts",
		"stop early: once plain and framed differ in pass_rate at confidence 0.9",
		"4 runs (1 tasks x 4 variants x 1 repeats)",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q: exit %d\n%s%s", want, r.code, r.stdout, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "plain/a:") {
		t.Errorf("plan lists the unchanged prompt of plain:\n%s", r.stdout)
	}
	// --prompts-from shows what an earlier run recorded for the live rephrase.
	e, err := task.LoadExperiment(exp, task.ExperimentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := t.TempDir()
	for _, en := range e.Entries {
		if en.Variant == "live" {
			record.WriteJSONAtomic(filepath.Join(rec, record.PromptsFile), &record.Prompts{Entries: []record.PromptRecord{
				{Variant: "live", TaskID: "a", InputSHA256: experiment.PromptInput(en), Mode: "live", Prompt: "Tersely: do it."}}})
		}
	}
	if r := ceval(t, "plan", "--prompts-from", rec, exp); r.code != 0 || !strings.Contains(r.stdout, `live/a: "Tersely: do it."`) {
		t.Errorf("plan --prompts-from: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ceval(t, "plan", "../../examples/prompts.yaml"); r.code != 0 || !strings.Contains(r.stdout, `formal/hello: "Specification:`) {
		t.Errorf("plan examples/prompts.yaml: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = ceval(t, "plan", "--json", exp)
	for _, want := range []string{`"prompt": "do the task GOOD"`, `"prompt_pending": "rephrase \"Be terse.\" by the judge model`, `"stop_early": {`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan --json lacks %s:\n%s", want, r.stdout)
		}
	}
}

// ceval run of an experiment with stop_early: it stops, says so and how to complete it; the
// resume completes it and its summary keeps when and why it stopped.
func TestRunStopsEarlyAndResumeCompletes(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	exp := writePromptExperiment(t, `experiment_id: s
tasks: [a/task.yaml]
repeats: 8
variants:
  - variant_id: plain
  - variant_id: framed
    prompt: {suffix: " GOOD"}
stop_early: {compare: [plain, framed], confidence: 0.75}
`)
	runs := t.TempDir()
	// log bound ln 4: 2^n/(n+1) first reaches 4 at n = 5 pairs (5.33), 10 of the 16 runs.
	r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "-j", "1", exp)
	if r.code != 1 || !strings.Contains(r.stdout, "stopped early: framed passes more often than plain at confidence 0.75") ||
		!strings.Contains(r.stdout, "after 10 of 16 runs") || !strings.Contains(r.stdout, "complete it with: ceval run --resume ") {
		t.Fatalf("exit %d (want 1: plain fails):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	dir := onlyDir(t, runs)
	s := readSummary(t, dir)
	if s.Complete || s.StoppedEarly == nil || s.StoppedEarly.AfterRuns != 10 || s.Variants[0].Runs != 5 {
		t.Fatalf("summary after the stop: %+v", s)
	}
	r = ceval(t, "run", "--namespace", ctrtest.Namespace, "--resume", dir, "-j", "2")
	if r.code != 1 || strings.Contains(r.stdout, "stopped early") {
		t.Fatalf("resume: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	s = readSummary(t, dir)
	if !s.Complete || s.StoppedEarly == nil || s.StoppedEarly.Resumed == "" || s.Variants[0].Runs != 8 || s.Variants[1].Passed != 8 {
		t.Fatalf("summary after the resume: %+v", s)
	}
}
