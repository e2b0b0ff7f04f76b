package cmds

import (
	"fmt"
	"regexp"
	"strings"
)

// compileRegex compiles a POSIX basic (ere=false) or extended regular expression by
// translating it to RE2 syntax, with leftmost-longest matching as POSIX requires.
// Back-references (\1 in a pattern) have no RE2 equivalent and are rejected.
func compileRegex(pat string, ere, icase bool) (*regexp.Regexp, error) {
	s, err := translateRegex(pat, ere)
	if err != nil {
		return nil, err
	}
	if icase {
		s = "(?i)" + s
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	re.Longest()
	return re, nil
}

func translateRegex(pat string, ere bool) (string, error) {
	var b strings.Builder
	// atStart: a '*' here is literal (BRE) and '^' is an anchor.
	atStart := true
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		wasStart := atStart
		atStart = false
		switch c {
		case '[':
			j, cls, err := bracket(pat, i)
			if err != nil {
				return "", err
			}
			b.WriteString(cls)
			i = j
		case '\\':
			if i+1 >= len(pat) {
				return "", fmt.Errorf("trailing backslash (\\)")
			}
			i++
			d := pat[i]
			switch {
			case !ere && d == '(':
				b.WriteString("(")
				atStart = true
			case !ere && d == ')':
				b.WriteString(")")
			case !ere && d == '|':
				b.WriteString("|")
				atStart = true
			case !ere && d == '{':
				end := strings.Index(pat[i:], `\}`)
				if end < 0 {
					return "", fmt.Errorf("unmatched \\{")
				}
				b.WriteString("{" + pat[i+1:i+end] + "}")
				i += end + 1
			case !ere && (d == '+' || d == '?'):
				b.WriteByte(d)
			case d == '<' || d == '>':
				b.WriteString(`\b`)
			case d >= '1' && d <= '9':
				return "", fmt.Errorf("back-references (\\%c) are not supported", d)
			case d == 'w' || d == 'W' || d == 's' || d == 'S' || d == 'b' || d == 'B':
				b.WriteByte('\\')
				b.WriteByte(d)
			case d == 'n':
				b.WriteString(`\n`)
			case d == 't':
				b.WriteString(`\t`)
			case d == '`':
				b.WriteString(`\A`)
			case d == '\'':
				b.WriteString(`\z`)
			default:
				b.WriteString(regexp.QuoteMeta(string(d)))
			}
		case '*':
			if wasStart {
				b.WriteString(`\*`)
			} else {
				b.WriteByte('*')
			}
		case '^':
			if ere || wasStart {
				b.WriteByte('^')
				atStart = true
			} else {
				b.WriteString(`\^`)
			}
		case '$':
			rest := pat[i+1:]
			if ere || rest == "" || strings.HasPrefix(rest, `\)`) || strings.HasPrefix(rest, `\|`) {
				b.WriteByte('$')
			} else {
				b.WriteString(`\$`)
			}
		case '(', ')', '|', '{', '}', '+', '?':
			if ere {
				if c == '{' && !validInterval(pat[i:]) {
					b.WriteString(`\{`)
					continue
				}
				b.WriteByte(c)
				if c == '(' || c == '|' {
					atStart = true
				}
			} else {
				b.WriteByte('\\')
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func validInterval(s string) bool {
	end := strings.IndexByte(s, '}')
	if end < 2 {
		return false
	}
	body := s[1:end]
	return strings.Trim(body, "0123456789,") == "" && body[0] != ','
}

// bracket translates the bracket expression starting at pat[i] == '['; it returns the index
// of its closing ']'.
func bracket(pat string, i int) (int, string, error) {
	var b strings.Builder
	b.WriteByte('[')
	j := i + 1
	if j < len(pat) && pat[j] == '^' {
		b.WriteByte('^')
		j++
	}
	first := true
	for ; j < len(pat); j++ {
		c := pat[j]
		switch {
		case c == ']' && !first:
			b.WriteByte(']')
			return j, b.String(), nil
		case c == '[' && j+1 < len(pat) && (pat[j+1] == ':' || pat[j+1] == '=' || pat[j+1] == '.'):
			end := strings.Index(pat[j+2:], string(pat[j+1])+"]")
			if end < 0 {
				return 0, "", fmt.Errorf("unmatched [")
			}
			item := pat[j : j+2+end+2]
			if pat[j+1] == ':' {
				b.WriteString(item)
			} else {
				b.WriteString(regexp.QuoteMeta(item[2 : len(item)-2]))
			}
			j += 2 + end + 1
		case c == '\\' || c == '[' || c == ']':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
		first = false
	}
	return 0, "", fmt.Errorf("unmatched [, [^, [:, [., or [=")
}
