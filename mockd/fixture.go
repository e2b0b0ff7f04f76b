package mockd

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"ceval.dev/ceval/mockd/wire"
)

// Match modes of a fixture response.
const (
	MatchExact      = "exact"
	MatchNormalized = "normalized"
	MatchSubset     = "subset"
)

// MaxFixtureBytes bounds a fixture file.
const MaxFixtureBytes = 4 << 20

// Fixture is a parsed fixture file: the canned answers for one tool.
type Fixture struct {
	Version   int
	Responses []Rule
	Default   *Reply // nil: an unmatched call fails with ExitNoMatch
}

// Rule is one response of a fixture: when a call's argv (the arguments after the tool's name) matches
// Argv under Match, and Stdin when set equals the call's stdin, the call gets Reply.
type Rule struct {
	Argv  []string
	Match string
	Stdin *string
	Reply
	Line int // where the rule starts in the fixture file
}

// Reply is what the client prints and exits with.
type Reply struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// FixtureProblem is one thing wrong with a fixture file, at its line and column (1-based;
// 0 when unknown).
type FixtureProblem struct {
	Line, Column int
	Msg          string
}

func (p FixtureProblem) String() string { return fmt.Sprintf("%d:%d: %s", p.Line, p.Column, p.Msg) }

// ParseFixture parses a fixture file (YAML or JSON): {version: 1, responses: [{argv, match,
// stdin, exit_code, stdout, stderr}], default: {exit_code, stdout, stderr}}. Unknown fields,
// wrong types and replies too large for one protocol response are problems; it returns every
// problem it finds and a nil Fixture when there is any.
func ParseFixture(data []byte) (*Fixture, []FixtureProblem) {
	if len(data) > MaxFixtureBytes {
		return nil, []FixtureProblem{{Msg: fmt.Sprintf("fixture is larger than %d bytes", MaxFixtureBytes)}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, []FixtureProblem{{Line: 1, Column: 1, Msg: "not valid YAML or JSON: " + err.Error()}}
	}
	p := &fixtureParser{}
	f := p.fixture(&doc)
	if len(p.problems) > 0 {
		return nil, p.problems
	}
	return f, nil
}

type fixtureParser struct{ problems []FixtureProblem }

func (p *fixtureParser) errorf(n *yaml.Node, format string, args ...any) {
	p.problems = append(p.problems, FixtureProblem{Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)})
}

// fields walks a mapping, calling the handler of each known key; it reports unknown and
// duplicate keys and returns the keys seen, or nil when n is not a mapping.
func (p *fixtureParser) fields(n *yaml.Node, what string, handlers map[string]func(*yaml.Node)) map[string]*yaml.Node {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		p.errorf(n, "%s: anchors and aliases are not allowed in fixtures", what)
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s must be a mapping", what)
		return nil
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		h, ok := handlers[k.Value]
		switch {
		case !ok:
			p.errorf(k, "%s: unknown field %q", what, k.Value)
		case seen[k.Value] != nil:
			p.errorf(k, "%s: field %q given twice", what, k.Value)
		default:
			seen[k.Value] = k
			if v.Kind == yaml.AliasNode || v.Anchor != "" {
				p.errorf(v, "%s.%s: anchors and aliases are not allowed in fixtures", what, k.Value)
				continue
			}
			h(v)
		}
	}
	return seen
}

func (p *fixtureParser) str(n *yaml.Node, what string, out *string) bool {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Style == 0) {
		p.errorf(n, "%s must be a string (quote numbers and booleans)", what)
		return false
	}
	*out = n.Value
	return true
}

func (p *fixtureParser) integer(n *yaml.Node, what string, lo, hi int, out *int) {
	var v int64
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil || v < int64(lo) || v > int64(hi) {
		p.errorf(n, "%s must be an integer from %d to %d", what, lo, hi)
		return
	}
	*out = int(v)
}

func (p *fixtureParser) fixture(doc *yaml.Node) *Fixture {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		p.errorf(doc, "fixture must be one document")
		return nil
	}
	root := doc.Content[0]
	f := &Fixture{}
	seen := p.fields(root, "fixture", map[string]func(*yaml.Node){
		"version": func(v *yaml.Node) { p.integer(v, "version", 1, 1, &f.Version) },
		"responses": func(v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				p.errorf(v, "responses must be a list")
				return
			}
			for i, item := range v.Content {
				if r, ok := p.response(item, fmt.Sprintf("responses[%d]", i)); ok {
					f.Responses = append(f.Responses, r)
				}
			}
		},
		"default": func(v *yaml.Node) {
			r := Reply{}
			if p.reply(v, "default", &r, nil) {
				f.Default = &r
			}
		},
	})
	if seen == nil {
		return nil
	}
	if seen["version"] == nil {
		p.errorf(root, "missing required field version (1)")
	}
	if seen["responses"] == nil && seen["default"] == nil {
		p.errorf(root, "give responses, default or both")
	}
	return f
}

// reply reads exit_code, stdout and stderr (plus any extra handlers) from a mapping.
func (p *fixtureParser) reply(n *yaml.Node, what string, r *Reply, extra map[string]func(*yaml.Node)) bool {
	handlers := map[string]func(*yaml.Node){
		"exit_code": func(v *yaml.Node) { p.integer(v, what+".exit_code", 0, 255, &r.ExitCode) },
		"stdout":    func(v *yaml.Node) { p.str(v, what+".stdout", &r.Stdout) },
		"stderr":    func(v *yaml.Node) { p.str(v, what+".stderr", &r.Stderr) },
	}
	for k, h := range extra {
		handlers[k] = h
	}
	before := len(p.problems)
	if p.fields(n, what, handlers) == nil {
		return false
	}
	if size := replySize(*r); size > MaxResponseBytes {
		p.errorf(n, "%s: stdout and stderr take %d bytes on the wire, over the %d-byte response limit", what, size, MaxResponseBytes)
	}
	return len(p.problems) == before
}

func (p *fixtureParser) response(n *yaml.Node, what string) (Rule, bool) {
	r := Rule{Match: MatchExact, Line: n.Line}
	var argvNode *yaml.Node
	ok := p.reply(n, what, &r.Reply, map[string]func(*yaml.Node){
		"argv": func(v *yaml.Node) {
			argvNode = v
			if v.Kind != yaml.SequenceNode {
				p.errorf(v, "%s.argv must be a list of strings", what)
				return
			}
			r.Argv = []string{}
			for i, item := range v.Content {
				var s string
				if p.str(item, fmt.Sprintf("%s.argv[%d]", what, i), &s) {
					if strings.ContainsRune(s, 0) {
						p.errorf(item, "%s.argv[%d] contains NUL", what, i)
					}
					r.Argv = append(r.Argv, s)
				}
			}
		},
		"match": func(v *yaml.Node) {
			var s string
			if p.str(v, what+".match", &s) {
				if s != MatchExact && s != MatchNormalized && s != MatchSubset {
					p.errorf(v, "%s.match %q: want exact, normalized or subset", what, s)
				}
				r.Match = s
			}
		},
		"stdin": func(v *yaml.Node) {
			var s string
			if p.str(v, what+".stdin", &s) {
				r.Stdin = &s
			}
		},
	})
	if n.Kind == yaml.MappingNode && argvNode == nil {
		p.errorf(n, "%s: missing required field argv (the arguments after the tool's name)", what)
		ok = false
	}
	return r, ok
}

// replySize is the encoded size of a response body carrying r.
func replySize(r Reply) int {
	return wire.ResponseSize(Response(r))
}
