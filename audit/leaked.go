package audit

import (
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"

	"ceval.dev/ceval/task"
)

// Leaked returns the leaked-criteria agent: it knows the criteria (a leak the sandbox
// normally prevents) and writes only their literal expectations: the strings includes and
// labels want, a line matching each wanted pattern, and JSON holding just the fields the
// assertions name. What it passes shows how little each criterion checks beyond those
// literals; it is informational and never changes a verdict.
func Leaked(t *task.Task) Agent {
	texts := map[string][]string{}
	objects := map[string]map[string]any{}
	var order []string
	add := func(p string) {
		if _, ok := texts[p]; !ok {
			if _, ok := objects[p]; !ok {
				order = append(order, p)
			}
		}
	}
	for _, c := range t.Criteria {
		var path string
		var lines []string // the text criteria's strings
		var assertions []task.Assertion
		switch s := c.Spec.(type) {
		case *task.FileExistsSpec:
			if !strings.ContainsAny(s.Path, "*?[") {
				add(s.Path)
				texts[s.Path] = append(texts[s.Path], "")
			}
			continue
		case *task.FileContainsSpec:
			path, lines = s.Path, append([]string{}, s.Includes...)
		case *task.FileCheckSpec:
			path, lines = s.Path, append([]string{}, s.Includes...)
			for _, p := range s.Patterns {
				if p.MustMatch {
					lines = append(lines, matching(p.Pattern))
				}
			}
		case *task.FileMatchesRegexSpec:
			path, lines = s.Path, []string{}
			if s.Pattern != "" {
				lines = append(lines, matching(s.Pattern))
			}
		case *task.ClassificationMatchSpec:
			path, lines = s.Path, []string{}
			if s.ExpectedLabel != "" {
				lines = append(lines, s.ExpectedLabel)
			}
		case *task.JSONCheckSpec:
			path, assertions = s.Path, s.Assertions
		default:
			continue
		}
		concrete, ok := globExample(path)
		if !ok {
			continue
		}
		path = concrete // plant the answer at a path the glob matches
		add(path)
		if lines != nil {
			texts[path] = append(texts[path], lines...)
			continue
		}
		if objects[path] == nil {
			objects[path] = map[string]any{}
		}
		for _, a := range assertions {
			if keys, ok := dotted(a.Expression); ok {
				if v, ok := literal(a); ok {
					set(objects[path], keys, v)
				}
			}
		}
	}
	var files []file
	for _, p := range order {
		var data []byte
		if obj := objects[p]; obj != nil {
			if len(texts[p]) > 0 { // text criteria on the same file: their strings ride along
				obj["_"] = strings.Join(texts[p], "\n")
			}
			data, _ = json.MarshalIndent(obj, "", "  ")
		} else {
			data = []byte(strings.Join(texts[p], "\n"))
		}
		files = append(files, file{rel: p, data: append(data, '\n')})
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.rel
	}
	sort.Strings(names)
	return Agent{Name: LeakedAgent, Kind: KindLeaked, Argv: writeFilesArgv(files),
		What: fmt.Sprintf("writes only the criteria's literal expectations to %s", strings.Join(names, ", "))}
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// dotted splits a JMESPath expression of plain field names (a.b.c); ok is false for
// anything else.
func dotted(expr string) ([]string, bool) {
	keys := strings.Split(strings.TrimSpace(expr), ".")
	for _, k := range keys {
		if !identifier.MatchString(k) {
			return nil, false
		}
	}
	return keys, true
}

func set(obj map[string]any, keys []string, v any) {
	for _, k := range keys[:len(keys)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[k] = next
		}
		obj = next
	}
	obj[keys[len(keys)-1]] = v
}

// literal is the least value that satisfies assertion a; ok is false when there is none to
// write (exists: false).
func literal(a task.Assertion) (any, bool) {
	num, _ := a.Expected.(float64)
	switch a.Operator {
	case "equals", "gte", "lte":
		return a.Expected, true
	case "gt":
		return num + 1, true
	case "lt":
		return num - 1, true
	case "not_equals":
		return "ceval-leaked", true
	case "contains":
		return []any{a.Expected}, true
	case "regex":
		s, _ := a.Expected.(string)
		return matching(s), true
	case "exists":
		b, _ := a.Expected.(bool)
		return true, b
	case "type":
		switch a.Expected {
		case "string":
			return "", true
		case "number":
			return 0, true
		case "boolean":
			return false, true
		case "array":
			return []any{}, true
		case "object":
			return map[string]any{}, true
		}
		return nil, true
	}
	return nil, false
}

// matching returns a short string the regular expression matches (the leftmost choice of
// every alternative, the fewest repetitions), or "" when the expression does not parse.
func matching(expr string) string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return ""
	}
	var b strings.Builder
	var gen func(re *syntax.Regexp)
	gen = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpLiteral:
			b.WriteString(string(re.Rune))
		case syntax.OpCharClass:
			if len(re.Rune) > 0 {
				r := re.Rune[0]
				if r < ' ' && re.Rune[1] >= 'a' { // prefer a printable member
					r = max(r, 'a')
				}
				b.WriteRune(r)
			}
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteByte('x')
		case syntax.OpCapture:
			gen(re.Sub[0])
		case syntax.OpConcat:
			for _, s := range re.Sub {
				gen(s)
			}
		case syntax.OpAlternate:
			gen(re.Sub[0])
		case syntax.OpPlus:
			gen(re.Sub[0])
		case syntax.OpRepeat:
			for range re.Min {
				gen(re.Sub[0])
			}
		}
	}
	gen(re.Simplify())
	return b.String()
}

// globExample is a path a criterion's glob matches ("src/*.py" -> "src/x.py", "a/**/b" ->
// "a/x/b"), the path itself when it is none; false for a glob it cannot make one for.
func globExample(p string) (string, bool) {
	if strings.Contains(p, "[") {
		return "", false
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if seg == "**" {
			segs[i] = "x"
			continue
		}
		segs[i] = strings.NewReplacer("*", "x", "?", "x").Replace(seg)
	}
	return strings.Join(segs, "/"), true
}
