package task

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const promptTask = "task_id: t\ninitial_prompt: Create hello.txt\nsuccess_criteria:\n  - {type: file_exists, path: hello.txt}\n"

func loadPromptExperiment(t *testing.T, exp string, extra map[string]string) (*Experiment, error) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"e.yaml": exp, "t.yaml": promptTask,
		"u.yaml": strings.Replace(promptTask, "task_id: t", "task_id: u", 1)}
	for k, v := range extra {
		files[k] = v
	}
	writeFiles(t, dir, files)
	return LoadExperiment(filepath.Join(dir, "e.yaml"), ExperimentOptions{})
}

func prompts(e *Experiment) map[string]string {
	out := map[string]string{}
	for _, en := range e.Entries {
		out[en.Variant+"/"+en.Task.ID] = en.Task.Prompt
	}
	return out
}

func TestVariantPromptAndMutationsExpandIntoVariants(t *testing.T) {
	e, err := loadPromptExperiment(t, `experiment_id: e
tasks: [t.yaml]
variants:
  - variant_id: plain
  - variant_id: framed
    prompt: {prefix: "You are careful. ", suffix: " Be brief."}
prompt_mutations:
  - {type: prefix, content: "Think first."}
  - {variant_id: polite, type: suffix, content: "Please.", separator: " "}
  - {variant_id: write, type: replace, pattern: Create, replacement: Write}
  - {variant_id: re, type: replace, pattern: '(\w+)\.txt', replacement: '$1.md', regex: true}
  - variant_id: both
    base: framed
    steps:
      - {type: template, variables: {none: x}}
      - {type: suffix, content: "!", separator: ""}
stop_early: {compare: [plain, polite], confidence: 0.9, min_runs: 3}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"plain/t":    "Create hello.txt",
		"framed/t":   "You are careful. Create hello.txt Be brief.",
		"prefix-1/t": "Think first.\n\nCreate hello.txt",
		"polite/t":   "Create hello.txt Please.",
		"write/t":    "Write hello.txt",
		"re/t":       "Create hello.md",
		"both/t":     "You are careful. Create hello.txt Be brief.!",
	}
	if got := prompts(e); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("prompts\n%v\nwant\n%v", got, want)
	}
	if !slices.Equal(e.Variants, []string{"plain", "framed", "prefix-1", "polite", "write", "re", "both"}) {
		t.Errorf("variants %v", e.Variants)
	}
	if s := e.StopEarly; s == nil || s.Compare != [2]string{"plain", "polite"} || s.Confidence != 0.9 || s.MinRuns != 3 || s.Metric != "pass_rate" {
		t.Errorf("stop_early %+v", s)
	}
}

// A mutated prompt is part of the entry's digest, so a resume of a run made with another
// prompt is refused.
func TestMutatedPromptChangesTheTaskDigest(t *testing.T) {
	e, err := loadPromptExperiment(t, "experiment_id: e\ntasks: [t.yaml]\nprompt_mutations:\n  - {type: suffix, content: x}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Digest(e.Entries[0].Task)
	b, _ := Digest(e.Entries[1].Task)
	if e.Entries[0].Variant != DefaultVariant || a == b {
		t.Errorf("default and mutated entries: %s %s (variants %v)", a, b, e.Variants)
	}
}

func TestRephraseIsLeftForTheStartAndItsFixtureIsRead(t *testing.T) {
	e, err := loadPromptExperiment(t, `experiment_id: e
tasks: [t.yaml, u.yaml]
prompt_mutations:
  - {variant_id: formal, type: rephrase, instructions: Be formal., fixture: fx/formal.yaml}
`, map[string]string{"fx/formal.yaml": "answers: [Kindly create hello.txt., Kindly create hello.txt too.]\n"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range e.Entries {
		if en.Variant == "formal" {
			if en.Mutation == nil || !en.Mutation.Rephrases() || en.Task.Prompt != "Create hello.txt" {
				t.Errorf("entry %+v", en)
			}
			p, err := en.Mutation.Apply(en.Task.Prompt, en.Index, func(s *PromptStep, i int, prompt string) (string, error) {
				return s.Answers[i], nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p)
		}
	}
	if !slices.Equal(got, []string{"Kindly create hello.txt.", "Kindly create hello.txt too."}) {
		t.Errorf("replayed %q", got)
	}
	if _, err := e.Entries[2].Mutation.Apply("x", 0, nil); err == nil {
		t.Error("a rephrase without a rephraser was applied")
	}
}

func TestPromptFieldsErrorsCarryFileLine(t *testing.T) {
	cases := []struct{ exp, want string }{
		{"prompt_mutations:\n  - {type: shout}\n", "e.yaml:4:12: prompt_mutations[0].type"},
		{"prompt_mutations:\n  - {type: prefix}\n", "e.yaml:4:5: prompt_mutations[0] (prefix): missing required field content"},
		{"prompt_mutations:\n  - {type: replace, pattern: '(', replacement: x, regex: true}\n", "e.yaml:4:30: prompt_mutations[0].pattern is not a regular expression"},
		{"prompt_mutations:\n  - {type: rephrase}\n", "missing required field instructions"},
		{"prompt_mutations:\n  - {type: prefix, content: a, steps: [{type: suffix, content: b}]}\n", "not both"},
		{"prompt_mutations:\n  - {type: prefix, content: a, base: nope}\n", "e.yaml:4:5: prompt_mutations[0].base: no declared variant \"nope\""},
		{"prompt_mutations:\n  - {type: prefix, content: a}\n  - {type: prefix, content: b, variant_id: prefix-1}\n", "e.yaml:5:44: prompt_mutations[1].variant_id \"prefix-1\" is given twice"},
		{"prompt_mutations:\n  - {type: rephrase, instructions: x, fixture: f.yaml}\n", "e.yaml:4:48: fixture f.yaml has 1 answers; variant rephrase-1 runs 2 tasks"},
		{"prompt_mutations:\n  - {type: rephrase, instructions: x, fixture: ../f.yaml}\n", "must be a path inside"},
		{"prompt_mutations:\n  - {type: prefix, content: a, base: x, base: y}\n", "e.yaml:4:41: duplicate field \"base\" in prompt_mutations[0]"},
		{"stop_early: {compare: [default, nope]}\n", "e.yaml:3:23: stop_early.compare: no variant \"nope\""},
		{"stop_early: {compare: [default, default]}\n", "names \"default\" twice"},
		{"stop_early: {compare: [default]}\n", "compares exactly two"},
		{"stop_early: {compare: [a, b], metric: score}\n", "stop_early.metric"},
		{"stop_early: {compare: [a, b], confidence: 1}\n", "stop_early.confidence must be between 0.5 and 0.9999"},
		{"stop_early: {min_runs: 3}\n", "e.yaml:3:13: stop_early: missing required field compare"},
		{"variants:\n  - {variant_id: v, prompt: {prefx: a}}\n", "e.yaml:4:30: unknown field \"prefx\" in variants[0].prompt"},
		{"variants:\n  - {variant_id: v, prompt: {}}\n", "variants[0].prompt is empty"},
	}
	for _, c := range cases {
		_, err := loadPromptExperiment(t, "experiment_id: e\ntasks: [t.yaml, u.yaml]\n"+c.exp, map[string]string{"f.yaml": "answers: [one]\n"})
		var ps Problems
		if !errors.As(err, &ps) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.exp, err, c.want)
		}
	}
}

// The schema's prompt_mutations, stop_early and variants[].prompt name exactly the fields
// the loader knows there (probed with an unknown field).
func TestPromptSchemaNamesExactlyTheLoadersFields(t *testing.T) {
	probe := func(exp string) []string {
		t.Helper()
		_, err := loadPromptExperiment(t, "experiment_id: e\ntasks: [t.yaml]\n"+exp, nil)
		m := knownFieldsMsg.FindStringSubmatch(fmt.Sprint(err))
		if m == nil {
			t.Fatalf("no field list for %s: %v", exp, err)
		}
		f := strings.Split(m[1], ", ")
		sort.Strings(f)
		return f
	}
	s := ExperimentSchema()
	if got, want := schemaFields(s, "stop_early"), probe("stop_early: {zz_probe: 1}\n"); !slices.Equal(got, want) {
		t.Errorf("stop_early: schema %v, loader %v", got, want)
	}
	if got, want := schemaFields(s, "variants", "[]", "prompt"), probe("variants: [{variant_id: v, prompt: {zz_probe: 1}}]\n"); !slices.Equal(got, want) {
		t.Errorf("variants[].prompt: schema %v, loader %v", got, want)
	}
	var union []string
	for _, kind := range mutationKinds {
		union = append(union, probe("prompt_mutations: [{type: "+kind+", zz_probe: 1}]\n")...)
	}
	union = append(union, "variant_id", "base", "steps")
	sort.Strings(union)
	union = slices.Compact(union)
	if got := schemaFields(s, "prompt_mutations", "[]"); !slices.Equal(got, union) {
		t.Errorf("prompt_mutations[]: schema %v, loader %v", got, union)
	}
	steps := schemaFields(s, "prompt_mutations", "[]", "steps", "[]")
	if want := slices.DeleteFunc(slices.Clone(union), func(f string) bool { return f == "variant_id" || f == "base" || f == "steps" }); !slices.Equal(steps, want) {
		t.Errorf("steps[]: schema %v, loader %v", steps, want)
	}
}

// An experiment file is hostile input: a rephrase cannot name the model, the endpoint or the
// key the host calls with the user's judge credentials; only ceval's config does.
func TestRephraseCannotRedirectTheJudgeModel(t *testing.T) {
	for _, f := range []string{"model: evil", "base_url: http://attacker.example", "api: openai", "key_env: HOME", "temperature: 2"} {
		_, err := loadPromptExperiment(t, "experiment_id: e\ntasks: [t.yaml]\nprompt_mutations:\n  - {type: rephrase, instructions: x, "+f+"}\n", nil)
		name := strings.SplitN(f, ":", 2)[0]
		if err == nil || !strings.Contains(err.Error(), "e.yaml:4:") || !strings.Contains(err.Error(), `unknown field "`+name+`"`) {
			t.Errorf("%s: %v", f, err)
		}
	}
}
