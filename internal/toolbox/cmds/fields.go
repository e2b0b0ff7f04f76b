package cmds

// cut and tr: the commands that pick and map the fields and characters of a line.

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// parseList parses cut's LIST into a membership test over 1-based positions.
func parseList(s string) (func(int) bool, error) {
	type rng struct{ lo, hi int }
	var rs []rng
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		r := rng{1, 1 << 30}
		var err error
		if lo != "" {
			if r.lo, err = strconv.Atoi(lo); err != nil || r.lo < 1 {
				return nil, fmt.Errorf("invalid field value '%s'", part)
			}
		}
		switch {
		case !isRange:
			r.hi = r.lo
		case hi != "":
			if r.hi, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("invalid field range '%s'", part)
			}
		}
		if lo == "" && !isRange {
			return nil, fmt.Errorf("fields are numbered from 1")
		}
		rs = append(rs, r)
	}
	return func(i int) bool {
		for _, r := range rs {
			if i >= r.lo && i <= r.hi {
				return true
			}
		}
		return false
	}, nil
}

func cut(e *Env, args []string) int {
	fl := newFlags("cut", "sn", "dfcb")
	fl.longs["complement"] = 'C'
	fl.longVals["output-delimiter"] = 'O'
	fl.longVals["delimiter"] = 'd'
	fl.longVals["fields"] = 'f'
	files, err := fl.parse(args)
	if err != nil {
		e.errf("cut", "%v", err)
		return 1
	}
	var listSpec string
	mode := byte(0)
	for _, c := range []byte("fcb") {
		if fl.has(c) {
			listSpec, mode = fl.val(c), c
		}
	}
	if mode == 0 {
		e.errf("cut", "you must specify a list of bytes, characters, or fields")
		return 1
	}
	in, err := parseList(listSpec)
	if err != nil {
		e.errf("cut", "%v", err)
		return 1
	}
	sel := in
	if fl.has('C') {
		sel = func(i int) bool { return !in(i) }
	}
	delim := "\t"
	if fl.has('d') {
		delim = fl.val('d')
		if len(delim) != 1 {
			e.errf("cut", "the delimiter must be a single character")
			return 1
		}
	}
	outDelim := delim
	if fl.has('O') {
		outDelim = fl.val('O')
	}
	o := e.out()
	st := e.inputs("cut", files, func(_ string, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		for _, line := range splitLines(string(data)) {
			var out string
			if mode == 'f' {
				if !strings.Contains(line, delim) {
					if !fl.has('s') {
						o.WriteString(line + "\n")
					}
					continue
				}
				var parts []string
				for i, f := range strings.Split(line, delim) {
					if sel(i + 1) {
						parts = append(parts, f)
					}
				}
				out = strings.Join(parts, outDelim)
			} else {
				var b strings.Builder
				units := []string{}
				if mode == 'c' {
					for _, r := range line {
						units = append(units, string(r))
					}
				} else {
					for i := 0; i < len(line); i++ {
						units = append(units, line[i:i+1])
					}
				}
				for i, u := range units {
					if sel(i + 1) {
						b.WriteString(u)
					}
				}
				out = b.String()
			}
			if _, err := o.WriteString(out + "\n"); err != nil {
				return err
			}
		}
		return nil
	})
	return o.done(st)
}

// trSet expands a tr SET (ranges, classes, escapes) into bytes.
func trSet(s string) []byte {
	var out []byte
	unesc := func(i int) (byte, int) {
		if s[i] != '\\' || i+1 >= len(s) {
			return s[i], i + 1
		}
		switch s[i+1] {
		case 'n':
			return '\n', i + 2
		case 't':
			return '\t', i + 2
		case 'r':
			return '\r', i + 2
		case '\\':
			return '\\', i + 2
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, j := 0, i+1
			for ; j < len(s) && j < i+4 && s[j] >= '0' && s[j] <= '7'; j++ {
				v = v*8 + int(s[j]-'0')
			}
			return byte(v), j
		}
		return s[i+1], i + 2
	}
	classes := map[string]func(rune) bool{
		"alpha": unicode.IsLetter, "digit": unicode.IsDigit, "upper": unicode.IsUpper,
		"lower": unicode.IsLower, "space": unicode.IsSpace, "punct": unicode.IsPunct,
		"alnum": func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) },
		"blank": func(r rune) bool { return r == ' ' || r == '\t' },
		"xdigit": func(r rune) bool {
			return unicode.IsDigit(r) || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'
		},
		"cntrl": unicode.IsControl, "print": unicode.IsPrint,
	}
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "[:") {
			if end := strings.Index(s[i:], ":]"); end > 0 {
				if fn, ok := classes[s[i+2:i+end]]; ok {
					for c := 0; c < 128; c++ {
						if fn(rune(c)) {
							out = append(out, byte(c))
						}
					}
					i += end + 2
					continue
				}
			}
		}
		c, j := unesc(i)
		if j < len(s)-1 && s[j] == '-' {
			hi, k := unesc(j + 1)
			for x := int(c); x <= int(hi); x++ {
				out = append(out, byte(x))
			}
			i = k
			continue
		}
		out = append(out, c)
		i = j
	}
	return out
}

func tr(e *Env, args []string) int {
	fl := newFlags("tr", "dscC", "")
	sets, err := fl.parse(args)
	if err != nil || len(sets) == 0 {
		e.errf("tr", "missing operand")
		return 1
	}
	set1 := trSet(sets[0])
	var in1 [256]bool
	for _, c := range set1 {
		in1[c] = true
	}
	if fl.has('c') || fl.has('C') {
		var comp []byte
		for c := 0; c < 256; c++ {
			if !in1[c] {
				comp = append(comp, byte(c))
			}
		}
		set1 = comp
		for c := range in1 {
			in1[c] = !in1[c]
		}
	}
	var mapping [256]int
	for i := range mapping {
		mapping[i] = -1
	}
	var squeeze [256]bool
	translate := !fl.has('d') && len(sets) > 1
	if translate {
		set2 := trSet(sets[1])
		if len(set2) == 0 {
			e.errf("tr", "when not truncating set1, string2 must be non-empty")
			return 1
		}
		for i, c := range set1 {
			d := set2[len(set2)-1]
			if i < len(set2) {
				d = set2[i]
			}
			mapping[c] = int(d)
		}
		for _, c := range set2 {
			squeeze[c] = true
		}
	} else if fl.has('s') {
		sq := set1
		if fl.has('d') && len(sets) > 1 {
			sq = trSet(sets[1])
		}
		for _, c := range sq {
			squeeze[c] = true
		}
	}
	data, err := io.ReadAll(e.Stdin)
	if err != nil {
		return 1
	}
	out := make([]byte, 0, len(data))
	last := -1
	for _, c := range data {
		if fl.has('d') && in1[c] {
			continue
		}
		if translate && mapping[c] >= 0 {
			c = byte(mapping[c])
		}
		if fl.has('s') && squeeze[c] && last == int(c) {
			continue
		}
		out = append(out, c)
		last = int(c)
	}
	if _, err := e.Stdout.Write(out); err != nil {
		return writeStatus(err, 1)
	}
	return 0
}
