package grader

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
	"ceval.dev/ceval/toolcalls"
)

func call(name, outcome string, input map[string]string) toolcalls.Call {
	return toolcalls.Call{Name: name, Outcome: outcome, Input: input, InputJSON: true}
}

func runLog() *toolcalls.Log {
	calls := []toolcalls.Call{
		call("Read", "ok", map[string]string{"file_path": "/workspace/app.py"}),
		call("Bash", "error", map[string]string{"command": "pytest -q", "description": "run tests"}),
		call("Edit", "ok", map[string]string{"file_path": "/workspace/app.py", "old_string": "a", "new_string": "b"}),
		call("Bash", "ok", map[string]string{"command": "pytest -q \\\n  tests/"}),
		call("Read", "ok", map[string]string{"file_path": "/opt/ceval/plugins/p/skills/pdf/SKILL.md"}),
		call("exec_command", "unknown", map[string]string{"cmd": "cat ~/.agents/skills/csv-tools/SKILL.md"}),
		call("Skill", "ok", map[string]string{"skill": "docs-plugin:xlsx"}),
	}
	for i := range calls {
		calls[i].Seq = i + 1
	}
	return &toolcalls.Log{Calls: calls, Total: len(calls)}
}

// loadCriterion loads one criterion as a task file writes it.
func loadCriterion(t *testing.T, crit string) *task.Criterion {
	t.Helper()
	doc := "task_id: t\ninitial_prompt: p\nagent: {type: claude-code}\nsuccess_criteria:\n  - " + crit + "\n"
	tk, err := task.Parse("task.yaml", t.TempDir(), []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return &tk.Criteria[0]
}

func TestToolCallCriteria(t *testing.T) {
	tests := []struct {
		crit   string
		score  float64
		status Status
	}{
		{"{type: tool_called, tool: Bash, input_pattern: '^pytest'}", 1, Pass},
		{"{type: tool_called, tool: Bash, input_pattern: 'pytest.*tests/'}", 1, Pass}, // spans a continued line
		{"{type: tool_called, tool: Bash, input_pattern: pytest, outcome: ok, min_count: 2}", 0.5, Fail},
		{"{type: tool_called, tool: Bash, input_pattern: pytest, outcome: error, max_count: 1}", 1, Pass},
		{"{type: tool_called, tool: Bash, input_pattern: pytest, exclude_pattern: tests/}", 1, Pass},
		{"{type: tool_called, tool: Bash, input_pattern: 'rm -rf', min_count: 0, max_count: 0}", 1, Pass},
		{"{type: tool_called, tool_pattern: '^(Read|Edit)$', input_field: file_path, input_pattern: 'app\\.py$', min_count: 2, max_count: 2}", 1, Pass},
		{"{type: tool_called, tool: Read, input_field: command, input_pattern: '.*'}", 0, Fail}, // no such field
		{"{type: tool_called, tool: Write}", 0, Fail},
		{"{type: command_executed, tool_name: Bash, command_pattern: pytest, require_success: true}", 1, Pass},
		{"{type: command_executed, tool_name: Bash, command_pattern: pytest, min_count: 3}", 2.0 / 3, Fail},
		{"{type: tool_calls_budget, target: 4, max: 10}", 1 - 3.0/6, Fail},
		{"{type: tool_calls_budget, target: 7, max: 10}", 1, Pass},
		{"{type: tool_calls_budget, tool: Bash, target: 0, max: 2}", 0, Fail},
		{"{type: commands_efficiency, expected_commands: 5}", 5.0 / 7, Fail},
		{"{type: commands_efficiency, expected_commands: 9}", 1, Pass},
		{"{type: skill_used, skill: pdf}", 1, Pass},                // Read of its SKILL.md
		{"{type: skill_used, skill: csv-tools}", 1, Pass},          // cat of its SKILL.md
		{"{type: skill_used, skill: xlsx}", 1, Pass},               // the Skill tool, namespaced
		{"{type: skill_used, skill: 'docs-plugin:xlsx'}", 1, Pass}, // the Skill tool, namespace given
		{"{type: skill_used, skill: 'other:xlsx'}", 0, Fail},       // another plugin's skill
		{"{type: skill_used, skill: pd}", 0, Fail},                 // a prefix is not the skill
		{"{type: skill_used, skill: docx, expect_used: false}", 1, Pass},
		{"{type: skill_triggered, skill_name: pdf, expected_skill: ''}", 0, Fail},
		{"{type: skill_triggered, skill_name: pdf, expected_skill: pdf}", 1, Pass},
	}
	for _, tt := range tests {
		t.Run(tt.crit, func(t *testing.T) {
			c := loadCriterion(t, tt.crit)
			got := finish(c, evaluate(context.Background(), c, snap(t, tree{}), Options{ToolCalls: runLog()}))
			if got.Status != tt.status || math.Abs(got.Score-tt.score) > 1e-9 {
				t.Errorf("%s %.3f (%s), want %s %.3f", got.Status, got.Score, got.Details, tt.status, tt.score)
			}
		})
	}
}

func TestToolCallCriteriaWithoutATranscript(t *testing.T) {
	c := loadCriterion(t, "{type: tool_called, tool: Bash}")
	s := snap(t, tree{})
	if got := finish(c, evaluate(context.Background(), c, s, Options{})); got.Status != NotGraded {
		t.Errorf("offline: %+v", got)
	}
	got := finish(c, evaluate(context.Background(), c, s, Options{ToolCallsError: errors.New("permission denied")}))
	if got.Status != Error || !strings.Contains(got.Details, "permission denied") {
		t.Errorf("unreadable transcript: %+v", got)
	}
}

// Tool names and inputs are the model's (steered by what the agent fed it): details quote
// them inert and short.
func TestToolCallDetailsQuoteHostileNamesAndInputs(t *testing.T) {
	l := &toolcalls.Log{Calls: []toolcalls.Call{
		call("Bash\x1b[2J\nPASS", "ok", map[string]string{"command": "echo \x1b]0;pwned\x07" + strings.Repeat("x", 5000)}),
	}, Total: 1}
	c := loadCriterion(t, "{type: tool_called, tool_pattern: Bash}")
	got := finish(c, evaluate(context.Background(), c, snap(t, tree{}), Options{ToolCalls: l}))
	if strings.ContainsAny(got.Details, "\x1b\n\x07") || len(got.Details) > 600 {
		t.Errorf("details %q", got.Details)
	}
}
