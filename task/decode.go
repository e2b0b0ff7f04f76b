package task

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder walks a YAML node tree and records every problem with its position instead of
// stopping at the first one.
type decoder struct {
	file     string
	problems Problems
	// origin names the file of nodes that came from elsewhere than file (an experiment's
	// defaults and variants, -D overrides), so their problems point there.
	origin map[*yaml.Node]string
	// schemaFiles holds each schema file this document names, compiled (nil: it failed), so
	// that criteria repeated by aliases read and parse it once.
	schemaFiles map[string]any
}

// maxProblems bounds the problems one decoder reports: a file of 50000 unknown keys would
// otherwise print 10 MB of messages.
const maxProblems = 200

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	switch {
	case len(d.problems) > maxProblems:
		return
	case len(d.problems) == maxProblems:
		format, args = "more than %d problems; the rest are not shown", []any{maxProblems}
	}
	p := Problem{File: d.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
		if f, ok := d.origin[n]; ok {
			p.File = f
		}
	}
	d.problems = append(d.problems, p)
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return "a scalar"
	}
	return "an unknown node"
}

// field is one key of a mapping, with the function that decodes its value.
type field struct {
	name   string
	decode func(*yaml.Node)
}

// mapping decodes a mapping whose keys must all be among fields; it reports unknown and
// duplicate keys, and returns the keys present with their key nodes.
func (d *decoder) mapping(n *yaml.Node, what string, fields []field) map[string]*yaml.Node {
	return d.mappingHint(n, what, fields, nil)
}

// mappingHint is mapping whose message for an unknown key ends with hint(key) when that is
// not "" (where the key belongs instead).
func (d *decoder) mappingHint(n *yaml.Node, what string, fields []field, hint func(key string) string) map[string]*yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		if n != nil {
			d.errorf(n, "%s must be a mapping, got %s", what, kindName(n))
		}
		return nil
	}
	known := make(map[string]func(*yaml.Node), len(fields))
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		known[f.name] = f.decode
		names = append(names, f.name)
	}
	sort.Strings(names)
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "%s: keys must be plain names", what)
			continue
		}
		if _, dup := seen[k.Value]; dup {
			d.errorf(k, "duplicate field %q in %s", k.Value, what)
			continue
		}
		seen[k.Value] = k
		dec, ok := known[k.Value]
		if !ok {
			msg := fmt.Sprintf("unknown field %q in %s (known fields: %s)", k.Value, what, strings.Join(names, ", "))
			if hint != nil {
				if h := hint(k.Value); h != "" {
					msg += "; " + h
				}
			}
			d.errorf(k, "%s", msg)
			continue
		}
		if dec != nil {
			dec(v)
		}
	}
	return seen
}

func (d *decoder) scalar(n *yaml.Node, what string) (*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errorf(n, "%s must be a scalar, got %s", what, kindName(n))
		return n, false
	}
	return n, true
}

func (d *decoder) str(n *yaml.Node, what string, dst *string) {
	if s, ok := d.scalar(n, what); ok {
		*dst = s.Value
	}
}

func (d *decoder) boolean(n *yaml.Node, what string, dst *bool) {
	s, ok := d.scalar(n, what)
	if !ok {
		return
	}
	b, err := strconv.ParseBool(s.Value)
	if err != nil || s.Tag != "!!bool" {
		d.errorf(s, "%s must be true or false, got %q", what, s.Value)
		return
	}
	*dst = b
}

func (d *decoder) integer(n *yaml.Node, what string, min, max int64, dst *int64) {
	s, ok := d.scalar(n, what)
	if !ok {
		return
	}
	v, err := strconv.ParseInt(s.Value, 0, 64)
	if err != nil || s.Tag != "!!int" {
		d.errorf(s, "%s must be a whole number, got %q", what, s.Value)
		return
	}
	if v < min || v > max {
		d.errorf(s, "%s must be between %d and %d, got %d", what, min, max, v)
		return
	}
	*dst = v
}

func (d *decoder) number(n *yaml.Node, what string, min, max float64, dst *float64) {
	s, ok := d.scalar(n, what)
	if !ok {
		return
	}
	v, err := strconv.ParseFloat(s.Value, 64)
	if err != nil || (s.Tag != "!!int" && s.Tag != "!!float") || math.IsNaN(v) || math.IsInf(v, 0) {
		d.errorf(s, "%s must be a number, got %q", what, s.Value)
		return
	}
	if v < min || v > max {
		d.errorf(s, "%s must be between %g and %g, got %g", what, min, max, v)
		return
	}
	*dst = v
}

// duration accepts Go duration strings ("90s", "30m") and plain numbers of seconds.
func (d *decoder) duration(n *yaml.Node, what string, dst *time.Duration) {
	s, ok := d.scalar(n, what)
	if !ok {
		return
	}
	var v time.Duration
	if s.Tag == "!!int" || s.Tag == "!!float" {
		f, err := strconv.ParseFloat(s.Value, 64)
		if err != nil || math.IsNaN(f) || f > float64(math.MaxInt64)/float64(time.Second) {
			d.errorf(s, "%s: %q is not a number of seconds", what, s.Value)
			return
		}
		v = time.Duration(f * float64(time.Second))
	} else {
		var err error
		v, err = time.ParseDuration(s.Value)
		if err != nil {
			d.errorf(s, "%s: %q is not a duration (write e.g. 90s, 30m or a number of seconds)", what, s.Value)
			return
		}
	}
	if v <= 0 {
		d.errorf(s, "%s must be positive, got %q", what, s.Value)
		return
	}
	*dst = v
}

func (d *decoder) list(n *yaml.Node, what string, each func(i int, item *yaml.Node)) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "%s must be a list, got %s", what, kindName(n))
		return
	}
	for i, item := range n.Content {
		each(i, item)
	}
}

func (d *decoder) strings(n *yaml.Node, what string, dst *[]string) {
	out := []string{}
	d.list(n, what, func(i int, item *yaml.Node) {
		var s string
		d.str(item, fmt.Sprintf("%s[%d]", what, i), &s)
		out = append(out, s)
	})
	*dst = out
}

func (d *decoder) enum(n *yaml.Node, what string, allowed []string, dst *string) {
	var s string
	sn, ok := d.scalar(n, what)
	if !ok {
		return
	}
	s = sn.Value
	for _, a := range allowed {
		if s == a {
			*dst = s
			return
		}
	}
	d.errorf(sn, "%s must be one of %s, got %q", what, strings.Join(allowed, ", "), s)
}

func (d *decoder) regex(n *yaml.Node, what string, dst *string) {
	var s string
	d.str(n, what, &s)
	if s == "" {
		return
	}
	if _, err := regexp.Compile(s); err != nil {
		d.errorf(resolve(n), "%s: regular expression does not compile: %v", what, err)
		return
	}
	*dst = s
}

// value converts a free-form node to plain Go values (map[string]any, []any, string,
// float64, bool, nil), the shapes encoding/json produces. Its work is bounded by the
// document's node budget (checkNodes), which every document passes before it is decoded.
func (d *decoder) value(n *yaml.Node) (any, bool) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				d.errorf(k, "mapping keys must be scalars")
				return nil, false
			}
			v, ok := d.value(n.Content[i+1])
			if !ok {
				return nil, false
			}
			m[k.Value] = v
		}
		return m, true
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, ok := d.value(item)
			if !ok {
				return nil, false
			}
			l = append(l, v)
		}
		return l, true
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, true
		case "!!bool":
			b, _ := strconv.ParseBool(n.Value)
			return b, true
		case "!!int", "!!float":
			f, err := strconv.ParseFloat(n.Value, 64)
			if err != nil {
				if i, err2 := strconv.ParseInt(n.Value, 0, 64); err2 == nil {
					return float64(i), true
				}
				return n.Value, true
			}
			return f, true
		default:
			return n.Value, true
		}
	}
	d.errorf(n, "unsupported YAML value")
	return nil, false
}
