package task

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// Fields of the tool-call criteria. command_executed keeps its protected-mock form (pattern)
// and also takes coder_eval's fields, which make it a tool_called; commands_efficiency and
// skill_triggered are coder_eval's spellings of tool_calls_budget and skill_used.
var toolCallFilter = []string{"tool", "tool_pattern", "input_field", "input_pattern", "exclude_pattern", "outcome"}

var coderEvalCommandFields = []string{"tool_name", "command_pattern", "exclude_pattern", "require_success"}

func init() {
	criterionFields[ToolCalled] = append(append([]string{}, toolCallFilter...), "min_count", "max_count")
	criterionFields[ToolCallsBudget] = append(append([]string{}, toolCallFilter...), "target", "max")
	criterionFields[SkillUsed] = []string{"skill", "expect_used"}
	criterionFields[CommandsEfficiency] = []string{"expected_commands"}
	criterionFields[SkillTriggered] = []string{"skill_name", "expected_skill"}
	criterionFields[CommandExecuted] = append(criterionFields[CommandExecuted], coderEvalCommandFields...)
	CriterionTypes = append(CriterionTypes, ToolCalled, ToolCallsBudget, SkillUsed, CommandsEfficiency, SkillTriggered)
}

// skillName is what a skill_used skill may be: a plugin skill's directory name, optionally
// with its plugin's namespace.
var skillName = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_.-]*(:[A-Za-z0-9][A-Za-z0-9_.-]*)?$`)

// toolCallFields are the decoders of the tool-call criteria's fields.
func (l *loader) toolCallFields(what string, c *Criterion) map[string]func(*yaml.Node) {
	count := func(name string, dst *int) func(*yaml.Node) {
		return func(v *yaml.Node) {
			n := int64(*dst)
			l.integer(v, what+"."+name, 0, 1e6, &n)
			*dst = int(n)
		}
	}
	return map[string]func(*yaml.Node){
		"tool_pattern":    func(v *yaml.Node) { l.regex(v, what+".tool_pattern", &c.ToolPattern) },
		"input_field":     func(v *yaml.Node) { l.str(v, what+".input_field", &c.InputField) },
		"input_pattern":   func(v *yaml.Node) { l.regex(v, what+".input_pattern", &c.InputPattern) },
		"exclude_pattern": func(v *yaml.Node) { l.regex(v, what+".exclude_pattern", &c.ExcludePattern) },
		"outcome":         func(v *yaml.Node) { l.enum(v, what+".outcome", []string{"any", "ok", "error"}, &c.Outcome) },
		"target":          count("target", &c.Target),
		"max":             count("max", &c.Max),
		"skill":           func(v *yaml.Node) { l.str(v, what+".skill", &c.Skill) },
		"expect_used":     func(v *yaml.Node) { l.boolean(v, what+".expect_used", &c.ExpectUsed) },
		// coder_eval's spellings
		"tool_name":       func(v *yaml.Node) { l.str(v, what+".tool_name", &c.Tool) },
		"command_pattern": func(v *yaml.Node) { l.regex(v, what+".command_pattern", &c.InputPattern) },
		"require_success": func(v *yaml.Node) {
			var b bool
			l.boolean(v, what+".require_success", &b)
			if b {
				c.Outcome = "ok"
			}
		},
		"expected_commands": count("expected_commands", &c.Target),
		"skill_name":        func(v *yaml.Node) { l.str(v, what+".skill_name", &c.Skill) },
		"expected_skill": func(v *yaml.Node) {
			var s string
			l.str(v, what+".expected_skill", &s)
			c.Alias = "expected_skill=" + s // resolved against skill_name in checkToolCriterion
		},
	}
}

// checkToolCriterion validates a tool-call criterion once its fields are read, and turns
// coder_eval's spellings into ceval's criteria (remembering the spelling in Alias).
func (l *loader) checkToolCriterion(n *yaml.Node, what string, c *Criterion, seen map[string]*yaml.Node) {
	switch c.Type {
	case CommandExecuted:
		var coder []string
		for _, f := range coderEvalCommandFields {
			if seen[f] != nil {
				coder = append(coder, f)
			}
		}
		if seen["pattern"] != nil {
			if len(coder) > 0 {
				l.errorf(n, "%s: pattern grades the protected mocks' call log, %s the model's tool calls: give one form, not both", what, strings.Join(coder, ", "))
			}
			return // the protected-mock form
		}
		c.Type, c.Alias = ToolCalled, CommandExecuted
	case CommandsEfficiency:
		if seen["expected_commands"] == nil {
			l.errorf(n, "%s: missing required field expected_commands", what)
		} else if c.Target < 1 {
			l.errorf(resolve(seen["expected_commands"]), "%s.expected_commands must be at least 1", what)
		}
		c.Type, c.Alias, c.BudgetRatio = ToolCallsBudget, CommandsEfficiency, true
	case SkillTriggered:
		expected, ok := strings.CutPrefix(c.Alias, "expected_skill=")
		if seen["skill_name"] == nil || !ok {
			l.errorf(n, "%s: give skill_name and expected_skill (the row's expected skill, \"\" when none should be used)", what)
		}
		c.Type, c.Alias, c.ExpectUsed = SkillUsed, SkillTriggered, expected == c.Skill
	case SkillUsed:
		c.ExpectUsed = seen["expect_used"] == nil || c.ExpectUsed
		if seen["skill"] == nil {
			l.errorf(n, "%s: missing required field skill (the skill's name, e.g. pdf or my-plugin:pdf)", what)
		}
	case ToolCalled, ToolCallsBudget:
	default:
		return
	}
	if c.Outcome == "" {
		c.Outcome = "any"
	}
	if c.Type == SkillUsed && c.Skill != "" && !skillName.MatchString(c.Skill) {
		l.errorf(n, "%s: skill %q is not a skill name (letters, digits, '.', '_', '-', optionally plugin:skill)", what, c.Skill)
	}
	if c.Tool != "" && c.ToolPattern != "" {
		l.errorf(n, "%s: give tool (an exact name) or tool_pattern (a regular expression), not both", what)
	}
	if c.InputField != "" && c.InputPattern == "" {
		l.errorf(resolve(seen["input_field"]), "%s: input_field names the field input_pattern tests; give input_pattern too", what)
	}
	if c.Type == ToolCallsBudget && !c.BudgetRatio {
		switch {
		case seen["target"] == nil || seen["max"] == nil:
			l.errorf(n, "%s: give target (calls that still score 1) and max (calls that score 0)", what)
		case c.Max <= c.Target:
			l.errorf(resolve(seen["max"]), "%s: max %d must be more than target %d", what, c.Max, c.Target)
		}
	}
}

// checkToolCriteria refuses tool-call criteria on an agent without a model gateway: the
// calls are read from its transcript, and nothing else is trusted for them.
func (l *loader) checkToolCriteria(t *Task) {
	for i, c := range t.Criteria {
		if c.Type == LLMJudge && len(c.ReferenceFiles) > 0 && t.Reference == nil {
			l.errorf(&yaml.Node{Line: c.Line, Column: c.Column}, "success_criteria[%d] (llm_judge): reference_files needs reference.directory", i)
		}
	}
	if t.Agent == nil || t.Agent.Gateway != nil {
		return
	}
	for i, c := range t.Criteria {
		if !c.OnToolCalls() {
			continue
		}
		name := c.Type
		if c.Alias != "" {
			name = c.Alias
		}
		l.errorf(&yaml.Node{Line: c.Line, Column: c.Column},
			"success_criteria[%d] (%s): graded on the tool calls in the model gateway's transcript, and this %s agent has no gateway: add agent.gateway (mode forward, record or replay) and point the agent at $CEVAL_GATEWAY_URL, or remove the criterion",
			i, name, t.Agent.Type)
	}
}

// ToolFilter describes a tool-call criterion's filter for details and reports.
func (c *Criterion) ToolFilter() string {
	var parts []string
	switch {
	case c.Tool != "":
		parts = append(parts, "tool "+c.Tool)
	case c.ToolPattern != "":
		parts = append(parts, fmt.Sprintf("tool ~ /%s/", c.ToolPattern))
	}
	if c.InputPattern != "" {
		f := c.InputField
		if f == "" {
			f = "input"
		}
		parts = append(parts, fmt.Sprintf("%s ~ /%s/", f, c.InputPattern))
	}
	if c.ExcludePattern != "" {
		parts = append(parts, fmt.Sprintf("not /%s/", c.ExcludePattern))
	}
	if c.Outcome != "" && c.Outcome != "any" {
		parts = append(parts, "outcome "+c.Outcome)
	}
	if len(parts) == 0 {
		return "any call"
	}
	return strings.Join(parts, ", ")
}
