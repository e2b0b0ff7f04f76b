package mockd

import (
	"slices"
	"strings"
)

// Matched names how a call was answered, as recorded in the call log.
const (
	MatchDefault = "default"
	MatchNone    = "none"
)

// Lookup finds the rule answering argv and stdin: an exact argv match first, then a
// normalized one (rules with match normalized or subset), then a subset one (rules with
// match subset), each time the first rule in file order; then the default. It returns the
// rule's index (-1 for the default or none), how it matched and the reply (nil for none).
func (f *Fixture) Lookup(argv []string, stdin []byte) (int, string, *Reply) {
	var norm []string
	var tokens map[string]bool
	for _, tier := range []string{MatchExact, MatchNormalized, MatchSubset} {
		for i := range f.Responses {
			r := &f.Responses[i]
			if r.Stdin != nil && *r.Stdin != string(stdin) {
				continue
			}
			var ok bool
			switch tier {
			case MatchExact:
				ok = slices.Equal(r.Argv, argv)
			case MatchNormalized:
				if r.Match == MatchExact {
					continue
				}
				if norm == nil {
					norm = normalize(argv)
				}
				ok = slices.Equal(normalize(r.Argv), norm)
			case MatchSubset:
				if r.Match != MatchSubset {
					continue
				}
				if tokens == nil {
					tokens = map[string]bool{}
					for _, t := range split(argv) {
						tokens[t] = true
					}
				}
				ok = true
				for _, t := range split(r.Argv) {
					ok = ok && tokens[t]
				}
			}
			if ok {
				return i, tier, &r.Reply
			}
		}
	}
	if f.Default != nil {
		return -1, MatchDefault, f.Default
	}
	return -1, MatchNone, nil
}

// split turns each "--flag=value" into "--flag", "value".
func split(argv []string) []string {
	out := make([]string, 0, len(argv))
	for i, a := range argv {
		if a == "--" {
			return append(out, argv[i:]...)
		}
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") && len(k) > 2 {
			out = append(out, k, v)
			continue
		}
		out = append(out, a)
	}
	return out
}

// SplitArgv parses argv the way normalized matching does: each "--flag=value" is split
// first; a flag's value is the next argument when that is not itself a flag ("" when there
// is none); everything after "--" is positional. Positional arguments keep their order.
func SplitArgv(argv []string) (positional []string, flags map[string][]string) {
	tokens := split(argv)
	flags = map[string][]string{}
	for i := 0; i < len(tokens); i++ {
		t := tokens[i]
		switch {
		case t == "--":
			positional = append(positional, tokens[i+1:]...)
			return positional, flags
		case isFlag(t):
			v := ""
			if i+1 < len(tokens) && !isFlag(tokens[i+1]) {
				v = tokens[i+1]
				i++
			}
			flags[t] = append(flags[t], v)
		default:
			positional = append(positional, t)
		}
	}
	return positional, flags
}

// normalize puts argv in a canonical form: the positional arguments in order, a NUL, then
// the flags with their values (see SplitArgv) sorted, so flag order does not matter.
func normalize(argv []string) []string {
	pos, flags := SplitArgv(argv)
	var fl []string
	for f, vs := range flags {
		for _, v := range vs {
			fl = append(fl, f+"\x00"+v)
		}
	}
	slices.Sort(fl)
	return append(append(pos, "\x00"), fl...)
}

func isFlag(t string) bool { return len(t) > 1 && t[0] == '-' && t != "--" }
