package mockd

import (
	"strings"
	"testing"
)

const ghFixture = `version: 1
responses:
  - argv: [pr, list]
    stdout: "#1 fix the bug\n"
  - argv: [pr, list, --state, open, --limit, "5"]
    match: normalized
    stdout: "normalized\n"
  - argv: [pr, view]
    match: subset
    stdout: "subset view\n"
  - argv: [pr, create]
    stdin: "body\n"
    stdout: "created\n"
  - argv: [secret]
    stdout: "CANARY-never-triggered\n"
default:
  exit_code: 1
  stderr: "default answer\n"
`

func mustFixture(t testing.TB, src string) *Fixture {
	t.Helper()
	f, probs := ParseFixture([]byte(src))
	if probs != nil {
		t.Fatalf("ParseFixture: %v", probs)
	}
	return f
}

func TestParseFixtureAcceptsYAMLAndJSON(t *testing.T) {
	f := mustFixture(t, ghFixture)
	if len(f.Responses) != 5 || f.Default == nil || f.Default.ExitCode != 1 || f.Responses[1].Match != MatchNormalized || f.Responses[0].Match != MatchExact {
		t.Fatalf("parsed %+v", f)
	}
	if f.Responses[0].Line != 3 {
		t.Errorf("rule 0 at line %d, want 3", f.Responses[0].Line)
	}
	j := mustFixture(t, `{"version": 1, "responses": [{"argv": ["a"], "match": "subset", "exit_code": 3, "stdout": "x"}]}`)
	if j.Responses[0].ExitCode != 3 || j.Default != nil {
		t.Fatalf("parsed %+v", j)
	}
}

func TestParseFixtureReportsEveryProblemWithItsLine(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // "line:col: substring"
	}{
		{"unknown field", "version: 1\nresponses: []\nextra: 1\n", []string{"3:1: fixture: unknown field \"extra\""}},
		{"missing version", "responses: []\n", []string{"1:1: missing required field version"}},
		{"wrong version", "version: 2\ndefault: {}\n", []string{"1:10: version must be an integer from 1 to 1"}},
		{"bad match and exit code", "version: 1\nresponses:\n  - argv: [a]\n    match: fuzzy\n    exit_code: 300\n",
			[]string{"4:12: responses[0].match \"fuzzy\"", "5:16: responses[0].exit_code must be an integer from 0 to 255"}},
		{"argv not strings", "version: 1\nresponses:\n  - argv: [a, 5]\n", []string{"3:15: responses[0].argv[1] must be a string"}},
		{"missing argv", "version: 1\nresponses:\n  - stdout: x\n", []string{"3:5: responses[0]: missing required field argv"}},
		{"alias", "version: 1\nresponses:\n  - &r {argv: [a]}\n  - *r\n", []string{"3:5: responses[0]: anchors and aliases", "4:5: responses[1]: anchors and aliases"}},
		{"not yaml", "version: [\n", []string{"1:1: not valid YAML"}},
		{"reply over the response limit", "version: 1\ndefault:\n  stdout: \"" + strings.Repeat("x", MaxResponseBytes) + "\"\n", []string{"3:3: default: stdout and stderr take"}},
		{"nothing to answer", "version: 1\n", []string{"1:1: give responses, default or both"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, probs := ParseFixture([]byte(tt.src))
			if f != nil {
				t.Fatalf("accepted: %+v", f)
			}
			var got []string
			for _, p := range probs {
				got = append(got, p.String())
			}
			for _, w := range tt.want {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("want a problem %q, got %q", w, got)
				}
			}
		})
	}
}

func TestLookupOrder(t *testing.T) {
	f := mustFixture(t, ghFixture)
	rule := func(i int) int { return i }
	tests := []struct {
		name  string
		argv  []string
		stdin string
		rule  int
		how   string
		out   string
	}{
		{"exact", []string{"pr", "list"}, "", rule(0), MatchExact, "#1 fix the bug\n"},
		{"normalized, flags reordered and joined", []string{"pr", "list", "--limit=5", "--state", "open"}, "", rule(1), MatchNormalized, "normalized\n"},
		{"normalized rule also matches exactly", []string{"pr", "list", "--state", "open", "--limit", "5"}, "", rule(1), MatchExact, "normalized\n"},
		{"normalized keeps positional order", []string{"list", "pr", "--state", "open", "--limit", "5"}, "", -1, MatchDefault, ""},
		{"normalized compares values", []string{"pr", "list", "--state", "closed", "--limit", "5"}, "", -1, MatchDefault, ""},
		{"subset", []string{"pr", "view", "12", "--json", "title"}, "", rule(2), MatchSubset, "subset view\n"},
		{"exact rule is not a subset rule", []string{"pr", "list", "--draft"}, "", -1, MatchDefault, ""},
		{"stdin must match", []string{"pr", "create"}, "other\n", -1, MatchDefault, ""},
		{"stdin matches", []string{"pr", "create"}, "body\n", rule(3), MatchExact, "created\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, how, rep := f.Lookup(tt.argv, []byte(tt.stdin))
			if i != tt.rule || how != tt.how || rep == nil || (tt.out != "" && rep.Stdout != tt.out) {
				t.Errorf("Lookup(%q) = %d %s %+v, want %d %s %q", tt.argv, i, how, rep, tt.rule, tt.how, tt.out)
			}
		})
	}
	nodef := mustFixture(t, "version: 1\nresponses: [{argv: [a]}]\n")
	if i, how, rep := nodef.Lookup([]string{"b"}, nil); i != -1 || how != MatchNone || rep != nil {
		t.Errorf("no default: got %d %s %+v", i, how, rep)
	}
}

func TestSubsetTakesFirstRuleInFileOrder(t *testing.T) {
	f := mustFixture(t, "version: 1\nresponses:\n  - {argv: [a], match: subset, stdout: first}\n  - {argv: [a, b], match: subset, stdout: second}\n")
	if i, _, _ := f.Lookup([]string{"a", "b", "c"}, nil); i != 0 {
		t.Errorf("rule %d, want 0 (file order)", i)
	}
}

func FuzzParseFixture(f *testing.F) {
	f.Add([]byte(ghFixture))
	f.Add([]byte(`{"version":1,"default":{"stdout":"x"}}`))
	f.Add([]byte("version: 1\nresponses:\n  - &a {argv: [x]}\n  - *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fx, probs := ParseFixture(data)
		if (fx == nil) == (probs == nil) {
			t.Fatalf("fixture %v and problems %v: want exactly one", fx, probs)
		}
		if fx != nil {
			for _, r := range fx.Responses {
				fx.Lookup(r.Argv, nil)
			}
		}
	})
}
