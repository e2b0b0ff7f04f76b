package task

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const twoSteps = `task_id: ms
steps:
  - name: first
    prompt: write a
    success_criteria:
      - {type: file_exists, path: a.txt}
  - prompt_file: second.md
    files: step2
    stop_on_failure: false
    solution: {script: sol2.sh}
    success_criteria:
      - {type: file_exists, path: b.txt}
      - {type: file_contains, path: b.txt, includes: [x]}
step_score: mean
stop_on_failure: true
`

func TestMultiStepTaskLoads(t *testing.T) {
	tk, err := Load(writeTask(t, twoSteps, map[string]string{"second.md": "write b", "step2/given.txt": "g", "sol2.sh": "#!/bin/sh\n"}))
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if !tk.MultiStep() || len(tk.TaskSteps) != 2 || tk.StepScore != StepScoreMean {
		t.Fatalf("steps %+v, rule %q", tk.TaskSteps, tk.StepScore)
	}
	s1, s2 := tk.TaskSteps[0], tk.TaskSteps[1]
	if s1.Name != "first" || s2.Name != "step-2" || s2.Prompt != "write b" || s2.Files == nil || s2.Solution == nil {
		t.Errorf("steps = %+v / %+v", s1, s2)
	}
	if !s1.StopOnFailure || s2.StopOnFailure {
		t.Errorf("stop_on_failure: step 1 %v (the task's default, want true), step 2 %v (its own false)", s1.StopOnFailure, s2.StopOnFailure)
	}
	if tk.Prompt != "write a" || len(tk.Criteria) != 3 {
		t.Errorf("prompt %q (the first step's), %d criteria in all (want 3)", tk.Prompt, len(tk.Criteria))
	}
	if got := tk.StepCriteria(1); len(got) != 2 || got[0].Spec.(*FileExistsSpec).Path != "b.txt" {
		t.Errorf("step 2's criteria %+v", got)
	}
	st := tk.ForStep(1)
	if st.Prompt != "write b" || len(st.Criteria) != 2 || st.MultiStep() {
		t.Errorf("ForStep(1): prompt %q, %d criteria, multi-step %v", st.Prompt, len(st.Criteria), st.MultiStep())
	}
	if !slices.Contains(Material(tk), s2.Files.Path) {
		t.Errorf("the step's files are not among the task's material: %v", Material(tk))
	}
	d1, err := Digest(tk)
	if err != nil {
		t.Fatal(err)
	}
	if d1 == "" {
		t.Fatal("no digest")
	}
}

func TestMultiStepDefaults(t *testing.T) {
	tk, err := Load(writeTask(t, "task_id: ms\nsteps:\n  - {prompt: p, success_criteria: [{type: file_exists, path: a}]}\n", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if tk.StepScore != StepScoreAll || tk.TaskSteps[0].StopOnFailure || tk.TaskSteps[0].Name != "step-1" {
		t.Errorf("defaults: rule %q, stop %v, name %q", tk.StepScore, tk.TaskSteps[0].StopOnFailure, tk.TaskSteps[0].Name)
	}
}

// TestBadMultiStepTasksAreReportedAtTheirPosition: every load-time refusal of steps:, at
// its FILE:LINE:COL.
func TestBadMultiStepTasksAreReportedAtTheirPosition(t *testing.T) {
	step := "  - {prompt: p, success_criteria: [{type: file_exists, path: a}]}\n"
	for _, tc := range []struct {
		name, doc, want string
		files           map[string]string
	}{
		{"not a list", "steps: x\n", "2:8: steps must be a list", nil},
		{"empty", "steps: []\n", "2:8: steps must not be empty", nil},
		{"too many", "steps:\n" + strings.Repeat(step, MaxTaskSteps+1), "3:3: steps has 33 steps; at most 32", nil},
		{"no prompt", "steps:\n  - {success_criteria: [{type: file_exists, path: a}]}\n", "3:5: steps[0]: missing required field prompt", nil},
		{"both prompts", "steps:\n  - {prompt: p, prompt_file: p.md, success_criteria: [{type: file_exists, path: a}]}\n", "3:30: steps[0]: give prompt or prompt_file, not both", map[string]string{"p.md": "x"}},
		{"empty prompt", "steps:\n  - {prompt: ' ', success_criteria: [{type: file_exists, path: a}]}\n", "3:14: steps[0].prompt is empty", nil},
		{"missing prompt file", "steps:\n  - {prompt_file: nope.md, success_criteria: [{type: file_exists, path: a}]}\n", `3:19: steps[0].prompt_file: "nope.md" not found`, nil},
		{"no criteria", "steps:\n  - {prompt: p}\n", "3:5: steps[0]: missing required field success_criteria", nil},
		{"empty criteria", "steps:\n  - {prompt: p, success_criteria: []}\n", "3:35: success_criteria must not be empty", nil},
		{"bad name", "steps:\n  - {name: Build, prompt: p, success_criteria: [{type: file_exists, path: a}]}\n", `3:12: steps[0].name "Build": want 1-63`, nil},
		{"same name", "steps:\n  - {name: a, prompt: p, success_criteria: [{type: file_exists, path: a}]}\n  - {name: a, prompt: p, success_criteria: [{type: file_exists, path: a}]}\n", `4:5: steps[1]: step name "a" is used twice`, nil},
		{"unknown field", "steps:\n  - {prompt: p, workdir: w, success_criteria: [{type: file_exists, path: a}]}\n", `3:17: unknown field "workdir" in steps[0]`, nil},
		{"files missing", "steps:\n  - {prompt: p, files: nope, success_criteria: [{type: file_exists, path: a}]}\n", `3:24: steps[0].files: "nope" not found`, nil},
		{"files outside", "steps:\n  - {prompt: p, files: ../x, success_criteria: [{type: file_exists, path: a}]}\n", `3:24: steps[0].files: "../x" leaves`, nil},
		{"solution files", "steps:\n  - {prompt: p, solution: {files: s}, success_criteria: [{type: file_exists, path: a}]}\n", `unknown field "files" in steps[0].solution`, map[string]string{"s/x": "x"}},
		{"bad criterion", "steps:\n  - {prompt: p, success_criteria: [{type: nope, path: a}]}\n", `3:43: success_criteria[0].type must be one of`, nil},
		{"bad step_score", "steps:\n" + step + "step_score: best\n", `4:13: step_score must be one of all, mean, last`, nil},
		{"bad stop", "steps:\n" + step + "stop_on_failure: 1\n", `4:18: stop_on_failure must be`, nil},
		{"initial_prompt too", "initial_prompt: p\nsteps:\n" + step, "2:1: initial_prompt cannot be given with steps", nil},
		{"initial_prompt_file too", "initial_prompt_file: p.md\nsteps:\n" + step, "2:1: initial_prompt_file cannot be given with steps", map[string]string{"p.md": "x"}},
		{"success_criteria too", "success_criteria: [{type: file_exists, path: a}]\nsteps:\n" + step, "2:1: success_criteria cannot be given with steps", nil},
		{"step_score alone", "initial_prompt: p\nsuccess_criteria: [{type: file_exists, path: a}]\nstep_score: mean\n", "4:1: step_score is for a multi-step task", nil},
		{"stop alone", "initial_prompt: p\nsuccess_criteria: [{type: file_exists, path: a}]\nstop_on_failure: true\n", "4:1: stop_on_failure is for a multi-step task", nil},
		{"files hold the reference", "reference: {directory: s/ref}\nsteps:\n  - {prompt: p, files: s, success_criteria: [{type: file_exists, path: a}]}\n",
			"4:5: steps[0] (step-1): files", map[string]string{"s/ref/r.txt": "secret"}},
		{"files inside the reference", "reference: {directory: ref}\nsteps:\n  - {prompt: p, files: ref/s, success_criteria: [{type: file_exists, path: a}]}\n",
			"lies inside reference.directory", map[string]string{"ref/s/r.txt": "secret"}},
		{"files hold grader_files", "grader_files: [s/tests]\nsteps:\n  - {prompt: p, files: s, success_criteria: [{type: file_exists, path: a}]}\n",
			"holds grader_files s/tests", map[string]string{"s/tests/t.sh": "x"}},
		{"files hold the solution", "solution: {script: s/solve.sh}\nsteps:\n  - {prompt: p, files: s, success_criteria: [{type: file_exists, path: a}]}\n",
			"holds solution.script", map[string]string{"s/solve.sh": "x"}},
		{"files hold a step's solution", "steps:\n  - {prompt: p, success_criteria: [{type: file_exists, path: a}]}\n  - {prompt: p, files: s, solution: {script: s/solve.sh}, success_criteria: [{type: file_exists, path: a}]}\n",
			"holds steps[1].solution.script", map[string]string{"s/solve.sh": "x"}},
		{"template holds a step's solution", "sandbox: {workspace: {template_dir: tpl}}\nsteps:\n  - {prompt: p, solution: {script: tpl/solve.sh}, success_criteria: [{type: file_exists, path: a}]}\n",
			"sandbox.workspace.template_dir holds the solution", map[string]string{"tpl/solve.sh": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTask(t, "task_id: ms\n"+tc.doc, tc.files)
			_, err := Load(p)
			if err == nil {
				t.Fatalf("loaded; want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "task.yaml:") {
				t.Errorf("got:\n%v\nwant (at FILE:LINE) %q", err, tc.want)
			}
		})
	}
}

// TestExperimentOfMultiStepTasks: a multi-step task runs under an experiment's variants; a
// variant that changes the prompt changes every step's prompt.
func TestExperimentOfMultiStepTasks(t *testing.T) {
	ms := "task_id: ms\nsteps:\n  - {prompt: p, success_criteria: [{type: file_exists, path: a}]}\n  - {prompt: q, success_criteria: [{type: file_exists, path: b}]}\n"
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"ms.yaml": ms,
		"e.yaml": "experiment_id: e\ntasks: [ms.yaml]\nvariants:\n  - {variant_id: plain, step_score: mean}\n",
		"framed.yaml": "experiment_id: e\ntasks: [ms.yaml]\nvariants:\n  - variant_id: framed\n    prompt: {prefix: 'Careful. '}\n" +
			"prompt_mutations:\n  - {variant_id: loud, type: suffix, content: '!', separator: ''}\n",
		"f.yaml":     "answers: [one]\n",
		"short.yaml": "experiment_id: e\ntasks: [ms.yaml]\nprompt_mutations:\n  - {variant_id: r, type: rephrase, instructions: x, fixture: f.yaml}\n"})
	e, err := LoadExperiment(filepath.Join(dir, "e.yaml"), ExperimentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if len(e.Entries) != 1 || !e.Entries[0].Task.MultiStep() || e.Entries[0].Task.StepScore != StepScoreMean {
		t.Fatalf("entries %+v", e.Entries)
	}
	// a variant's prompt and a static mutation apply to every step's prompt
	framed, err := LoadExperiment(filepath.Join(dir, "framed.yaml"), ExperimentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer framed.Close()
	want := map[string][2]string{"framed": {"Careful. p", "Careful. q"}, "loud": {"p!", "q!"}}
	for _, en := range framed.Entries {
		if got := [2]string{en.Task.TaskSteps[0].Prompt, en.Task.TaskSteps[1].Prompt}; got != want[en.Variant] || en.Task.Prompt != got[0] {
			t.Errorf("variant %s: steps' prompts %q, task's %q; want %q", en.Variant, got, en.Task.Prompt, want[en.Variant])
		}
	}
	if e.Entries[0].Task.TaskSteps[0].Prompt != "p" {
		t.Errorf("the plain variant's step prompt changed: %q", e.Entries[0].Task.TaskSteps[0].Prompt)
	}
	// a rephrase fixture gives one answer per step: two for this task
	_, err = LoadExperiment(filepath.Join(dir, "short.yaml"), ExperimentOptions{})
	if err == nil || !strings.Contains(err.Error(), "fixture f.yaml has 1 answers; variant r runs 1 tasks with 2 prompts") {
		t.Fatalf("a one-answer fixture over a two-step task: %v", err)
	}
}

// TestDatasetRowsAreNotSubstitutedInSteps: a dataset task's ${row.field} inside steps is
// refused at its line (rows substitute in initial_prompt, sandbox and success_criteria only).
func TestDatasetRowsAreNotSubstitutedInSteps(t *testing.T) {
	p := writeTask(t, "task_id: ds\ndataset: {file: rows.jsonl}\nsteps:\n  - {prompt: \"write ${row.w}\", success_criteria: [{type: file_exists, path: a}]}\n",
		map[string]string{"rows.jsonl": "{\"id\": \"a\", \"w\": \"x\"}\n"})
	_, err := LoadAll(p, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "task.yaml:4:14: steps: ${row.") {
		t.Fatalf("a row reference in steps: %v", err)
	}
}

// TestMultiStepTaskWithFollowUps: iterations and simulated_user load beside steps and apply
// within each step: the agent may run StepRuns times per step, MaxRuns in all.
func TestMultiStepTaskWithFollowUps(t *testing.T) {
	two := "steps:\n  - {prompt: p, success_criteria: [{type: file_exists, path: a}]}\n  - {prompt: q, success_criteria: [{type: file_exists, path: b}]}\n"
	for _, tc := range []struct {
		name, doc   string
		step, total int
	}{
		{"plain", two, 1, 2},
		{"iterations", "iterations: {max: 3, feedback: descriptions}\n" + two, 3, 6},
		{"simulated_user", "simulated_user: {instructions: x, max_turns: 1}\n" + two, 2, 4},
		{"both", "iterations: {max: 3}\nsimulated_user: {instructions: x, max_turns: 1}\n" + two, 2, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, err := Load(writeTask(t, "task_id: ms\n"+tc.doc, nil))
			if err != nil {
				t.Fatal(err)
			}
			defer tk.Close()
			if tk.StepRuns() != tc.step || tk.MaxRuns() != tc.total {
				t.Fatalf("StepRuns %d, MaxRuns %d; want %d, %d", tk.StepRuns(), tk.MaxRuns(), tc.step, tc.total)
			}
		})
	}
}
