package task

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Prompt mutation kinds: each item of an experiment's prompt_mutations is one variant whose
// tasks' prompts pass through its steps in order.
const (
	MutatePrefix   = "prefix"   // content (+ separator, default a blank line) before the prompt
	MutateSuffix   = "suffix"   // content after it
	MutateReplace  = "replace"  // pattern -> replacement, literal or (regex: true) RE2 with $1
	MutateTemplate = "template" // {name} -> variables[name]
	MutateRephrase = "rephrase" // the judge model of ceval's config rewrites it per instructions
)

var mutationKinds = []string{MutatePrefix, MutateSuffix, MutateReplace, MutateTemplate, MutateRephrase}

// MaxPromptMutations bounds prompt_mutations (each is a variant) and the steps of one.
const MaxPromptMutations = 100

// PromptAffix is a variant's prompt: {prefix, suffix}, laid around each task's prompt as
// written (no separator added).
type PromptAffix struct {
	Prefix, Suffix string
}

// PromptStep is one step of a prompt mutation.
type PromptStep struct {
	Type      string
	Content   string // prefix, suffix
	Separator string // prefix, suffix
	Pattern   string // replace
	Replace   string // replace: the replacement
	Regex     bool   // replace
	re        *regexp.Regexp
	Variables map[string]string // template
	// Instructions tell the rephrasing model how to rewrite (rephrase).
	Instructions string
	// Answers replay the rephrase from a fixture (rephrase with fixture: FILE): the i-th is
	// the rewritten prompt of the variant's i-th entry. Nil: the judge model is asked.
	Answers     []string
	FixturePath string // as written, relative to the experiment file
	fixtureNode *yaml.Node
}

// PromptMutation is one item of prompt_mutations: the variant it makes and its steps.
type PromptMutation struct {
	Variant string
	Base    string // the declared variant whose fields and prompt it starts from; "" the tasks as written
	Steps   []PromptStep
}

// Rephrases reports whether a step needs the model (so the prompt is made when the
// experiment starts, not at load).
func (m *PromptMutation) Rephrases() bool {
	for _, s := range m.Steps {
		if s.Type == MutateRephrase {
			return true
		}
	}
	return false
}

// Describe says what the mutation does, for plan output.
func (m *PromptMutation) Describe() string {
	var parts []string
	for _, s := range m.Steps {
		switch s.Type {
		case MutatePrefix, MutateSuffix:
			parts = append(parts, fmt.Sprintf("%s %q", s.Type, clip(s.Content, 40)))
		case MutateReplace:
			parts = append(parts, fmt.Sprintf("replace %q -> %q", clip(s.Pattern, 30), clip(s.Replace, 30)))
		case MutateTemplate:
			names := make([]string, 0, len(s.Variables))
			for k := range s.Variables {
				names = append(names, k)
			}
			sort.Strings(names)
			parts = append(parts, "template "+strings.Join(names, ","))
		case MutateRephrase:
			how := "by the judge model of ceval's config"
			if s.Answers != nil {
				how = "replayed from " + s.FixturePath
			}
			parts = append(parts, fmt.Sprintf("rephrase %q %s", clip(s.Instructions, 40), how))
		}
	}
	d := strings.Join(parts, ", then ")
	if m.Base != "" {
		d = "over variant " + m.Base + ": " + d
	}
	return d
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Rephraser rewrites prompt per step.Instructions; index is the entry's position among its
// variant's entries (the fixture answer it replays).
type Rephraser func(step *PromptStep, index int, prompt string) (string, error)

// Apply runs the steps over prompt. A rephrase step calls rephrase; nil refuses it.
func (m *PromptMutation) Apply(prompt string, index int, rephrase Rephraser) (string, error) {
	for i := range m.Steps {
		s := &m.Steps[i]
		switch s.Type {
		case MutatePrefix:
			prompt = s.Content + s.Separator + prompt
		case MutateSuffix:
			prompt = prompt + s.Separator + s.Content
		case MutateReplace:
			if s.Regex {
				prompt = s.re.ReplaceAllString(prompt, s.Replace)
			} else {
				prompt = strings.ReplaceAll(prompt, s.Pattern, s.Replace)
			}
		case MutateTemplate:
			pairs := make([]string, 0, 2*len(s.Variables))
			for k, v := range s.Variables {
				pairs = append(pairs, "{"+k+"}", v)
			}
			prompt = strings.NewReplacer(pairs...).Replace(prompt)
		case MutateRephrase:
			if rephrase == nil {
				return "", fmt.Errorf("variant %s rephrases the prompt: that needs the judge model, when the experiment starts", m.Variant)
			}
			out, err := rephrase(s, index, prompt)
			if err != nil {
				return "", fmt.Errorf("variant %s: rephrase: %w", m.Variant, err)
			}
			prompt = out
		}
	}
	if strings.TrimSpace(prompt) == "" {
		return "", fmt.Errorf("variant %s: the mutated prompt is empty", m.Variant)
	}
	return prompt, nil
}

// StopEarly is an experiment's stop_early: stop launching runs once a sequential test
// decides that two variants' pass rates differ (see internal/seqtest).
type StopEarly struct {
	Compare    [2]string
	Metric     string // pass_rate
	Confidence float64
	MinRuns    int // runs of each compared variant (pairs) before the first look
}

// Defaults of stop_early.
const (
	DefaultStopConfidence = 0.95
	DefaultStopMinRuns    = 1
)

// promptAffix reads a variant's prompt: {prefix, suffix}.
func (d *decoder) promptAffix(n *yaml.Node, what string) *PromptAffix {
	a := &PromptAffix{}
	seen := d.mapping(n, what, []field{
		{"prefix", func(v *yaml.Node) { d.str(v, what+".prefix", &a.Prefix) }},
		{"suffix", func(v *yaml.Node) { d.str(v, what+".suffix", &a.Suffix) }},
	})
	if seen != nil && len(seen) == 0 {
		d.errorf(resolve(n), "%s is empty: give prefix, suffix or both", what)
	}
	return a
}

// promptMutation reads one item of prompt_mutations: variant_id, base and either one step's
// fields (type ...) or steps: [...].
func (d *decoder) promptMutation(i int, item *yaml.Node, ids map[string]bool) (rawVariant, bool) {
	what := fmt.Sprintf("prompt_mutations[%d]", i)
	rn := resolve(item)
	if rn.Kind != yaml.MappingNode {
		d.errorf(rn, "%s must be a mapping (type: %s, and its fields), got %s", what, strings.Join(mutationKinds, "|"), kindName(rn))
		return rawVariant{}, false
	}
	m := &PromptMutation{}
	step := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: rn.Line, Column: rn.Column}
	var idNode, stepsNode *yaml.Node
	own := map[string]bool{}
	for j := 0; j+1 < len(rn.Content); j += 2 {
		k, v := resolve(rn.Content[j]), rn.Content[j+1]
		if k.Value == "variant_id" || k.Value == "base" || k.Value == "steps" {
			if own[k.Value] {
				d.errorf(k, "duplicate field %q in %s", k.Value, what)
				continue
			}
			own[k.Value] = true
		}
		switch k.Value {
		case "variant_id":
			idNode = resolve(v)
			d.str(v, what+".variant_id", &m.Variant)
		case "base":
			d.str(v, what+".base", &m.Base)
		case "steps":
			stepsNode = resolve(v)
		default:
			step.Content = append(step.Content, rn.Content[j], v)
		}
	}
	switch {
	case stepsNode != nil && len(step.Content) > 0:
		d.errorf(resolve(step.Content[0]), "%s: give one step's fields (type ...) or steps: [...], not both", what)
		return rawVariant{}, false
	case stepsNode != nil:
		d.list(stepsNode, what+".steps", func(j int, s *yaml.Node) {
			if len(m.Steps) >= MaxPromptMutations {
				d.errorf(resolve(s), "%s.steps: more than %d", what, MaxPromptMutations)
				return
			}
			if st, ok := d.promptStep(s, fmt.Sprintf("%s.steps[%d]", what, j)); ok {
				m.Steps = append(m.Steps, st)
			}
		})
		if rs := resolve(stepsNode); rs.Kind == yaml.SequenceNode && len(rs.Content) == 0 {
			d.errorf(rs, "%s.steps must not be empty", what)
		}
	case len(step.Content) == 0:
		d.errorf(rn, "%s: missing required field type (%s), or steps: [...]", what, strings.Join(mutationKinds, ", "))
		return rawVariant{}, false
	default:
		if st, ok := d.promptStep(step, what); ok {
			m.Steps = append(m.Steps, st)
		}
	}
	if len(m.Steps) == 0 {
		return rawVariant{}, false
	}
	if m.Variant == "" {
		m.Variant = fmt.Sprintf("%s-%d", m.Steps[0].Type, i+1)
		if len(m.Steps) > 1 {
			m.Variant = fmt.Sprintf("mutation-%d", i+1)
		}
		idNode = rn
	}
	if !taskIDPattern.MatchString(m.Variant) {
		d.errorf(idNode, "%s.variant_id %q may hold only lowercase letters, digits, '-' and '_', starting with a letter or digit", what, m.Variant)
		return rawVariant{}, false
	}
	if ids[m.Variant] {
		d.errorf(idNode, "%s.variant_id %q is given twice (a variant or another mutation has it: name this one with variant_id)", what, m.Variant)
		return rawVariant{}, false
	}
	ids[m.Variant] = true
	return rawVariant{id: m.Variant, mutation: m, at: rn}, true
}

// promptStep reads one step: type and that type's fields.
func (d *decoder) promptStep(n *yaml.Node, what string) (PromptStep, bool) {
	rn := resolve(n)
	if rn.Kind != yaml.MappingNode {
		d.errorf(rn, "%s must be a mapping (type and its fields), got %s", what, kindName(rn))
		return PromptStep{}, false
	}
	s := PromptStep{Separator: "\n\n"}
	if k := keyNode(rn, "type"); k != nil {
		for j := 0; j+1 < len(rn.Content); j += 2 {
			if resolve(rn.Content[j]) == k {
				d.enum(rn.Content[j+1], what+".type", mutationKinds, &s.Type)
			}
		}
	} else {
		d.errorf(rn, "%s: missing required field type (%s)", what, strings.Join(mutationKinds, ", "))
		return PromptStep{}, false
	}
	if s.Type == "" {
		return PromptStep{}, false
	}
	typ := field{"type", nil}
	var patternNode *yaml.Node
	var fields []field
	switch s.Type {
	case MutatePrefix, MutateSuffix:
		fields = []field{typ,
			{"content", func(v *yaml.Node) { d.str(v, what+".content", &s.Content) }},
			{"separator", func(v *yaml.Node) { d.str(v, what+".separator", &s.Separator) }}}
	case MutateReplace:
		fields = []field{typ,
			{"pattern", func(v *yaml.Node) { patternNode = resolve(v); d.str(v, what+".pattern", &s.Pattern) }},
			{"replacement", func(v *yaml.Node) { d.str(v, what+".replacement", &s.Replace) }},
			{"regex", func(v *yaml.Node) { d.boolean(v, what+".regex", &s.Regex) }}}
	case MutateTemplate:
		fields = []field{typ, {"variables", func(v *yaml.Node) {
			s.Variables = map[string]string{}
			rv := resolve(v)
			if rv.Kind != yaml.MappingNode {
				d.errorf(rv, "%s.variables must be a mapping of {name} placeholders to their text, got %s", what, kindName(rv))
				return
			}
			for j := 0; j+1 < len(rv.Content); j += 2 {
				var val string
				k := resolve(rv.Content[j])
				d.str(rv.Content[j+1], what+".variables."+k.Value, &val)
				s.Variables[k.Value] = val
			}
		}}}
	case MutateRephrase:
		fields = []field{typ,
			{"instructions", func(v *yaml.Node) { d.str(v, what+".instructions", &s.Instructions) }},
			{"fixture", func(v *yaml.Node) { s.fixtureNode = resolve(v); d.str(v, what+".fixture", &s.FixturePath) }}}
	}
	seen := d.mapping(rn, what, fields)
	if seen == nil {
		return PromptStep{}, false
	}
	need := func(name, why string) {
		if seen[name] == nil {
			d.errorf(rn, "%s (%s): missing required field %s (%s)", what, s.Type, name, why)
		}
	}
	switch s.Type {
	case MutatePrefix, MutateSuffix:
		need("content", "the text to add")
	case MutateReplace:
		need("pattern", "the text to find")
		need("replacement", "what replaces it; \"\" deletes it")
		if s.Pattern == "" && patternNode != nil {
			d.errorf(patternNode, "%s.pattern must not be empty", what)
		} else if s.Regex && patternNode != nil {
			re, err := regexp.Compile(s.Pattern)
			if err != nil {
				d.errorf(patternNode, "%s.pattern is not a regular expression (RE2 syntax): %v", what, err)
			}
			s.re = re
		}
	case MutateTemplate:
		need("variables", "a mapping of {name} placeholders to their text")
	case MutateRephrase:
		need("instructions", "how the model rewrites the prompt")
		if seen["instructions"] != nil && strings.TrimSpace(s.Instructions) == "" {
			d.errorf(rn, "%s.instructions must not be empty", what)
		}
	}
	return s, true
}

// stopEarly reads stop_early; the variants it compares are checked once all are known.
func (d *decoder) stopEarly(n *yaml.Node) (*StopEarly, *yaml.Node) {
	s := &StopEarly{Metric: "pass_rate", Confidence: DefaultStopConfidence, MinRuns: DefaultStopMinRuns}
	var compareNode *yaml.Node
	seen := d.mapping(n, "stop_early", []field{
		{"compare", func(v *yaml.Node) {
			compareNode = resolve(v)
			var ids []string
			d.strings(v, "stop_early.compare", &ids)
			if compareNode.Kind == yaml.SequenceNode && len(ids) != 2 {
				d.errorf(compareNode, "stop_early.compare names %d variants; it compares exactly two: [variant_a, variant_b]", len(ids))
				return
			}
			if len(ids) == 2 {
				s.Compare = [2]string{ids[0], ids[1]}
			}
		}},
		{"metric", func(v *yaml.Node) { d.enum(v, "stop_early.metric", []string{"pass_rate"}, &s.Metric) }},
		{"confidence", func(v *yaml.Node) { d.number(v, "stop_early.confidence", 0.5, 0.9999, &s.Confidence) }},
		{"min_runs", func(v *yaml.Node) {
			var m int64
			d.integer(v, "stop_early.min_runs", 1, MaxRepeats*MaxEntries, &m)
			if m > 0 {
				s.MinRuns = int(m)
			}
		}},
	})
	if seen == nil {
		return nil, nil
	}
	if seen["compare"] == nil {
		d.errorf(resolve(n), "stop_early: missing required field compare ([variant_a, variant_b]: the two variants whose pass rates it tests)")
		return nil, nil
	}
	if s.Compare[0] != "" && s.Compare[0] == s.Compare[1] {
		d.errorf(compareNode, "stop_early.compare names %q twice; it compares two different variants", s.Compare[0])
	}
	return s, compareNode
}

// readFixtures reads each rephrase step's fixture through the experiment's directory.
func (d *decoder) readFixtures(e *Experiment, raw rawExperiment, read func(rel string) ([]byte, error)) {
	for _, v := range raw.variants {
		if v.mutation == nil {
			continue
		}
		for i := range v.mutation.Steps {
			s := &v.mutation.Steps[i]
			if s.fixtureNode == nil {
				continue
			}
			rel := s.FixturePath
			if rel == "" || filepath.IsAbs(rel) || !filepath.IsLocal(filepath.FromSlash(rel)) {
				d.errorf(s.fixtureNode, "fixture %q must be a path inside the experiment file's directory", rel)
				continue
			}
			data, err := read(filepath.FromSlash(rel))
			if err != nil {
				d.errorf(s.fixtureNode, "fixture %s: %v", rel, err)
				continue
			}
			p := filepath.Join(e.Dir, filepath.FromSlash(rel))
			answers, ps := parseAnswers(p, data)
			d.problems = append(d.problems, ps...)
			if len(ps) == 0 && len(answers) == 0 {
				d.errorf(s.fixtureNode, "fixture %s has no answers (answers: [the rewritten prompt of each task, in the tasks' order])", rel)
			}
			s.Answers = answers
		}
	}
}

// parseAnswers reads a rephrase fixture: {answers: [text, ...]}, each the rewritten prompt
// of one of the variant's entries, in the order the experiment lists them.
func parseAnswers(p string, data []byte) ([]string, Problems) {
	doc, err := readDoc(p, data, "rephrase fixture")
	if err != nil {
		return nil, err.(Problems)
	}
	sub := &decoder{file: p}
	answers := []string{}
	sub.mapping(doc.Content[0], "rephrase fixture", []field{{"answers", func(n *yaml.Node) {
		sub.list(n, "answers", func(i int, item *yaml.Node) {
			if len(answers) >= MaxEntries {
				sub.errorf(resolve(item), "answers: more than %d", MaxEntries)
				return
			}
			var s string
			sub.str(item, fmt.Sprintf("answers[%d]", i), &s)
			answers = append(answers, s)
		})
	}}})
	return answers, sub.problems
}

// decodeMutations reads prompt_mutations: each item becomes a variant after the declared
// ones, starting from its base variant's fields and prompt (or the tasks as written).
func (e *Experiment) decodeMutations(d *decoder, n *yaml.Node, raw *rawExperiment) {
	rn := resolve(n)
	if rn.Kind == yaml.SequenceNode && len(rn.Content) == 0 {
		d.errorf(rn, "prompt_mutations must not be empty (leave it out to run each variant's prompt as it is)")
		return
	}
	if rn.Kind == yaml.SequenceNode && len(rn.Content) > MaxPromptMutations {
		d.errorf(rn, "prompt_mutations lists %d; at most %d (each is a variant)", len(rn.Content), MaxPromptMutations)
		return
	}
	ids := map[string]bool{}
	declared := map[string]rawVariant{}
	for _, v := range raw.variants {
		ids[v.id] = true
		declared[v.id] = v
	}
	e.Mutations = map[string]*PromptMutation{}
	d.list(n, "prompt_mutations", func(i int, item *yaml.Node) {
		v, ok := d.promptMutation(i, item, ids)
		if !ok {
			return
		}
		if m := v.mutation; m.Base != "" {
			b, ok := declared[m.Base]
			if !ok {
				d.errorf(v.at, "prompt_mutations[%d].base: no declared variant %q (a mutation starts from one of variants, or from the tasks as written when base is left out)", i, m.Base)
				return
			}
			v.node, v.prompt = b.node, b.prompt
		}
		raw.variants = append(raw.variants, v)
		e.Variants = append(e.Variants, v.id)
		e.Mutations[v.id] = v.mutation
	})
}

// applyPrompt lays the variant's prompt and its static mutation steps over t.Prompt. A
// mutation that rephrases is left to the experiment's start (see Entry.Mutation).
func (v rawVariant) applyPrompt(t *Task, f taskFile) Problems {
	if t.MultiStep() {
		return v.applyStepPrompts(t, f) // stepprompts.go
	}
	if v.prompt != nil {
		t.Prompt = v.prompt.Prefix + t.Prompt + v.prompt.Suffix
	}
	if v.mutation == nil || v.mutation.Rephrases() {
		return nil
	}
	p, err := v.mutation.Apply(t.Prompt, 0, nil)
	if err != nil {
		return Problems{{File: f.name, Msg: err.Error()}}
	}
	t.Prompt = p
	return nil
}

// indexEntries numbers each variant's entries by the fixture answer of their (first)
// prompt and holds every rephrase fixture to one answer per entry, one per step of a
// multi-step task.
func (e *Experiment) indexEntries(path string, raw rawExperiment) Problems {
	count, tasks := map[string]int{}, map[string]int{}
	for i := range e.Entries {
		en := &e.Entries[i]
		en.Index = count[en.Variant]
		count[en.Variant] += max(1, len(en.Task.TaskSteps)) // a multi-step task: one answer per step
		tasks[en.Variant]++
	}
	var ps Problems
	for _, v := range raw.variants {
		if v.mutation == nil {
			continue
		}
		for _, s := range v.mutation.Steps {
			if s.Answers != nil && len(s.Answers) < count[v.id] {
				msg := fmt.Sprintf("fixture %s has %d answers; variant %s runs %d tasks: give one rewritten prompt per task, in the tasks' order", s.FixturePath, len(s.Answers), v.id, count[v.id])
				if tasks[v.id] != count[v.id] {
					msg = fmt.Sprintf("fixture %s has %d answers; variant %s runs %d tasks with %d prompts: give one rewritten prompt per task, one per step of a multi-step task, in the tasks' order", s.FixturePath, len(s.Answers), v.id, tasks[v.id], count[v.id])
				}
				ps = append(ps, Problem{File: path, Line: s.fixtureNode.Line, Column: s.fixtureNode.Column, Msg: msg})
			}
		}
	}
	return ps
}
