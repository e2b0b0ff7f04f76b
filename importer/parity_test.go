package importer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/task"
)

// convertAndLoad converts doc as a coder_eval task and loads the output with ceval's loader.
func convertAndLoad(t *testing.T, doc string) (*task.Task, Result) {
	t.Helper()
	r, err := CoderEval("in.yaml", []byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(p, r.Output, 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatalf("the output does not load: %v\n%s", err, r.Output)
	}
	t.Cleanup(func() { tk.Close() })
	return tk, r
}

// problem returns the problem reported for field, or fails.
func problem(t *testing.T, r Result, field string, unmapped bool) Problem {
	t.Helper()
	for _, p := range r.Problems {
		if p.Field == field && p.Unmapped == unmapped {
			return p
		}
	}
	t.Fatalf("no %s problem for %s in %v", map[bool]string{true: "unmapped", false: "note"}[unmapped], field, r.Problems)
	return Problem{}
}

func TestPreRunAndPostRunBecomeSetupAndAfterAgent(t *testing.T) {
	doc := base + `pre_run:
  - command: python seed.py --rows 42
    timeout: 60
  - command: ./start-fake-api.sh &
  - command: curl -fsS localhost:8080/health
    fail_on_error: false
post_run:
  - command: python report.py > report.out 2>&1
    timeout: 20
`
	tk, r := convertAndLoad(t, doc)
	if r.Unmapped() != 0 {
		t.Fatalf("unmapped: %v", r.Problems)
	}
	if len(tk.Setup) != 3 || len(tk.AfterAgent) != 1 {
		t.Fatalf("setup %+v, after_agent %+v", tk.Setup, tk.AfterAgent)
	}
	if s := tk.Setup[0]; s.Run != "python seed.py --rows 42" || s.Timeout != 60*time.Second {
		t.Errorf("setup[0] = %+v", s)
	}
	if s := tk.Setup[1]; s.Timeout != 30*time.Second {
		t.Errorf("setup[1] timeout %v, want coder_eval's default 30s (ceval's is %v)", s.Timeout, task.DefaultStepTimeout)
	}
	if s := tk.AfterAgent[0]; s.Run != "python report.py > report.out 2>&1" || s.Timeout != 20*time.Second {
		t.Errorf("after_agent[0] = %+v", s)
	}
	if p := problem(t, r, "post_run", false); p.Line != 15 || !strings.Contains(p.Reason, "BEFORE the snapshot") {
		t.Errorf("post_run note: %s", p)
	}
	if p := problem(t, r, "pre_run[1].command", false); !strings.Contains(p.Reason, "background") {
		t.Errorf("background note: %s", p)
	}
	problem(t, r, "pre_run[2].fail_on_error", false)
	// fail_on_error: false keeps coder_eval's meaning: the failing command does not fail the step.
	for _, c := range []struct {
		cmd  string
		code int
	}{{"false", 0}, {"exit 7", 0}, {"true", 0}} {
		wrapped := strings.Replace(tk.Setup[2].Run, "curl -fsS localhost:8080/health", c.cmd, 1)
		err := exec.Command("/bin/sh", "-c", wrapped).Run()
		if code := exitCode(err); code != c.code {
			t.Errorf("%q exits %d, want %d", wrapped, code, c.code)
		}
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestPreRunEntriesCeavalCannotTakeAreReportedAtTheirLine(t *testing.T) {
	doc := base + `pre_run:
  - make
  - command: make deps
    timeout: soon
  - command: make
    cwd: sub
`
	r, err := CoderEval("in.yaml", []byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for field, line := range map[string]int{"pre_run[0]": 10, "pre_run[1].timeout": 12, "pre_run[2].cwd": 14} {
		if p := problem(t, r, field, true); p.Line != line {
			t.Errorf("%s at line %d, want %d", p, p.Line, line)
		}
	}
}

func TestSimulationBecomesSimulatedUser(t *testing.T) {
	doc := base + `simulation:
  enabled: true
  persona: |
    A busy developer who answers questions briefly.
  goal: |
    Get echo.py printing "tangerine". Only reveal the string if asked.
  constraints:
    - Never write code yourself.
    - One short sentence per message.
  max_turns: 5
  stop_token: "<<<END>>>"
  stop_on_criteria_pass: true
  n_trials: 2
`
	tk, r := convertAndLoad(t, doc)
	u := tk.SimulatedUser
	if u == nil || u.MaxTurns != 4 || tk.MaxRuns() != 5 {
		t.Fatalf("simulated_user %+v, agent runs %d; want 4 follow-ups, 5 runs as coder_eval's max_turns 5", u, tk.MaxRuns())
	}
	for _, want := range []string{"Persona:\nA busy developer", "Goal:\nGet echo.py", "Only reveal the string if asked.", "Rules:\n- Never write code yourself.\n- One short sentence"} {
		if !strings.Contains(u.Instructions, want) {
			t.Errorf("instructions lack %q:\n%s", want, u.Instructions)
		}
	}
	if p := problem(t, r, "simulation.n_trials", true); p.Line != 21 {
		t.Errorf("n_trials: %s", p)
	}
	problem(t, r, "simulation.stop_token", false)
}

func TestSimulationThatCannotMapIsReported(t *testing.T) {
	// No initial_prompt and no goal to open with (with a goal, the goal opens: see
	// TestImportCoderEvalSimulationWithoutInitialPromptOpensWithTheGoal).
	noOpener := strings.Replace(base, "initial_prompt: p\n", "", 1) + "simulation:\n  enabled: true\n  persona: p\n"
	r, err := CoderEval("in.yaml", []byte(noOpener), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := problem(t, r, "simulation", true); !strings.Contains(p.Reason, "initial_prompt") {
		t.Errorf("%s", p)
	}
	// Disabled: dropped with a note, the agent runs once.
	tk, r := convertAndLoad(t, base+"simulation:\n  enabled: false\n  persona: p\n  goal: g\n")
	if tk.SimulatedUser != nil || r.Unmapped() != 0 {
		t.Errorf("disabled simulation: %+v, %v", tk.SimulatedUser, r.Problems)
	}
}

// max_iterations is a field coder_eval ignores today: the import keeps its meaning (one
// run) and says how to get the old loop, as a note, not an unmapped field.
func TestMaxIterationsIsANoteNotALoop(t *testing.T) {
	tk, r := convertAndLoad(t, base+"max_iterations: 4\n")
	if tk.Iterations != nil || tk.MaxRuns() != 1 || r.Unmapped() != 0 {
		t.Fatalf("iterations %+v, runs %d, problems %v", tk.Iterations, tk.MaxRuns(), r.Problems)
	}
	if p := problem(t, r, "max_iterations", false); !strings.Contains(p.Reason, "iterations: {max: 4, feedback: details}") {
		t.Errorf("%s", p)
	}
}

func TestExperimentDefaultsPreRunBecomesDefaultsSetup(t *testing.T) {
	doc := "experiment_id: with-setup\ndefaults:\n  pre_run:\n    - {command: \"make deps\", timeout: 120}\nvariants:\n  - variant_id: base\n"
	r, err := CoderEval("exp.yaml", []byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Unmapped() != 0 || !strings.Contains(string(r.Output), "setup:\n    - run: make deps\n      timeout: 120s") {
		t.Fatalf("problems %v, output:\n%s", r.Problems, r.Output)
	}
	problem(t, r, "defaults.pre_run", false)
}

// coder_eval's mutation chains, as its experiment files write them: the defaults' chain
// first, then each variant's.
const mutationsExperiment = `experiment_id: prompt-phrasing
defaults:
  prompt_mutations:
    - {type: prefix, content: "You are working in a Python 3.12 repo."}
variants:
  - variant_id: plain
  - variant_id: careful
    prompt_mutations:
      - {type: suffix, content: "Run the tests before you finish.", separator: "\n"}
  - variant_id: renamed
    prompt_mutations:
      - {type: replace, pattern: "hello.py", replacement: "greet.py"}
      - {type: template, variables: {lang: Python}}
  - variant_id: reworded
    prompt_mutations:
      - {type: rephrase, instructions: "Rewrite as a terse ticket.", temperature: 0.0}
  - variant_id: regexy
    prompt_mutations:
      - {type: replace, pattern: "(\\d+) tests", replacement: "at least \\1 tests ($)", regex: true}
  - variant_id: opus
    agent: {model: claude-opus-4-1}
    prompt_mutations:
      - {type: template, variables: {lang: Python}}
`

func TestPromptMutationsMapOntoPromptAffixesAndMutationVariants(t *testing.T) {
	r, err := CoderEval("exp.yaml", []byte(mutationsExperiment), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	exp := filepath.Join(dir, "exp.yaml")
	taskDoc := "task_id: t1\ninitial_prompt: \"Write hello.py for {lang}; 3 tests.\"\nagent: {type: command, command: [\"true\"]}\nsuccess_criteria:\n  - {type: file_exists, path: hello.py}\n"
	if err := os.WriteFile(filepath.Join(dir, "t1.yaml"), []byte(taskDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	// The variant that also sets a model cannot be a ceval mutation: reported, and left out
	// here so the rest loads.
	if p := problem(t, r, "variants[5].prompt_mutations", true); p.Line != 20 {
		t.Errorf("%s", p)
	}
	out := string(r.Output)
	if err := os.WriteFile(exp, r.Output, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := task.LoadExperiment(exp, task.ExperimentOptions{Tasks: []string{filepath.Join(dir, "t1.yaml")}})
	if err != nil {
		t.Fatalf("the output does not load: %v\n%s", err, r.Output)
	}
	defer e.Close()
	prompts := map[string]string{}
	for _, en := range e.Entries {
		if en.Task.ID == "t1" {
			prompts[en.Variant] = en.Task.Prompt
		}
	}
	want := map[string]string{
		"plain":   "You are working in a Python 3.12 repo.\n\nWrite hello.py for {lang}; 3 tests.",
		"careful": "You are working in a Python 3.12 repo.\n\nWrite hello.py for {lang}; 3 tests.\nRun the tests before you finish.",
		"renamed": "You are working in a Python 3.12 repo.\n\nWrite greet.py for Python; 3 tests.",
		"regexy":  "You are working in a Python 3.12 repo.\n\nWrite hello.py for {lang}; at least 3 tests ($).",
	}
	for v, p := range want {
		if prompts[v] != p {
			t.Errorf("variant %s prompt %q, want %q", v, prompts[v], p)
		}
	}
	if !strings.Contains(out, "- type: rephrase") || !strings.Contains(out, `instructions: "Rewrite as a terse ticket."`) {
		t.Errorf("the rephrase is not a mutation:\n%s", out)
	}
	problem(t, r, "variants[3].prompt_mutations[0].temperature", false)
}
