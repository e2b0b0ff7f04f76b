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
const toolCallFilter = "tool tool_pattern input_field input_pattern exclude_pattern outcome"

var coderEvalCommandFields = []string{"tool_name", "command_pattern", "exclude_pattern", "require_success"}

// skillName is what a skill_used skill may be: a plugin skill's directory name, optionally
// with its plugin's namespace.
var skillName = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_.-]*(:[A-Za-z0-9][A-Za-z0-9_.-]*)?$`)

// toolCallCount reads a count field into the int dst points to.
func toolCallCount(name string, dst func(*Criterion) *int) criterionFieldDecoder {
	return func(cd *criterionDecoding, v *yaml.Node) {
		p := dst(cd.c)
		n := int64(*p)
		cd.l.integer(v, cd.what+"."+name, 0, 1e6, &n)
		*p = int(n)
	}
}

// toolCallFieldDecoders read the tool-call criteria's fields (tool, min_count and max_count
// are the call-log criteria's).
var toolCallFieldDecoders = map[string]criterionFieldDecoder{
	"tool_pattern":  func(cd *criterionDecoding, v *yaml.Node) { cd.l.regex(v, cd.what+".tool_pattern", &cd.c.ToolPattern) },
	"input_field":   func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".input_field", &cd.c.InputField) },
	"input_pattern": func(cd *criterionDecoding, v *yaml.Node) { cd.l.regex(v, cd.what+".input_pattern", &cd.c.InputPattern) },
	"exclude_pattern": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.regex(v, cd.what+".exclude_pattern", &cd.c.ExcludePattern)
	},
	"outcome": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.enum(v, cd.what+".outcome", []string{"any", "ok", "error"}, &cd.c.Outcome)
	},
	"target":      toolCallCount("target", func(c *Criterion) *int { return &c.Target }),
	"max":         toolCallCount("max", func(c *Criterion) *int { return &c.Max }),
	"skill":       func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".skill", &cd.c.Skill) },
	"expect_used": func(cd *criterionDecoding, v *yaml.Node) { cd.l.boolean(v, cd.what+".expect_used", &cd.c.ExpectUsed) },
	// coder_eval's spellings
	"tool_name": func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".tool_name", &cd.c.Tool) },
	"command_pattern": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.regex(v, cd.what+".command_pattern", &cd.c.InputPattern)
	},
	"require_success": func(cd *criterionDecoding, v *yaml.Node) {
		var b bool
		cd.l.boolean(v, cd.what+".require_success", &b)
		if b {
			cd.c.Outcome = "ok"
		}
	},
	"expected_commands": toolCallCount("expected_commands", func(c *Criterion) *int { return &c.Target }),
	"skill_name":        func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".skill_name", &cd.c.Skill) },
	"expected_skill": func(cd *criterionDecoding, v *yaml.Node) {
		var s string
		cd.l.str(v, cd.what+".expected_skill", &s)
		cd.c.Alias = "expected_skill=" + s // resolved against skill_name in checkSkillTriggered
	},
}

// checkCommandExecuted keeps the protected-mock form (pattern), or turns coder_eval's
// fields into a tool_called.
func checkCommandExecuted(cd *criterionDecoding) {
	var coder []string
	for _, f := range coderEvalCommandFields {
		if cd.keys[f] != nil {
			coder = append(coder, f)
		}
	}
	if cd.keys["pattern"] != nil {
		if len(coder) > 0 {
			cd.errorf(cd.n, "pattern grades the protected mocks' call log, %s the model's tool calls: give one form, not both", strings.Join(coder, ", "))
		}
	} else {
		cd.c.Type, cd.c.Alias = ToolCalled, CommandExecuted
		cd.checkToolCall()
	}
	cd.checkCounts()
}

func checkToolCalled(cd *criterionDecoding) {
	cd.checkToolCall()
	cd.checkCounts()
}

func checkToolCallsBudget(cd *criterionDecoding) { cd.checkToolCall() }

func checkCommandsEfficiency(cd *criterionDecoding) {
	c := cd.c
	if cd.keys["expected_commands"] == nil {
		cd.errorf(cd.n, "missing required field expected_commands")
	} else if c.Target < 1 {
		cd.l.errorf(resolve(cd.keys["expected_commands"]), "%s.expected_commands must be at least 1", cd.what)
	}
	c.Type, c.Alias, c.BudgetRatio = ToolCallsBudget, CommandsEfficiency, true
	cd.checkToolCall()
}

func checkSkillTriggered(cd *criterionDecoding) {
	c := cd.c
	expected, ok := strings.CutPrefix(c.Alias, "expected_skill=")
	if cd.keys["skill_name"] == nil || !ok {
		cd.errorf(cd.n, "give skill_name and expected_skill (the row's expected skill, \"\" when none should be used)")
	}
	c.Type, c.Alias, c.ExpectUsed = SkillUsed, SkillTriggered, expected == c.Skill
	cd.checkToolCall()
}

func checkSkillUsed(cd *criterionDecoding) {
	c := cd.c
	c.ExpectUsed = cd.keys["expect_used"] == nil || c.ExpectUsed
	if cd.keys["skill"] == nil {
		cd.errorf(cd.n, "missing required field skill (the skill's name, e.g. pdf or my-plugin:pdf)")
	}
	cd.checkToolCall()
}

// checkToolCall validates a tool-call criterion (tool_called, tool_calls_budget, skill_used,
// as written or as coder_eval's spellings became) once its fields are read.
func (cd *criterionDecoding) checkToolCall() {
	c, n := cd.c, cd.n
	if c.Outcome == "" {
		c.Outcome = "any"
	}
	if c.Type == SkillUsed && c.Skill != "" && !skillName.MatchString(c.Skill) {
		cd.errorf(n, "skill %q is not a skill name (letters, digits, '.', '_', '-', optionally plugin:skill)", c.Skill)
	}
	if c.Tool != "" && c.ToolPattern != "" {
		cd.errorf(n, "give tool (an exact name) or tool_pattern (a regular expression), not both")
	}
	if c.InputField != "" && c.InputPattern == "" {
		cd.errorf(resolve(cd.keys["input_field"]), "input_field names the field input_pattern tests; give input_pattern too")
	}
	if c.Type == ToolCallsBudget && !c.BudgetRatio {
		switch {
		case cd.keys["target"] == nil || cd.keys["max"] == nil:
			cd.errorf(n, "give target (calls that still score 1) and max (calls that score 0)")
		case c.Max <= c.Target:
			cd.errorf(resolve(cd.keys["max"]), "max %d must be more than target %d", c.Max, c.Target)
		}
	}
}

// checkToolCriteria refuses tool-call criteria on an agent without a model gateway: the
// calls are read from its transcript, and nothing else is trusted for them.
func (l *loader) checkToolCriteria(t *Task) {
	for i, c := range t.Criteria {
		if s, ok := c.Spec.(*LLMJudgeSpec); ok && len(s.ReferenceFiles) > 0 && t.Reference == nil {
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
