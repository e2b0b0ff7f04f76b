package task

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// criterionType is one type of success criterion: its name, and the struct of its own
// fields (Criterion.Spec) besides type, description, weight and pass_threshold, which
// decodes and checks itself.
type criterionType struct {
	name string
	// spec makes the type's empty struct (its defaults set).
	spec func() CriterionSpec
}

// CriterionSpec is a criterion type's own fields: one struct per type (*LLMJudgeSpec, ...),
// which owns its fields' decoding and its checks. Only this package's types implement it.
type CriterionSpec interface {
	// fields are the type's own fields, each decoded into the struct; any other key is
	// refused with this list. Their order is the JSON Schema's.
	fields() []criterionField
	// check refuses missing fields and bad combinations and fills defaults once the fields
	// are read; it may replace cd.c.Spec (a coder_eval spelling becomes ceval's type).
	check(cd *criterionDecoding)
}

// criterionField is one field of a criterion type, with its decoder into the type's struct.
type criterionField struct {
	name   string
	decode criterionFieldDecoder
}

// fieldNames are the type's own fields in their declared order.
func (ct *criterionType) fieldNames() []string {
	var names []string
	for _, f := range ct.spec().fields() {
		names = append(names, f.name)
	}
	return names
}

// criterionRegistry is every criterion type, in the order CriterionTypes lists them (help,
// messages, the JSON Schema's enum). A new type is one entry here: the order is this
// table's, never that of file names or init functions.
var criterionRegistry = []criterionType{
	{name: FileExists, spec: func() CriterionSpec { return &FileExistsSpec{} }},
	{name: FileContains, spec: func() CriterionSpec { return &FileContainsSpec{} }},
	{name: FileMatchesRegex, spec: func() CriterionSpec { return &FileMatchesRegexSpec{} }},
	{name: FileCheck, spec: func() CriterionSpec { return &FileCheckSpec{} }},
	{name: JSONCheck, spec: func() CriterionSpec { return &JSONCheckSpec{} }},
	{name: ClassificationMatch, spec: func() CriterionSpec { return &ClassificationMatchSpec{} }},
	{name: RunCommand, spec: func() CriterionSpec { return newRunCommandSpec() }},
	{name: WASMCheck, spec: func() CriterionSpec { return newWASMSpec() }},
	{name: CLICalled, spec: func() CriterionSpec { return newCLICalledSpec() }},
	{name: CommandExecuted, spec: func() CriterionSpec { return newCommandExecuted() }},
	{name: Pytest, spec: func() CriterionSpec { return newPytestSpec() }},
	{name: AgentJudge, spec: func() CriterionSpec { return newAgentJudgeSpec() }},
	{name: LLMJudge, spec: func() CriterionSpec { return newLLMJudgeSpec() }},
	{name: ToolCalled, spec: func() CriterionSpec { return newToolCalledSpec() }},
	{name: ToolCallsBudget, spec: func() CriterionSpec { return &ToolCallsBudgetSpec{} }},
	{name: SkillUsed, spec: func() CriterionSpec { return &SkillUsedSpec{} }},
	{name: CommandsEfficiency, spec: func() CriterionSpec { return &commandsEfficiency{} }},
	{name: SkillTriggered, spec: func() CriterionSpec { return &skillTriggered{} }},
}

// CriterionTypes lists the criterion types in criterionRegistry's order, for help and messages.
var CriterionTypes = criterionTypeNames()

func criterionTypeNames() []string {
	names := make([]string, len(criterionRegistry))
	for i, ct := range criterionRegistry {
		names[i] = ct.name
	}
	return names
}

// lookupCriterionType is the registry's entry for a type, nil for none.
func lookupCriterionType(name string) *criterionType {
	for i := range criterionRegistry {
		if criterionRegistry[i].name == name {
			return &criterionRegistry[i]
		}
	}
	return nil
}

// criterionFieldDecoder reads one field's value (v) into its type's struct.
type criterionFieldDecoder func(cd *criterionDecoding, v *yaml.Node)

// criterionDecoding is one criterion being read: its fields' decoders and its type's check
// share it.
type criterionDecoding struct {
	l    *loader
	what string     // success_criteria[i] (type)
	n    *yaml.Node // the criterion's mapping
	c    *Criterion
	// keys are the keys present (their key nodes), vals the values of the type's fields read.
	keys, vals map[string]*yaml.Node
	// tier decodes the grader: fields of a run_command or pytest into its GraderTier's graderSpec.
	tier map[string]func(*yaml.Node)
}

func (cd *criterionDecoding) errorf(n *yaml.Node, format string, args ...any) {
	cd.l.errorf(n, "%s: "+format, append([]any{cd.what}, args...)...)
}

// need refuses a criterion without the field name.
func (cd *criterionDecoding) need(name string) {
	if cd.keys[name] == nil {
		cd.errorf(cd.n, "missing required field %s", name)
	}
}

func (l *loader) criterion(i int, n *yaml.Node) (Criterion, bool) {
	what := fmt.Sprintf("success_criteria[%d]", i)
	rn := resolve(n)
	c := Criterion{Weight: DefaultWeight, PassThreshold: DefaultPassThreshold, Line: rn.Line, Column: rn.Column}
	if rn.Kind != yaml.MappingNode {
		l.errorf(rn, "%s must be a mapping, got %s", what, kindName(rn))
		return c, false
	}
	// The type decides which other fields are allowed, so read it first.
	for j := 0; j+1 < len(rn.Content); j += 2 {
		if resolve(rn.Content[j]).Value == "type" {
			l.enum(rn.Content[j+1], what+".type", CriterionTypes, &c.Type)
		}
	}
	ct := lookupCriterionType(c.Type)
	if ct == nil {
		if !hasKey(rn, "type") {
			l.errorf(rn, "%s: missing required field type (one of %s)", what, strings.Join(CriterionTypes, ", "))
		}
		return c, false
	}
	cd := &criterionDecoding{l: l, what: fmt.Sprintf("%s (%s)", what, c.Type), n: rn, c: &c, vals: map[string]*yaml.Node{}}
	spec := ct.spec()
	c.Spec = spec
	if g := c.GraderTier(); g != nil {
		g.tier = &graderSpec{}
		cd.tier = l.graderFields(cd.what, g.tier)
	}
	fields := []field{
		{"type", nil},
		{"description", func(v *yaml.Node) { l.str(v, cd.what+".description", &c.Description) }},
		{"weight", func(v *yaml.Node) { l.number(v, cd.what+".weight", 0, 1e6, &c.Weight) }},
		{"pass_threshold", func(v *yaml.Node) { l.number(v, cd.what+".pass_threshold", 0, 1, &c.PassThreshold) }},
	}
	for _, f := range spec.fields() {
		fields = append(fields, field{f.name, func(v *yaml.Node) { cd.vals[f.name] = v; f.decode(cd, v) }})
	}
	cd.keys = l.mappingHint(rn, cd.what, fields, fieldOfOtherTypes)
	spec.check(cd)
	return c, true
}

// fieldOfOtherTypes names the criterion types that take the field, for the message that
// refuses it on another type.
func fieldOfOtherTypes(name string) string {
	var types []string
	for _, ct := range criterionRegistry {
		for _, f := range ct.fieldNames() {
			if f == name {
				types = append(types, ct.name)
			}
		}
	}
	if len(types) == 0 {
		return ""
	}
	return fmt.Sprintf("%s is a field of %s", name, strings.Join(types, ", "))
}

// timeoutField reads timeout (the executing criteria's and agent_judge's) into dst.
func timeoutField(dst *time.Duration) criterionField {
	return criterionField{"timeout", func(cd *criterionDecoding, v *yaml.Node) { cd.l.duration(v, cd.what+".timeout", dst) }}
}
