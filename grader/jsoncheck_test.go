package grader

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"ceval.dev/ceval/task"
)

const operatorDoc = `{"s": "hello world", "n": 3, "f": 2.5, "b": true, "z": null,
 "a": [1, "x", {"k": 1}], "o": {"k": "v", "n": 2}, "big": 1e400}`

func TestJSONCheckOperators(t *testing.T) {
	s := snap(t, tree{"doc.json": operatorDoc})
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		expr, op string
		expected any
		met      bool
		detail   string
	}{
		{"s", "equals", "hello world", true, ""},
		{"n", "equals", 3.0, true, ""},
		{"n", "equals", 3, true, ""},
		{"n", "equals", "3", false, "got 3 (number)"},
		{"b", "equals", "true", false, "got true (boolean)"},
		{"o", "equals", obj("n", 2.0, "k", "v"), true, ""},
		{"o", "equals", obj("k", "v"), false, "an object with 2 keys"},
		{"a", "equals", []any{1.0, "x", obj("k", 1.0)}, true, ""},
		{"a", "equals", []any{"x", 1.0, obj("k", 1.0)}, false, "an array of 3 items"},
		{"z", "equals", nil, true, ""},
		{"nothing", "equals", nil, true, ""},
		{"s", "not_equals", "bye", true, ""},
		{"n", "not_equals", 3.0, false, "got 3 (number)"},
		{"n", "not_equals", "3", true, ""},

		{"s", "contains", "o wor", true, ""},
		{"s", "contains", "moon", false, `got "hello world"`},
		{"s", "contains", 3.0, false, "a string can only contain a string"},
		{"a", "contains", "x", true, ""},
		{"a", "contains", obj("k", 1.0), true, ""},
		{"a", "contains", 2.0, false, "no such element"},
		{"o", "contains", "k", true, ""},
		{"o", "contains", "v", false, "without that key"},
		{"o", "contains", 1.0, false, "can only contain a key"},
		{"n", "contains", 3.0, false, "contains needs a string, an array or an object"},

		{"n", "gt", 2.0, true, ""},
		{"n", "gt", 3.0, false, "got 3"},
		{"n", "gte", 3.0, true, ""},
		{"f", "lt", 3.0, true, ""},
		{"f", "lt", 2.5, false, "got 2.5"},
		{"f", "lte", 2.5, true, ""},
		{"s", "gt", 1.0, false, "not a number"},
		{"z", "gte", 0.0, false, "null (null), not a number"},
		{"b", "lt", 1.0, false, "not a number"},
		{"big", "gt", 1e300, true, ""},
		{"length(a)", "gte", 3.0, true, ""},

		{"s", "type", "string", true, ""},
		{"n", "type", "number", true, ""},
		{"b", "type", "boolean", true, ""},
		{"z", "type", "null", true, ""},
		{"a", "type", "array", true, ""},
		{"o", "type", "object", true, ""},
		{"nothing", "type", "null", true, ""},
		{"n", "type", "string", false, "got 3 (number)"},

		{"s", "regex", "^hello", true, ""},
		{"s", "regex", "^world", false, `got "hello world"`},
		{"n", "regex", "3", false, "not a string"},
		{"a[1]", "regex", "^x$", true, ""},

		{"s", "exists", true, true, ""},
		{"o.k", "exists", nil, true, ""},
		{"nothing", "exists", true, false, "got null"},
		{"nothing", "exists", false, true, ""},
		{"z", "exists", true, false, "got null"},
		{"s", "exists", false, false, `got "hello world"`},

		{"length(n)", "equals", 1.0, false, "expression fails on this document"},
	}
	for _, tt := range tests {
		t.Run(tt.op+"/"+tt.expr, func(t *testing.T) {
			c := task.Criterion{
				Type: task.JSONCheck,
				Spec: &task.JSONCheckSpec{Path: "doc.json", Assertions: []task.Assertion{{Expression: tt.expr, Operator: tt.op, Expected: tt.expected}}},
			}
			got := gradeOne(t, c, s)
			if tt.met {
				want(t, got, Pass, 1, tt.detail)
			} else {
				want(t, got, Fail, 0, tt.detail)
			}
		})
	}
}

func schemaDoc(t *testing.T, src string) any {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestJSONCheckSchemaIsOneCheck(t *testing.T) {
	s := snap(t, tree{"report.json": `{"greeting": "hi", "files": 1.5}`})
	schema := schemaDoc(t, `{"type": "object", "required": ["greeting", "status"], "properties": {"files": {"type": "integer"}}}`)
	loose := schemaDoc(t, `{"type": "object", "required": ["greeting"]}`)
	equals := func(expr string, v any) task.Assertion {
		return task.Assertion{Expression: expr, Operator: "equals", Expected: v}
	}
	tests := []struct {
		name       string
		schema     any
		assertions []task.Assertion
		score      float64
		detail     string
	}{
		{"a failing schema and a met assertion", schema, []task.Assertion{equals("greeting", "hi")}, 0.5, "schema:"},
		{"a valid document alone", loose, nil, 1, "1/1"},
		{"a valid document and an unmet assertion", loose, []task.Assertion{equals("greeting", "hello"), equals("files", 1.5)}, 2.0 / 3, "assertions[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := task.Criterion{Type: task.JSONCheck, Spec: &task.JSONCheckSpec{Path: "report.json", JSONSchema: tt.schema, Assertions: tt.assertions}}
			got := gradeOne(t, c, s)
			status := Fail
			if tt.score == 1 {
				status = Pass
			}
			want(t, got, status, tt.score, tt.detail)
		})
	}
}

// The document is the agent's: a width, separator or count in it must not let a
// function allocate without bound.
const maxAmplifiedAlloc = 4 * jmespathBudget // 140 MiB measured for the worst (to_string of the whole document, 2,001 times)
func TestJMESPathAmplificationFromDocumentIsBounded(t *testing.T) {
	sep := strings.Repeat("s", 1<<20)
	items := `"` + strings.Repeat(`a","`, 2000) + `a"`
	s := snap(t, tree{"doc.json": `{"w": 1e15, "sep": "` + sep + `", "items": [` + items + `], "t": "abcdefgh"}`})
	tests := []string{
		"length(pad_left('x', w))",
		"length(pad_right('x', w, '-'))",
		"length(join(sep, items))",
		"length(replace(sep, '', sep))",
		"length(items[*].to_string($))",
	}
	for _, expr := range tests {
		t.Run(expr, func(t *testing.T) {
			c := task.Criterion{
				Type: task.JSONCheck,
				Spec: &task.JSONCheckSpec{Path: "doc.json", Assertions: []task.Assertion{{Expression: expr, Operator: "gt", Expected: 0.0}}},
			}
			// The bound is on what the evaluation allocates, a count: a wall-clock bound
			// (it was 5 s) measured the host's speed under load, not the budget.
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got := gradeOne(t, c, s)
			runtime.ReadMemStats(&after)
			want(t, got, Fail, 0, "too much work")
			if n := after.TotalAlloc - before.TotalAlloc; n > maxAmplifiedAlloc {
				t.Errorf("allocated %d MiB, over %d MiB", n>>20, maxAmplifiedAlloc>>20)
			}
			t.Logf("allocated %d MiB", (after.TotalAlloc-before.TotalAlloc)>>20)
		})
	}
	t.Run("ordinary use stays within the budget", func(t *testing.T) {
		c := task.Criterion{
			Type: task.JSONCheck,
			Spec: &task.JSONCheckSpec{Path: "doc.json", Assertions: []task.Assertion{
				{Expression: "length(join(',', items))", Operator: "equals", Expected: 4001.0},
				{Expression: "length(pad_left(t, `12`))", Operator: "equals", Expected: 12.0},
			}},
		}
		want(t, gradeOne(t, c, s), Pass, 1, "")
	})
}

func TestJSONCheckCancelledIsError(t *testing.T) {
	s := snap(t, tree{"doc.json": `{"a": [1, 2, 3]}`})
	ctx, cancel := context.WithCancel(context.Background())
	c := crit(task.Criterion{
		Type: task.JSONCheck,
		Spec: &task.JSONCheckSpec{Path: "doc.json", Assertions: []task.Assertion{{Expression: "length(a)", Operator: "equals", Expected: 3.0}}},
	})
	cancel()
	r := Grade(ctx, newTask(c), s, Options{})
	if r.Criteria[0].Status != Error {
		t.Errorf("got %s (%s), want ERROR", r.Criteria[0].Status, r.Criteria[0].Details)
	}
}
