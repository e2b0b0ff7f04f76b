package grader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	jmespath "github.com/jmespath-community/go-jmespath"
	"github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// jmespathBudget bounds the work of the JMESPath functions one assertion may call,
// counted in units of roughly one byte or one element of the values they take and
// return. The document is agent-written, so a width, a separator or a count read from it
// must not be able to make pad_left, replace or join allocate without bound.
const jmespathBudget = 1 << 26

// errBudget is returned by a JMESPath function once the assertion's budget is spent.
var errBudget = errors.New("the expression does too much work on this document")

// json_check assertion operators. Numbers are float64 on both sides; "expected" comes
// from the task file, "actual" from the expression over the workspace's JSON.
//
//   - equals, not_equals: deep equality of JSON values (numbers as float64, object key
//     order irrelevant, array order relevant).
//   - contains: actual string → expected is a substring (expected must be a string);
//     actual array → some element deep-equals expected; actual object → expected (a
//     string) is one of its keys. Any other actual fails.
//   - gt, gte, lt, lte: actual and expected must be numbers; a non-number actual fails.
//   - type: expected names actual's JSON type: string, number, boolean, array, object, null.
//   - regex: actual must be a string that the Go regexp expected matches (unanchored).
//   - exists: expected true (the default) needs actual non-null; false needs it null. A
//     missing key and an explicit null are the same to JMESPath.

// assertion is one compiled json_check assertion.
type assertion struct {
	task.Assertion
	jp jmespath.JMESPath
	re *regexp.Regexp
}

func jsonCheck(ctx context.Context, c *task.JSONCheckSpec, s *snapshot.Snapshot) verdict {
	var schema *jsonschema.Schema
	if c.JSONSchema != nil {
		var err error
		if schema, err = task.CompileSchema(c.JSONSchema); err != nil {
			return errored("json_schema does not compile: %v", err)
		}
	}
	as := make([]assertion, len(c.Assertions))
	for i, a := range c.Assertions {
		jp, err := jmespath.Compile(a.Expression, boundedFunctions(ctx)...)
		if err != nil {
			return errored("assertions[%d] expression %q does not parse: %v", i, a.Expression, err)
		}
		as[i] = assertion{Assertion: a, jp: jp}
		if a.Operator == "regex" {
			p, ok := a.Expected.(string)
			if !ok {
				return errored("assertions[%d]: operator regex needs a string pattern", i)
			}
			if as[i].re, err = regexp.Compile(p); err != nil {
				return errored("assertions[%d] pattern %q does not compile: %v", i, p, err)
			}
		}
	}

	data, v := readFile(s, c.Path)
	if v != nil {
		return *v
	}
	if !utf8.Valid(data) {
		return failed("%s is not valid JSON: not UTF-8", c.Path)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return failed("%s is not valid JSON: %v", c.Path, err)
	}

	total := len(as)
	met := 0
	var unmet []string
	if schema != nil {
		total++
		if err := schema.Validate(doc); err != nil {
			unmet = append(unmet, "schema: "+oneLine(err.Error(), 400))
		} else {
			met++
		}
	}
	doc = toFloats(doc) // after the schema, which wants json.Number
	for i, a := range as {
		ok, why, err := a.check(doc)
		switch {
		case ctx.Err() != nil:
			return errored("grading stopped: %v", ctx.Err())
		case err != nil:
			return errored("assertions[%d]: %v", i, err)
		case ok:
			met++
		default:
			unmet = append(unmet, fmt.Sprintf("assertions[%d] %s %s %s: %s", i, a.Expression, a.Operator, render(normalize(a.Expected)), why))
		}
	}
	if total == 0 {
		return scored(1, fmt.Sprintf("%s is valid JSON; nothing else to check", c.Path))
	}
	details := fmt.Sprintf("%d/%d checks met", met, total)
	if len(unmet) > 0 {
		details += ": " + strings.Join(unmet, "; ")
	}
	out := scored(float64(met)/float64(total), details)
	out.parts = &Parts{Met: met, Total: total}
	return out
}

// check evaluates the assertion over doc. ok says whether it holds, why says why not; err
// is for an assertion the grader cannot apply (a task-side problem).
func (a assertion) check(doc any) (ok bool, why string, err error) {
	actual, serr := search(a.jp, doc)
	if serr != nil {
		return false, fmt.Sprintf("expression fails on this document: %s", oneLine(serr.Error(), 200)), nil
	}
	actual = normalize(actual)
	expected := normalize(a.Expected)
	got := "got " + describe(actual)
	switch a.Operator {
	case "equals", "":
		return jsonEqual(actual, expected), got, nil
	case "not_equals":
		return !jsonEqual(actual, expected), got, nil
	case "contains":
		return contains(actual, expected, got)
	case "gt", "gte", "lt", "lte":
		want, isNum := expected.(float64)
		if !isNum {
			return false, "", fmt.Errorf("operator %s needs a number in expected", a.Operator)
		}
		n, isNum := actual.(float64)
		if !isNum {
			return false, got + ", not a number", nil
		}
		switch a.Operator {
		case "gt":
			return n > want, got, nil
		case "gte":
			return n >= want, got, nil
		case "lt":
			return n < want, got, nil
		}
		return n <= want, got, nil
	case "type":
		want, isStr := expected.(string)
		if !isStr {
			return false, "", errors.New("operator type needs a JSON type name in expected")
		}
		return jsonType(actual) == want, got, nil
	case "regex":
		str, isStr := actual.(string)
		if !isStr {
			return false, got + ", not a string", nil
		}
		return a.re.MatchString(str), got, nil
	case "exists":
		want := true
		if expected != nil {
			b, isBool := expected.(bool)
			if !isBool {
				return false, "", errors.New("operator exists takes expected true or false")
			}
			want = b
		}
		return (actual != nil) == want, got, nil
	}
	return false, "", fmt.Errorf("unknown operator %q", a.Operator)
}

func contains(actual, expected any, got string) (bool, string, error) {
	switch x := actual.(type) {
	case string:
		sub, ok := expected.(string)
		if !ok {
			return false, got + "; a string can only contain a string", nil
		}
		return strings.Contains(x, sub), got, nil
	case []any:
		for _, item := range x {
			if jsonEqual(item, expected) {
				return true, got, nil
			}
		}
		return false, got + " with no such element", nil
	case map[string]any:
		key, ok := expected.(string)
		if !ok {
			return false, got + "; an object can only contain a key, which is a string", nil
		}
		_, has := x[key]
		return has, got + " without that key", nil
	}
	return false, got + "; contains needs a string, an array or an object", nil
}

// search runs a compiled expression. A panic inside the JMESPath library is a failure of
// this document's assertion, not of the grader.
func search(jp jmespath.JMESPath, doc any) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("evaluation panicked: %v", p)
		}
	}()
	return jp.Search(doc)
}

// boundedFunctions returns the default JMESPath functions, each charging a budget
// shared by one compiled expression for the size of what it takes and returns. Functions
// whose result can dwarf their arguments are charged before they run.
func boundedFunctions(ctx context.Context) []functions.FunctionEntry {
	left := int64(jmespathBudget)
	spend := func(n int64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		left -= n
		if left < 0 {
			return errBudget
		}
		return nil
	}
	defaults := functions.GetDefaultFunctions()
	out := make([]functions.FunctionEntry, len(defaults))
	for i, f := range defaults {
		name, handler := f.Name, f.Handler
		f.Handler = func(args []any) (any, error) {
			cost := int64(1) + upfrontCost(name, args)
			for _, a := range args {
				cost += shallowSize(a)
			}
			if err := spend(cost); err != nil {
				return nil, err
			}
			res, err := handler(args)
			if err != nil {
				return nil, err
			}
			if err := spend(shallowSize(res)); err != nil {
				return nil, err
			}
			return res, nil
		}
		out[i] = f
	}
	return out
}

// upfrontCost is the size of the string a function is about to build, for functions
// whose output is not bounded by their input.
func upfrontCost(name string, args []any) int64 {
	str := func(i int) string {
		if i < len(args) {
			s, _ := args[i].(string)
			return s
		}
		return ""
	}
	switch name {
	case "pad_left", "pad_right":
		if len(args) > 1 {
			if w, ok := args[1].(float64); ok && w > 0 {
				return int64(min(w, math.MaxInt64/2))
			}
		}
	case "replace":
		subject, old, repl := str(0), str(1), str(2)
		n := int64(strings.Count(subject, old))
		if len(args) > 3 {
			if c, ok := args[3].(float64); ok && c >= 0 && float64(n) > c {
				n = int64(c)
			}
		}
		return int64(len(subject)) + n*int64(max(0, len(repl)-len(old)))
	case "join":
		items, _ := args[1].([]any)
		total := int64(len(str(0))) * int64(len(items))
		for _, it := range items {
			if s, ok := it.(string); ok {
				total += int64(len(s))
			}
		}
		return total
	}
	return 0
}

// shallowSize measures a value without walking into it.
func shallowSize(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x))
	case []any:
		return int64(len(x))
	case map[string]any:
		return int64(len(x))
	}
	return 1
}

// toFloats turns the json.Number values of a decoded document into float64, in place. A
// number beyond float64's range becomes ±Inf.
func toFloats(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case []any:
		for i := range x {
			x[i] = toFloats(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = toFloats(e)
		}
	}
	return v
}

// normalize makes Go numbers of any kind float64, so values compare as JSON numbers.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float32:
		return float64(x)
	case json.Number:
		return toFloats(x)
	}
	return v
}

// jsonEqual is deep equality of JSON values.
func jsonEqual(a, b any) bool {
	a, b = normalize(a), normalize(b)
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch normalize(v).(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// render shows a value briefly: scalars in full (strings cut), containers by size.
func render(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return quote(x, 80)
	case []any:
		return "an array of " + plural(len(x), "item", "items")
	case map[string]any:
		return "an object with " + plural(len(x), "key", "keys")
	}
	return fmt.Sprintf("a %T", v)
}

// describe is render plus the JSON type for scalars, so "1" and 1 read differently.
func describe(v any) string {
	switch v.(type) {
	case []any, map[string]any:
		return render(v)
	}
	return fmt.Sprintf("%s (%s)", render(v), jsonType(v))
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
