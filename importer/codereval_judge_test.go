package importer

import (
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

// loadOut writes a conversion's output as task.yaml in a fresh directory and loads it.
func loadOut(t *testing.T, r Result) *task.Task {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "task.yaml"), string(r.Output))
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatalf("output does not load: %v\n%s", err, r.Output)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

func findProblem(r Result, field string) *Problem {
	for i := range r.Problems {
		if r.Problems[i].Field == field {
			return &r.Problems[i]
		}
	}
	return nil
}

// TestImportCoderEvalJudgePromptBecomesTheRubric: coder_eval's llm_judge and agent_judge
// grade by prompt:, which is ceval's rubric; the output loads with it.
func TestImportCoderEvalJudgePromptBecomesTheRubric(t *testing.T) {
	in := base + `  - type: llm_judge
    prompt: Is hello.txt polite? Score 1 if so.
    files: [hello.txt]
    max_file_chars: 4000
    model: claude-sonnet-4
    temperature: 0
  - type: agent_judge
    prompt: Check the greeting.
    rubric: 1 if polite
    model: claude-opus-4
    include_agent_output: false
`
	r, err := CoderEval("in.yaml", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"success_criteria[1].prompt", "success_criteria[1].max_file_chars", "success_criteria[2] (prompt, rubric)", "success_criteria[2].model"} {
		if p := findProblem(r, f); p == nil || p.Unmapped {
			t.Errorf("%s: want a note, got %v", f, p)
		}
	}
	for _, f := range []string{"success_criteria[1].model", "success_criteria[1].temperature"} {
		if p := findProblem(r, f); p == nil || !p.Unmapped || !strings.Contains(p.Reason, "ceval's config") {
			t.Errorf("%s: want unmapped naming ceval's config, got %v", f, p)
		}
	}
	if p := findProblem(r, "success_criteria[2].include_agent_output"); p == nil || p.Unmapped {
		t.Errorf("include_agent_output: false: want a note (nothing lost), got %v", p)
	}
	tk := loadOut(t, r)
	lj, aj := tk.Criteria[1].Spec.(*task.LLMJudgeSpec), tk.Criteria[2].Spec.(*task.AgentJudgeSpec)
	if lj.Rubric != "Is hello.txt polite? Score 1 if so." || lj.MaxFileBytes != 4000 || len(lj.Files) != 1 {
		t.Errorf("llm_judge = %+v", lj)
	}
	if !strings.HasPrefix(aj.Rubric, "Check the greeting.") || !strings.HasSuffix(aj.Rubric, "1 if polite") || aj.JudgeModel != "claude-opus-4" {
		t.Errorf("agent_judge rubric %q model %q", aj.Rubric, aj.JudgeModel)
	}
}

// TestImportCoderEvalJudgeOptionsAreReportedWithWhatToDo: what ceval's judges lack is
// unmapped at its line with a reason; enabled: false drops the criterion with a note.
func TestImportCoderEvalJudgeOptionsAreReportedWithWhatToDo(t *testing.T) {
	in := base + `  - type: llm_judge
    prompt: p
    include_tool_calls: true
    include_dialog: true
    max_dialog_chars: 100
    max_tokens: 10
    capture_transcript: true
    max_transcript_chars: 9
    include_reference: true
  - type: agent_judge
    prompt: p
    files: [a.txt]
    max_file_chars: 10
  - type: llm_judge
    enabled: false
    prompt: p
`
	r, err := CoderEval("in.yaml", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"success_criteria[1].include_tool_calls": 11, "success_criteria[1].include_dialog": 12,
		"success_criteria[1].max_dialog_chars": 13, "success_criteria[1].max_tokens": 14,
		"success_criteria[1].capture_transcript": 15, "success_criteria[1].max_transcript_chars": 16,
		"success_criteria[2].files": 20, "success_criteria[2].max_file_chars": 21,
	}
	for f, line := range want {
		p := findProblem(r, f)
		if p == nil || !p.Unmapped || p.Line != line || p.Reason == "" {
			t.Errorf("%s: want unmapped at line %d, got %v", f, line, p)
		}
	}
	if p := findProblem(r, "success_criteria[1].include_reference"); p == nil || p.Unmapped || !strings.Contains(p.Reason, "reference_files") {
		t.Errorf("include_reference: %v", p)
	}
	if p := findProblem(r, "success_criteria[3] (enabled: false)"); p == nil || p.Unmapped || p.Line != 23 {
		t.Errorf("enabled: false: want a note at line 23, got %v", p)
	}
	tk := loadOut(t, r)
	if len(tk.Criteria) != 3 {
		t.Fatalf("%d criteria, want the disabled one dropped", len(tk.Criteria))
	}
}

// TestImportCoderEvalOtherAgentsBecomeACommandPlaceholder: an agent ceval has no type for
// is reported, and the output still loads: a command agent that fails naming what to do.
func TestImportCoderEvalOtherAgentsBecomeACommandPlaceholder(t *testing.T) {
	for _, typ := range []string{"antigravity", "opencode", "pi", "delegate", "some-new-agent"} {
		t.Run(typ, func(t *testing.T) {
			in := strings.Replace(base, "type: claude-code", "type: "+typ+"\n  model: m1\n  allowed_tools: [Read]", 1)
			r, err := CoderEval("in.yaml", []byte(in), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if p := findProblem(r, "agent.type"); p == nil || !p.Unmapped || !strings.Contains(p.Reason, "agent.command") || p.Line != 5 {
				t.Errorf("agent.type: %v", p)
			}
			tk := loadOut(t, r)
			if tk.Agent.Type != task.AgentCommand || len(tk.Agent.Command) != 3 || !strings.Contains(tk.Agent.Command[2], typ) || !strings.HasSuffix(tk.Agent.Command[2], "exit 1") {
				t.Errorf("agent = %+v", tk.Agent)
			}
		})
	}
}

// TestImportCoderEvalTemplateSourcesBecomeATemplateDirList: several template_dir sources
// become ceval's template_dir list, in coder_eval's order, and the output loads with both.
func TestImportCoderEvalTemplateSourcesBecomeATemplateDirList(t *testing.T) {
	in := base + `sandbox:
  template_sources:
    - type: template_dir
      path: base
    - type: template_dir
      path: overlay
      mount_point: .
`
	r, err := CoderEval("in.yaml", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Unmapped() != 0 {
		t.Fatalf("unmapped: %v", r.Problems)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "base/a.txt"), "a")
	writeFile(t, filepath.Join(dir, "overlay/b.txt"), "b")
	writeFile(t, filepath.Join(dir, "task.yaml"), string(r.Output))
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.Output)
	}
	defer tk.Close()
	ts := tk.Sandbox.Workspace.Templates()
	if len(ts) != 2 || filepath.Base(ts[0].Path) != "base" || filepath.Base(ts[1].Path) != "overlay" {
		t.Fatalf("templates = %+v", ts)
	}
}

// TestImportCoderEvalSmallGapsKeepTheOutputValid: regex flags become inline flags (or are
// reported), a simulation longer than ceval's cap is clamped, max_usd without a model and
// cli_called without a tool are reported; the output loads each time.
func TestImportCoderEvalSmallGapsKeepTheOutputValid(t *testing.T) {
	in := base + `  - type: file_check
    path: hello.txt
    patterns:
      - pattern: "^HELLO"
        flags: IGNORECASE|re.MULTILINE
      - pattern: "x.y"
        flags: [s]
  - type: cli_called
    argv: [x]
run_limits:
  max_turns: 5
  max_usd: 2
simulation:
  enabled: true
  goal: g
  max_turns: 50
`
	r, err := CoderEval("in.yaml", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := findProblem(r, "run_limits.max_usd"); p == nil || !p.Unmapped || !strings.Contains(p.Reason, "agent.model") || p.Line != 20 {
		t.Errorf("max_usd: %v", p)
	}
	if p := findProblem(r, "success_criteria[2] (cli_called)"); p == nil || !p.Unmapped || !strings.Contains(p.Reason, "tool:") {
		t.Errorf("cli_called: %v", p)
	}
	if p := findProblem(r, "success_criteria[1].patterns[0]"); p == nil || p.Unmapped {
		t.Errorf("flags: %v", p)
	}
	tk := loadOut(t, r)
	c := tk.Criteria[1].Spec.(*task.FileCheckSpec)
	if len(c.Patterns) != 2 || c.Patterns[0].Pattern != "(?im)^HELLO" || c.Patterns[1].Pattern != "(?s)x.y" {
		t.Errorf("patterns = %+v", c.Patterns)
	}
	if tk.SimulatedUser == nil || tk.SimulatedUser.MaxTurns != task.MaxIterations-1 {
		t.Errorf("simulated_user = %+v", tk.SimulatedUser)
	}
	if tk.RunLimits == nil || tk.RunLimits.MaxTurns != 5 {
		t.Errorf("run_limits = %+v", tk.RunLimits)
	}

	bad := strings.Replace(in, "flags: [s]", "flags: VERBOSE", 1)
	r, err = CoderEval("in.yaml", []byte(bad), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := findProblem(r, "success_criteria[1].patterns[1].flags"); p == nil || !p.Unmapped || !strings.Contains(p.Reason, "verbose") {
		t.Errorf("VERBOSE: %v", p)
	}
	loadOut(t, r)
}

// TestImportCoderEvalSimulationWithoutInitialPromptOpensWithTheGoal: coder_eval's simulated
// user opens the conversation; ceval's agent needs initial_prompt, so the goal becomes it.
func TestImportCoderEvalSimulationWithoutInitialPromptOpensWithTheGoal(t *testing.T) {
	in := strings.Replace(base, "initial_prompt: p\n", "", 1) + "simulation:\n  enabled: true\n  goal: Get a hello.txt written\n  max_turns: 3\n"
	r, err := CoderEval("in.yaml", []byte(in), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := findProblem(r, "simulation.goal"); p == nil || p.Unmapped || p.Line != 10 {
		t.Errorf("goal: %v", p)
	}
	tk := loadOut(t, r)
	if strings.TrimSpace(tk.Prompt) != "Get a hello.txt written" || tk.SimulatedUser == nil || tk.SimulatedUser.MaxTurns != 2 {
		t.Errorf("prompt %q simulated_user %+v", tk.Prompt, tk.SimulatedUser)
	}
}
