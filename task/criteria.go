package task

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// criterionType is one type of success criterion: the fields it takes besides type,
// description, weight and pass_threshold, and its check once they are read. A type with
// spec decodes into a struct of its own (Criterion.Spec); the executing types (run_command,
// wasm, pytest) still decode into Criterion's own fields through fields, tier and check.
type criterionType struct {
	name string
	// fields are the type's own fields, each read by criterionFieldDecoders[field]; any other
	// key is refused with this list. Their order is the JSON Schema's.
	fields []string
	// tier: the type takes the grader: section's fields (graderFieldNames) and may run in a
	// verifier container.
	tier bool
	// check refuses missing fields and bad combinations, fills defaults, and turns a
	// coder_eval spelling into ceval's type (recording the spelling in Criterion.Alias).
	check func(cd *criterionDecoding)
	// spec makes the type's empty struct (its defaults set), which decodes and checks itself.
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
	if ct.spec == nil {
		return ct.fields
	}
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
	{name: RunCommand, check: checkRunCommand, tier: true, fields: strings.Fields(
		"command timeout expected_exit_code expected_stdout stdout_match score_from_stdout reward_key harbor_reward " +
			"uses_reference python_packages python_wheels " + graderFieldList + " services")},
	{name: WASMCheck, check: checkWASM,
		fields: strings.Fields("module sha256 args timeout expected_exit_code score_from_stdout reward_key uses_reference")},
	{name: CLICalled, spec: func() CriterionSpec { return newCLICalledSpec() }},
	{name: CommandExecuted, spec: func() CriterionSpec { return newCommandExecuted() }},
	{name: Pytest, check: checkPytest, tier: true, fields: strings.Fields(
		"tests args timeout all_or_nothing isolation python_packages python_wheels " + graderFieldList + " services")},
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

// criterionFieldDecoders reads each field of the executing types into the Criterion; the
// tables are disjoint (mergeFieldDecoders panics otherwise), so a field reads the same in
// every such type. A type with a struct of its own shares a field's decoder by a function
// (pathField, timeoutField, rubricFields, ...).
var criterionFieldDecoders = mergeFieldDecoders(execFieldDecoders, tierFieldDecoders())

// criterionFieldDecoder reads one field's value (v) into cd.c, or into its type's struct.
type criterionFieldDecoder func(cd *criterionDecoding, v *yaml.Node)

func mergeFieldDecoders(tables ...map[string]criterionFieldDecoder) map[string]criterionFieldDecoder {
	all := map[string]criterionFieldDecoder{}
	for _, t := range tables {
		for name, dec := range t {
			if _, dup := all[name]; dup {
				panic("task: criterion field " + name + " has two decoders")
			}
			all[name] = dec
		}
	}
	return all
}

// criterionDecoding is one criterion being read: its fields' decoders and its type's check
// share it.
type criterionDecoding struct {
	l    *loader
	what string     // success_criteria[i] (type)
	n    *yaml.Node // the criterion's mapping
	c    *Criterion
	// keys are the keys present (their key nodes), vals the values of the type's fields read.
	keys, vals map[string]*yaml.Node
	// tier decodes the grader: fields of a tier type into c.tier.
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
	c := Criterion{Weight: DefaultWeight, PassThreshold: DefaultPassThreshold, Line: rn.Line, Column: rn.Column,
		Timeout: DefaultCheckTimeout}
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
	if ct.tier {
		c.tier = &graderSpec{}
		cd.tier = l.graderFields(cd.what, c.tier)
	}
	fields := []field{
		{"type", nil},
		{"description", func(v *yaml.Node) { l.str(v, cd.what+".description", &c.Description) }},
		{"weight", func(v *yaml.Node) { l.number(v, cd.what+".weight", 0, 1e6, &c.Weight) }},
		{"pass_threshold", func(v *yaml.Node) { l.number(v, cd.what+".pass_threshold", 0, 1, &c.PassThreshold) }},
	}
	if ct.spec == nil {
		for _, name := range ct.fields {
			dec := criterionFieldDecoders[name]
			fields = append(fields, field{name, func(v *yaml.Node) { cd.vals[name] = v; dec(cd, v) }})
		}
		cd.keys = l.mappingHint(rn, cd.what, fields, fieldOfOtherTypes)
		ct.check(cd)
		return c, true
	}
	spec := ct.spec()
	c.Spec = spec
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

// execFieldDecoders read the fields of the criteria that run code (run_command, wasm,
// pytest); timeout is agent_judge's too.
var execFieldDecoders = map[string]criterionFieldDecoder{
	"command": func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".command", &cd.c.Command) },
	"timeout": func(cd *criterionDecoding, v *yaml.Node) { cd.l.duration(v, cd.what+".timeout", &cd.c.Timeout) },
	"expected_exit_code": func(cd *criterionDecoding, v *yaml.Node) {
		var code int64
		cd.l.integer(v, cd.what+".expected_exit_code", 0, 255, &code)
		cd.c.ExpectedExitCode = int(code)
	},
	"expected_stdout": func(cd *criterionDecoding, v *yaml.Node) {
		var s string
		cd.l.str(v, cd.what+".expected_stdout", &s)
		cd.c.ExpectedStdout = &s
	},
	"stdout_match": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.enum(v, cd.what+".stdout_match", []string{"exact", "contains", "regex"}, &cd.c.StdoutMatch)
	},
	"score_from_stdout": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.boolean(v, cd.what+".score_from_stdout", &cd.c.ScoreFromStdout)
	},
	"reward_key": func(cd *criterionDecoding, v *yaml.Node) { cd.l.str(v, cd.what+".reward_key", &cd.c.RewardKey) },
	"harbor_reward": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.boolean(v, cd.what+".harbor_reward", &cd.c.HarborReward)
	},
	"uses_reference": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.boolean(v, cd.what+".uses_reference", &cd.c.UsesReference)
	},
	"module": func(cd *criterionDecoding, v *yaml.Node) { cd.c.Module = cd.l.openFile(v, cd.what+".module") },
	"sha256": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.str(v, cd.what+".sha256", &cd.c.ModuleSHA256)
		if cd.c.ModuleSHA256 != "" && !sha256Pattern.MatchString(cd.c.ModuleSHA256) {
			cd.l.errorf(resolve(v), "%s.sha256 must be 64 lowercase hex digits", cd.what)
		}
	},
	"args":  func(cd *criterionDecoding, v *yaml.Node) { cd.l.strings(v, cd.what+".args", &cd.c.Args) },
	"tests": func(cd *criterionDecoding, v *yaml.Node) { cd.l.pytestTests(v, cd.what+".tests", cd.c) },
	"all_or_nothing": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.boolean(v, cd.what+".all_or_nothing", &cd.c.AllOrNothing)
	},
	"isolation": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.enum(v, cd.what+".isolation", []string{IsolationNone, IsolationProcess}, &cd.c.Isolation)
	},
	"python_packages": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.pythonPackages(v, cd.what+".python_packages", &cd.c.PythonPackages)
	},
	"python_wheels": func(cd *criterionDecoding, v *yaml.Node) {
		cd.l.pythonWheels(v, cd.what+".python_wheels", &cd.c.PythonWheels)
	},
	"services": func(cd *criterionDecoding, v *yaml.Node) { cd.l.strings(v, cd.what+".services", &cd.c.Services) },
}

// timeoutField reads timeout (the executing criteria's and agent_judge's) into dst.
func timeoutField(dst *time.Duration) criterionField {
	return criterionField{"timeout", func(cd *criterionDecoding, v *yaml.Node) { cd.l.duration(v, cd.what+".timeout", dst) }}
}

// tierFieldDecoders read the grader: section's fields on a criterion of a tier type.
func tierFieldDecoders() map[string]criterionFieldDecoder {
	m := map[string]criterionFieldDecoder{}
	for _, name := range graderFieldNames {
		m[name] = func(cd *criterionDecoding, v *yaml.Node) { cd.tier[name](v) }
	}
	return m
}

func checkRunCommand(cd *criterionDecoding) {
	cd.tierRead()
	cd.need("command")
	if cd.keys["command"] != nil && strings.TrimSpace(cd.c.Command) == "" {
		cd.errorf(cd.n, "command must not be empty")
	}
	cd.checkScoring()
}

func checkWASM(cd *criterionDecoding) {
	cd.need("module")
	cd.need("sha256")
	cd.checkScoring()
}

func checkPytest(cd *criterionDecoding) {
	cd.tierRead()
	cd.need("tests")
}

// tierRead finishes a tier type's grader: fields once the mapping is read (the load
// resolves Verifier from them).
func (cd *criterionDecoding) tierRead() {
	g := cd.c.tier
	_, g.ownTimeout = cd.keys["timeout"]
	cd.l.packageFields(cd.what, g)
	if n := cd.keys["python_packages"]; n != nil {
		g.pyNode = n
	} else if n := cd.keys["python_wheels"]; n != nil {
		g.pyNode = n
	}
	g.harborNode = cd.vals["harbor_reward"]
	if cd.c.Isolation == IsolationProcess {
		g.isolationNode = cd.vals["isolation"]
	}
}

// checkScoring refuses the combinations of an executing criterion's scoring fields that
// contradict each other, and defaults stdout_match.
func (cd *criterionDecoding) checkScoring() {
	c := cd.c
	expectedStdout, stdoutMatch, scoreFromStdout := cd.vals["expected_stdout"], cd.vals["stdout_match"], cd.vals["score_from_stdout"]
	if expectedStdout != nil && scoreFromStdout != nil && c.ScoreFromStdout {
		cd.errorf(resolve(scoreFromStdout), "give expected_stdout or score_from_stdout, not both")
	}
	if cd.vals["harbor_reward"] != nil && c.HarborReward {
		for _, n := range []*yaml.Node{expectedStdout, stdoutMatch} {
			if n != nil {
				cd.errorf(resolve(n), "harbor_reward scores the reward tests/test.sh writes, not its stdout: remove this field")
			}
		}
		if scoreFromStdout != nil && c.ScoreFromStdout {
			cd.errorf(resolve(scoreFromStdout), "harbor_reward scores the reward tests/test.sh writes, not its stdout: remove score_from_stdout")
		}
		if cd.keys["expected_exit_code"] != nil {
			cd.errorf(resolve(cd.keys["expected_exit_code"]), "harbor_reward ignores test.sh's exit status as Harbor does (only a signal's fails it): remove expected_exit_code")
		}
	}
	if rk := cd.vals["reward_key"]; rk != nil && (!(c.ScoreFromStdout || c.HarborReward) || c.RewardKey == "") {
		cd.errorf(resolve(rk), "reward_key names one of the rewards score_from_stdout or harbor_reward reads: give score_from_stdout: true (or harbor_reward: true) and a non-empty key")
	}
	if stdoutMatch != nil && expectedStdout == nil {
		cd.errorf(resolve(stdoutMatch), "stdout_match needs expected_stdout")
	}
	if expectedStdout != nil && c.StdoutMatch == "" {
		c.StdoutMatch = "exact"
	}
	if c.StdoutMatch == "regex" && c.ExpectedStdout != nil {
		if _, err := regexp.Compile(*c.ExpectedStdout); err != nil {
			cd.l.errorf(resolve(expectedStdout), "%s.expected_stdout: regular expression does not compile: %v", cd.what, err)
		}
	}
}
