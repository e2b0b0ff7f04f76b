package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var knownFieldsMsg = regexp.MustCompile(`unknown field "zz_probe" in .* \(known fields: (.*)\)`)

// loaderFields asks the loader which fields it knows where doc puts zz_probe.
func loaderFields(t *testing.T, doc string) []string {
	t.Helper()
	_, err := Parse("probe.yaml", t.TempDir(), []byte(doc))
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("no problems for the probe:\n%s\n%v", doc, err)
	}
	for _, p := range ps {
		if m := knownFieldsMsg.FindStringSubmatch(p.Msg); m != nil {
			f := strings.Split(m[1], ", ")
			sort.Strings(f)
			return f
		}
	}
	t.Fatalf("the loader did not name its fields for:\n%s\n%v", doc, ps)
	return nil
}

func schemaFields(s map[string]any, path ...string) []string {
	for _, p := range path {
		if p == "[]" {
			s = s["items"].(map[string]any)
			continue
		}
		s = s["properties"].(map[string]any)[p].(map[string]any)
	}
	var out []string
	for k := range s["properties"].(map[string]any) {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

const probeCriteria = "success_criteria:\n  - type: file_exists\n    path: a\n"

// TestTaskSchemaNamesExactlyTheLoadersFields probes the loader with an unknown field at
// every mapping of a task file and holds the schema's properties there to the fields the
// loader says it knows: a field added to one and not the other fails here.
func TestTaskSchemaNamesExactlyTheLoadersFields(t *testing.T) {
	s := TaskSchema()
	for _, tc := range []struct {
		doc  string
		path []string
	}{
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "zz_probe: 1\n", nil},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "agent:\n  type: command\n  command: [x]\n  zz_probe: 1\n", []string{"agent"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "agent:\n  type: claude-code\n  gateway:\n    zz_probe: 1\n", []string{"agent", "gateway"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "sandbox:\n  zz_probe: 1\n", []string{"sandbox"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "sandbox:\n  limits:\n    zz_probe: 1\n", []string{"sandbox", "limits"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "sandbox:\n  workspace:\n    zz_probe: 1\n", []string{"sandbox", "workspace"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "sandbox:\n  workspace:\n    starter_files:\n      - zz_probe: 1\n", []string{"sandbox", "workspace", "starter_files", "[]"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "reference:\n  zz_probe: 1\n", []string{"reference"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "run_limits:\n  zz_probe: 1\n", []string{"run_limits"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "protected_mocks:\n  - zz_probe: 1\n", []string{"protected_mocks", "[]"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "plugins:\n  - zz_probe: 1\n", []string{"plugins", "[]"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "solution:\n  zz_probe: 1\n", []string{"solution"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "setup:\n  - zz_probe: 1\n", []string{"setup", "[]"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "after_agent:\n  - zz_probe: 1\n", []string{"after_agent", "[]"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "iterations:\n  zz_probe: 1\n", []string{"iterations"}},
		{"task_id: t\ninitial_prompt: p\n" + probeCriteria + "simulated_user:\n  zz_probe: 1\n", []string{"simulated_user"}},
		{"task_id: t\nsteps:\n  - prompt: p\n    zz_probe: 1\n", []string{"steps", "[]"}},
		{"task_id: t\nsteps:\n  - prompt: p\n    solution:\n      zz_probe: 1\n", []string{"steps", "[]", "solution"}},
		{"task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - type: file_check\n    path: a\n    patterns:\n      - zz_probe: 1\n", []string{"success_criteria", "[]", "patterns", "[]"}},
		{"task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - type: json_check\n    path: a\n    assertions:\n      - zz_probe: 1\n", []string{"success_criteria", "[]", "assertions", "[]"}},
		{"task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - type: cli_called\n    tool: x\n    argv:\n      zz_probe: 1\n", []string{"success_criteria", "[]", "argv"}},
	} {
		name := strings.Join(tc.path, ".")
		want := loaderFields(t, tc.doc)
		if tc.path == nil { // dataset is read by LoadAll before the loader sees the task
			want = append(want, "dataset")
			sort.Strings(want)
		}
		if got := schemaFields(s, tc.path...); !slices.Equal(got, want) {
			t.Errorf("%q: schema has %v, the loader knows %v", name, got, want)
		}
	}
	// each criterion type: the schema's allowed names for it against the loader's
	rules := s["properties"].(map[string]any)["success_criteria"].(map[string]any)["items"].(map[string]any)["allOf"].([]any)
	allowed := map[string][]string{}
	for _, r := range rules {
		rm := r.(map[string]any)
		typ := rm["if"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["const"].(string)
		names := append([]string{}, rm["then"].(map[string]any)["propertyNames"].(map[string]any)["enum"].([]string)...)
		sort.Strings(names)
		allowed[typ] = names
	}
	for _, typ := range CriterionTypes {
		want := loaderFields(t, "task_id: t\ninitial_prompt: p\nsuccess_criteria:\n  - type: "+typ+"\n    zz_probe: 1\n")
		if !slices.Equal(allowed[typ], want) {
			t.Errorf("criterion %s: schema allows %v, the loader knows %v", typ, allowed[typ], want)
		}
		for _, f := range want {
			if _, ok := criterionFieldSchema[f]; !ok {
				t.Errorf("criterion field %s (of %s) has no type in the schema", f, typ)
			}
		}
	}
}

// TestTaskSchemaAcceptsTheExamplesAndRefusesUnknownFields compiles the schema and checks it
// against a valid task and a misspelled one.
func TestTaskSchemaAcceptsTheExamplesAndRefusesUnknownFields(t *testing.T) {
	raw, err := json.Marshal(TaskSchema())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("task.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("task.json")
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]any{"task_id": "t", "initial_prompt": "p", "agent": map[string]any{"type": "command", "command": []any{"sh"}},
		"sandbox":          map[string]any{"limits": map[string]any{"timeout": "1m"}},
		"success_criteria": []any{map[string]any{"type": "file_contains", "path": "a", "includes": []any{"x"}}}}
	if err := sch.Validate(good); err != nil {
		t.Fatalf("a valid task: %v", err)
	}
	bad := map[string]any{"task_id": "t", "initial_prompt": "p",
		"success_criteria": []any{map[string]any{"type": "file_contains", "path": "a", "pattern": "x"}}}
	if err := sch.Validate(bad); err == nil {
		t.Fatal("pattern on file_contains (a field of another type) passed the schema")
	}
}

// TestExperimentSchemaNamesExactlyTheLoadersFields probes the experiment loader's own
// mapping; defaults and variants take the task's fields (checked above) but task_id.
func TestExperimentSchemaNamesExactlyTheLoadersFields(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/e.yaml"
	writeFiles(t, dir, map[string]string{"e.yaml": "experiment_id: e\ntasks: [t.yaml]\nzz_probe: 1\n"})
	_, err := LoadExperiment(p, ExperimentOptions{})
	m := knownFieldsMsg.FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("the loader did not name its fields: %v", err)
	}
	want := strings.Split(m[1], ", ")
	sort.Strings(want)
	s := ExperimentSchema()
	if got := schemaFields(s); !slices.Equal(got, want) {
		t.Fatalf("schema has %v, the loader knows %v", got, want)
	}
	task := schemaFields(TaskSchema())
	for _, layer := range [][]string{schemaFields(s, "defaults"), schemaFields(s, "variants", "[]")} {
		for _, f := range task {
			if f != "task_id" && f != "dataset" && !slices.Contains(layer, f) {
				t.Errorf("task field %s missing from a layer: %v", f, layer)
			}
		}
	}
}
