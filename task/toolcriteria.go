package task

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/internal/lazyregexp"
)

// ToolCallFilter selects the model's tool calls a tool_called or tool_calls_budget counts.
type ToolCallFilter struct {
	Tool           string // the exact tool name
	ToolPattern    string // regular expression on the tool name
	InputField     string // the input field InputPattern tests; "": command or cmd, else all fields
	InputPattern   string
	ExcludePattern string // calls whose input matches it do not count
	Outcome        string // any | ok | error
}

// CallCount bounds the matching calls of cli_called, command_executed and tool_called.
type CallCount struct {
	MinCount int // default 1
	MaxCount int // -1: no maximum
}

// ToolCalledSpec is a tool_called: calls the filter selects, counted.
type ToolCalledSpec struct {
	ToolCallFilter
	CallCount
}

// ToolCallsBudgetSpec is a tool_calls_budget: score 1 at or under Target calls, 0 at Max.
type ToolCallsBudgetSpec struct {
	ToolCallFilter
	Target, Max int
	BudgetRatio bool // commands_efficiency: score Target/max(calls, Target), 0 for no call
}

// SkillUsedSpec is a skill_used: the skill's use (or its absence) in the tool calls.
type SkillUsedSpec struct {
	Skill      string
	ExpectUsed bool // false when the skill must not be used
}

// CLICalledSpec is a cli_called: calls of a protected mock whose arguments hold the checks.
type CLICalledSpec struct {
	Tool       string
	Positional []string    // the call's positional arguments start with these
	Flags      []FlagCheck // every check holds
	CallCount
}

// CommandExecutedSpec is a command_executed in its protected-mock form: logged calls whose
// command line matches Pattern (its coder_eval form loads as a tool_called).
type CommandExecutedSpec struct {
	Pattern string
	CallCount
}

// skillName is what a skill_used skill may be: a plugin skill's directory name, optionally
// with its plugin's namespace.
var skillName = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_.-]*(:[A-Za-z0-9][A-Za-z0-9_.-]*)?$`)

// countField reads a count field (0 to 1e6) into dst.
func countField(name string, dst *int) criterionField {
	return criterionField{name, func(cd *criterionDecoding, v *yaml.Node) {
		n := int64(*dst)
		cd.l.integer(v, cd.what+"."+name, 0, 1e6, &n)
		*dst = int(n)
	}}
}

func (c *CallCount) fields() []criterionField {
	return []criterionField{countField("min_count", &c.MinCount), countField("max_count", &c.MaxCount)}
}

// check refuses a min_count over max_count.
func (c *CallCount) check(cd *criterionDecoding) {
	if c.MaxCount >= 0 && c.MinCount > c.MaxCount {
		cd.errorf(cd.n, "min_count %d is over max_count %d", c.MinCount, c.MaxCount)
	}
}

func (f *ToolCallFilter) fields() []criterionField {
	return []criterionField{
		{"tool", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".tool", &f.Tool) }},
		{"tool_pattern", func(cd *criterionDecoding, v *yaml.Node) { cd.l.regex(v, cd.what+".tool_pattern", &f.ToolPattern) }},
		{"input_field", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".input_field", &f.InputField) }},
		{"input_pattern", func(cd *criterionDecoding, v *yaml.Node) { cd.l.regex(v, cd.what+".input_pattern", &f.InputPattern) }},
		{"exclude_pattern", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.regex(v, cd.what+".exclude_pattern", &f.ExcludePattern)
		}},
		{"outcome", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.enum(v, cd.what+".outcome", []string{"any", "ok", "error"}, &f.Outcome)
		}},
	}
}

// check validates the filter once its fields are read and defaults outcome.
func (f *ToolCallFilter) check(cd *criterionDecoding) {
	if f.Outcome == "" {
		f.Outcome = "any"
	}
	if f.Tool != "" && f.ToolPattern != "" {
		cd.errorf(cd.n, "give tool (an exact name) or tool_pattern (a regular expression), not both")
	}
	if f.InputField != "" && f.InputPattern == "" {
		cd.errorf(resolve(cd.keys["input_field"]), "input_field names the field input_pattern tests; give input_pattern too")
	}
}

func newToolCalledSpec() *ToolCalledSpec {
	return &ToolCalledSpec{CallCount: CallCount{MinCount: 1, MaxCount: -1}}
}

func (s *ToolCalledSpec) fields() []criterionField {
	return append(s.ToolCallFilter.fields(), s.CallCount.fields()...)
}

func (s *ToolCalledSpec) check(cd *criterionDecoding) {
	s.ToolCallFilter.check(cd)
	s.CallCount.check(cd)
}

func (s *ToolCallsBudgetSpec) fields() []criterionField {
	return append(s.ToolCallFilter.fields(), countField("target", &s.Target), countField("max", &s.Max))
}

func (s *ToolCallsBudgetSpec) check(cd *criterionDecoding) {
	s.ToolCallFilter.check(cd)
	if s.BudgetRatio {
		return
	}
	switch {
	case cd.keys["target"] == nil || cd.keys["max"] == nil:
		cd.errorf(cd.n, "give target (calls that still score 1) and max (calls that score 0)")
	case s.Max <= s.Target:
		cd.errorf(resolve(cd.keys["max"]), "max %d must be more than target %d", s.Max, s.Target)
	}
}

func (s *SkillUsedSpec) fields() []criterionField {
	return []criterionField{
		{"skill", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".skill", &s.Skill) }},
		{"expect_used", func(cd *criterionDecoding, v *yaml.Node) { cd.l.boolean(v, cd.what+".expect_used", &s.ExpectUsed) }},
	}
}

func (s *SkillUsedSpec) check(cd *criterionDecoding) {
	s.ExpectUsed = cd.keys["expect_used"] == nil || s.ExpectUsed
	if cd.keys["skill"] == nil {
		cd.errorf(cd.n, "missing required field skill (the skill's name, e.g. pdf or my-plugin:pdf)")
	}
	s.checkName(cd)
}

func (s *SkillUsedSpec) checkName(cd *criterionDecoding) {
	if s.Skill != "" && !skillName.MatchString(s.Skill) {
		cd.errorf(cd.n, "skill %q is not a skill name (letters, digits, '.', '_', '-', optionally plugin:skill)", s.Skill)
	}
}

func newCLICalledSpec() *CLICalledSpec {
	return &CLICalledSpec{CallCount: CallCount{MinCount: 1, MaxCount: -1}}
}

func (s *CLICalledSpec) fields() []criterionField {
	return append([]criterionField{
		{"tool", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".tool", &s.Tool) }},
		{"argv", func(cd *criterionDecoding, v *yaml.Node) { cd.l.argvCheck(v, cd.what+".argv", s) }},
	}, s.CallCount.fields()...)
}

func (s *CLICalledSpec) check(cd *criterionDecoding) {
	cd.need("tool")
	s.CallCount.check(cd)
}

func (s *CommandExecutedSpec) fields() []criterionField {
	return append([]criterionField{
		{"pattern", func(cd *criterionDecoding, v *yaml.Node) { cd.l.regex(v, cd.what+".pattern", &s.Pattern) }},
	}, s.CallCount.fields()...)
}

func (s *CommandExecutedSpec) check(cd *criterionDecoding) { s.CallCount.check(cd) }

// commandExecuted decodes a command_executed: its protected-mock form (pattern), or
// coder_eval's fields, which make it a tool_called.
type commandExecuted struct {
	CommandExecutedSpec
	filter ToolCallFilter
}

func newCommandExecuted() *commandExecuted {
	return &commandExecuted{CommandExecutedSpec: CommandExecutedSpec{CallCount: CallCount{MinCount: 1, MaxCount: -1}}}
}

// coderEvalCommandFields are coder_eval's fields of a command_executed.
var coderEvalCommandFields = []string{"tool_name", "command_pattern", "exclude_pattern", "require_success"}

func (s *commandExecuted) fields() []criterionField {
	return append(s.CommandExecutedSpec.fields(), []criterionField{
		{"tool_name", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".tool_name", &s.filter.Tool) }},
		{"command_pattern", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.regex(v, cd.what+".command_pattern", &s.filter.InputPattern)
		}},
		{"exclude_pattern", func(cd *criterionDecoding, v *yaml.Node) {
			cd.l.regex(v, cd.what+".exclude_pattern", &s.filter.ExcludePattern)
		}},
		{"require_success", func(cd *criterionDecoding, v *yaml.Node) {
			var b bool
			cd.l.boolean(v, cd.what+".require_success", &b)
			if b {
				s.filter.Outcome = "ok"
			}
		}},
	}...)
}

// check keeps the protected-mock form, or turns coder_eval's fields into a tool_called.
func (s *commandExecuted) check(cd *criterionDecoding) {
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
		cd.c.Spec = &s.CommandExecutedSpec
		s.CommandExecutedSpec.check(cd)
		return
	}
	tc := &ToolCalledSpec{ToolCallFilter: s.filter, CallCount: s.CallCount}
	cd.c.Type, cd.c.Alias, cd.c.Spec = ToolCalled, CommandExecuted, tc
	tc.ToolCallFilter.check(cd)
	tc.CallCount.check(cd)
}

// commandsEfficiency decodes coder_eval's commands_efficiency, a tool_calls_budget scored
// by its ratio.
type commandsEfficiency struct{ expected int }

func (s *commandsEfficiency) fields() []criterionField {
	return []criterionField{countField("expected_commands", &s.expected)}
}

func (s *commandsEfficiency) check(cd *criterionDecoding) {
	if cd.keys["expected_commands"] == nil {
		cd.errorf(cd.n, "missing required field expected_commands")
	} else if s.expected < 1 {
		cd.l.errorf(resolve(cd.keys["expected_commands"]), "%s.expected_commands must be at least 1", cd.what)
	}
	b := &ToolCallsBudgetSpec{Target: s.expected, BudgetRatio: true}
	cd.c.Type, cd.c.Alias, cd.c.Spec = ToolCallsBudget, CommandsEfficiency, b
	b.check(cd)
}

// skillTriggered decodes coder_eval's skill_triggered, a skill_used whose row expects the
// skill (expected_skill is skill_name) or none.
type skillTriggered struct {
	skill    SkillUsedSpec
	expected *string
}

func (s *skillTriggered) fields() []criterionField {
	return []criterionField{
		{"skill_name", func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".skill_name", &s.skill.Skill) }},
		{"expected_skill", func(cd *criterionDecoding, v *yaml.Node) {
			var e string
			cd.l.str(v, cd.what+".expected_skill", &e)
			s.expected = &e
		}},
	}
}

func (s *skillTriggered) check(cd *criterionDecoding) {
	if cd.keys["skill_name"] == nil || s.expected == nil {
		cd.errorf(cd.n, "give skill_name and expected_skill (the row's expected skill, \"\" when none should be used)")
	}
	s.skill.ExpectUsed = s.expected != nil && *s.expected == s.skill.Skill
	cd.c.Type, cd.c.Alias, cd.c.Spec = SkillUsed, SkillTriggered, &s.skill
	s.skill.checkName(cd)
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

// String describes the filter for details and reports.
func (f *ToolCallFilter) String() string {
	var parts []string
	switch {
	case f.Tool != "":
		parts = append(parts, "tool "+f.Tool)
	case f.ToolPattern != "":
		parts = append(parts, fmt.Sprintf("tool ~ /%s/", f.ToolPattern))
	}
	if f.InputPattern != "" {
		field := f.InputField
		if field == "" {
			field = "input"
		}
		parts = append(parts, fmt.Sprintf("%s ~ /%s/", field, f.InputPattern))
	}
	if f.ExcludePattern != "" {
		parts = append(parts, fmt.Sprintf("not /%s/", f.ExcludePattern))
	}
	if f.Outcome != "" && f.Outcome != "any" {
		parts = append(parts, "outcome "+f.Outcome)
	}
	if len(parts) == 0 {
		return "any call"
	}
	return strings.Join(parts, ", ")
}
