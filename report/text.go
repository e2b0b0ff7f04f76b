package report

import (
	"strings"
	"unicode/utf8"
)

// StripControls removes terminal control sequences (CSI, OSC, DCS and other ESC sequences)
// and every other control character but newline and tab from s, and replaces invalid UTF-8.
// What is left can be printed to a terminal or shown in a page without driving either: use
// it on anything an agent may have written.
func StripControls(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == 0x9b: // C1 CSI
			i += size + csiLen(s[i+size:])
			continue
		case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // C1 OSC, DCS, SOS, PM, APC
			i += size + stringLen(s[i+size:])
			continue
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
		case r == 0x2028 || r == 0x2029 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069:
			// Line separators and bidi overrides reorder or split what a reader sees.
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// escapeLen is the length of the escape sequence at the start of s (s[0] is ESC).
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		return 2 + csiLen(s[2:])
	case ']', 'P', 'X', '^', '_':
		return 2 + stringLen(s[2:])
	}
	n := 1
	// nF sequences: intermediate bytes 0x20-0x2f, then one final byte.
	for n < len(s) && s[n] >= 0x20 && s[n] <= 0x2f {
		n++
	}
	if n < len(s) && s[n] >= 0x30 && s[n] <= 0x7e {
		n++
	}
	return n
}

// csiLen is the length of a CSI sequence's parameters and final byte.
func csiLen(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x40 && s[i] <= 0x7e {
			return i + 1
		}
		if s[i] < 0x20 || s[i] > 0x7e {
			return i
		}
	}
	return len(s)
}

// stringLen is the length of a control string (OSC, DCS...) up to and including its
// terminator: BEL, ESC \ or C1 ST; an unterminated one runs to the end of s.
func stringLen(s string) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c:
			return i + 2
		}
	}
	return len(s)
}
