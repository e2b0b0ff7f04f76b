package task

import (
	"strings"
	"testing"
)

func TestToolCallCriteriaSchema(t *testing.T) {
	const base = "task_id: t\ninitial_prompt: p\nagent: {type: claude-code}\nsuccess_criteria:\n  - "
	cases := []struct {
		name, crit string
		check      func(c Criterion) bool
		want       string // a problem's text; "" for none
	}{
		{"tool_called defaults", "{type: tool_called, tool: Bash, input_pattern: 'pytest'}",
			func(c Criterion) bool {
				s, ok := c.Spec.(*ToolCalledSpec)
				return ok && c.Type == ToolCalled && s.Tool == "Bash" && s.MinCount == 1 && s.MaxCount == -1 && s.Outcome == "any"
			}, ""},
		{"coder_eval command_executed is a tool_called", "{type: command_executed, tool_name: Bash, command_pattern: 'curl.*x', exclude_pattern: dry, require_success: true, min_count: 0, max_count: 0}",
			func(c Criterion) bool {
				s, ok := c.Spec.(*ToolCalledSpec)
				return ok && c.Type == ToolCalled && c.Alias == CommandExecuted && s.Tool == "Bash" && s.InputPattern == "curl.*x" &&
					s.ExcludePattern == "dry" && s.Outcome == "ok" && s.MinCount == 0 && s.MaxCount == 0
			}, ""},
		{"command_executed with nothing counts any call", "{type: command_executed, min_count: 2}",
			func(c Criterion) bool {
				s, ok := c.Spec.(*ToolCalledSpec)
				return ok && c.Type == ToolCalled && s.MinCount == 2
			}, ""},
		{"both forms of command_executed", "{type: command_executed, pattern: gh, tool_name: Bash}", nil,
			"task.yaml:5:5: success_criteria[0] (command_executed): pattern grades the protected mocks' call log, tool_name the model's tool calls"},
		{"tool and tool_pattern", "{type: tool_called, tool: Bash, tool_pattern: B.*}", nil, "give tool (an exact name) or tool_pattern"},
		{"input_field without a pattern", "{type: tool_called, input_field: command}", nil, "give input_pattern too"},
		{"bad regex", "{type: tool_called, input_pattern: '(['}", nil, "input_pattern"},
		{"bad outcome", "{type: tool_called, outcome: maybe}", nil, "outcome"},
		{"budget", "{type: tool_calls_budget, target: 5, max: 15, tool: Bash}",
			func(c Criterion) bool {
				s, ok := c.Spec.(*ToolCallsBudgetSpec)
				return ok && c.Type == ToolCallsBudget && s.Target == 5 && s.Max == 15 && !s.BudgetRatio
			}, ""},
		{"budget max under target", "{type: tool_calls_budget, target: 5, max: 5}", nil, "max 5 must be more than target 5"},
		{"budget without max", "{type: tool_calls_budget, target: 5}", nil, "give target"},
		{"commands_efficiency", "{type: commands_efficiency, expected_commands: 8}",
			func(c Criterion) bool {
				s, ok := c.Spec.(*ToolCallsBudgetSpec)
				return ok && c.Type == ToolCallsBudget && c.Alias == CommandsEfficiency && s.Target == 8 && s.BudgetRatio && s.Outcome == "any"
			}, ""},
		{"commands_efficiency of 0", "{type: commands_efficiency, expected_commands: 0}", nil, "expected_commands must be at least 1"},
		{"skill_used", "{type: skill_used, skill: 'my-plugin:pdf'}",
			func(c Criterion) bool {
				s, ok := c.Spec.(*SkillUsedSpec)
				return ok && c.Type == SkillUsed && s.Skill == "my-plugin:pdf" && s.ExpectUsed
			}, ""},
		{"skill_used must not", "{type: skill_used, skill: pdf, expect_used: false}",
			func(c Criterion) bool { return !c.Spec.(*SkillUsedSpec).ExpectUsed }, ""},
		{"skill name", "{type: skill_used, skill: '../x'}", nil, "is not a skill name"},
		{"skill_triggered positive", "{type: skill_triggered, skill_name: pdf, expected_skill: pdf}",
			func(c Criterion) bool {
				s, ok := c.Spec.(*SkillUsedSpec)
				return ok && c.Type == SkillUsed && c.Alias == SkillTriggered && s.ExpectUsed && s.Skill == "pdf"
			}, ""},
		{"skill_triggered negative", "{type: skill_triggered, skill_name: pdf, expected_skill: ''}",
			func(c Criterion) bool {
				s, ok := c.Spec.(*SkillUsedSpec)
				return ok && c.Type == SkillUsed && !s.ExpectUsed
			}, ""},
		{"skill_triggered without expected_skill", "{type: skill_triggered, skill_name: pdf}", nil, "give skill_name and expected_skill"},
		{"unknown field", "{type: tool_called, command_pattern: x}", nil, "command_pattern"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, err := Parse("task.yaml", t.TempDir(), []byte(base+c.crit+"\n"))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(tk.Criteria[0]) {
				t.Fatalf("criterion %+v", tk.Criteria[0])
			}
		})
	}
}

// The calls are read from the gateway's transcript only: an agent without a gateway has
// none, and a criterion on them is refused, naming it, rather than graded on anything else.
func TestToolCallCriteriaNeedTheAgentsGateway(t *testing.T) {
	for _, crit := range []string{"{type: tool_called, tool: Bash}", "{type: command_executed, tool_name: Bash}",
		"{type: commands_efficiency, expected_commands: 3}", "{type: skill_triggered, skill_name: a, expected_skill: a}"} {
		doc := "task_id: t\ninitial_prompt: p\nagent: {type: command, command: [sh]}\nsuccess_criteria:\n  - " + crit + "\n"
		_, err := Parse("task.yaml", t.TempDir(), []byte(doc))
		if err == nil || !strings.Contains(err.Error(), "task.yaml:5:5: success_criteria[0] (") ||
			!strings.Contains(err.Error(), "no gateway: add agent.gateway") {
			t.Errorf("%s: got %v", crit, err)
		}
	}
	doc := "task_id: t\ninitial_prompt: p\nagent: {type: command, command: [sh], gateway: {mode: forward}}\nsuccess_criteria:\n  - {type: tool_called, tool: Bash}\n"
	if _, err := Parse("task.yaml", t.TempDir(), []byte(doc)); err != nil {
		t.Errorf("with a gateway: %v", err)
	}
}
