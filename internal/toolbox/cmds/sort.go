package cmds

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

type sortKey struct {
	f1, c1, f2, c2         int // 1-based; f2 == 0: to end of line; c2 == 0: end of field
	numeric, reverse, fold bool
	blanks, general        bool
	hasOpts                bool
}

func parseKeyOpts(s string, k *sortKey) string {
	for len(s) > 0 && strings.IndexByte("nrfbgMhV", s[len(s)-1]) >= 0 {
		k.hasOpts = true
		switch s[len(s)-1] {
		case 'n', 'h':
			k.numeric = true
		case 'g':
			k.general = true
		case 'r':
			k.reverse = true
		case 'f':
			k.fold = true
		case 'b':
			k.blanks = true
		}
		s = s[:len(s)-1]
	}
	return s
}

func parseKey(spec string) (sortKey, error) {
	var k sortKey
	start, end, _ := strings.Cut(spec, ",")
	start = parseKeyOpts(start, &k)
	f, c, _ := strings.Cut(start, ".")
	var err error
	if k.f1, err = strconv.Atoi(f); err != nil || k.f1 < 1 {
		return k, fmt.Errorf("invalid number at field start: invalid count at start of '%s'", spec)
	}
	if c != "" {
		if k.c1, err = strconv.Atoi(c); err != nil {
			return k, fmt.Errorf("invalid key %q", spec)
		}
	}
	if end != "" {
		end = parseKeyOpts(end, &k)
		f, c, _ := strings.Cut(end, ".")
		if k.f2, err = strconv.Atoi(f); err != nil {
			return k, fmt.Errorf("invalid key %q", spec)
		}
		if c != "" {
			k.c2, _ = strconv.Atoi(c)
		}
	}
	return k, nil
}

// fieldSpans returns the [start,end) byte offsets of each field of line.
func fieldSpans(line string, sep string) [][2]int {
	var spans [][2]int
	if sep != "" {
		start := 0
		for {
			i := strings.Index(line[start:], sep)
			if i < 0 {
				spans = append(spans, [2]int{start, len(line)})
				return spans
			}
			spans = append(spans, [2]int{start, start + i})
			start += i + len(sep)
		}
	}
	// Blank-separated: a field is its leading blanks plus the non-blanks after them.
	i := 0
	for i < len(line) {
		start := i
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			i++
		}
		spans = append(spans, [2]int{start, i})
	}
	return spans
}

func (k sortKey) extract(line, sep string, globalBlanks bool) string {
	spans := fieldSpans(line, sep)
	if k.f1 > len(spans) {
		return ""
	}
	s := spans[k.f1-1][0]
	if k.blanks || globalBlanks {
		for s < len(line) && (line[s] == ' ' || line[s] == '\t') {
			s++
		}
	}
	if k.c1 > 0 {
		s = min(s+k.c1-1, len(line))
	}
	e := len(line)
	if k.f2 > 0 {
		if k.f2 <= len(spans) {
			e = spans[k.f2-1][1]
			if k.c2 > 0 {
				fs := spans[k.f2-1][0]
				if sep == "" || k.blanks {
					for fs < len(line) && (line[fs] == ' ' || line[fs] == '\t') {
						fs++
					}
				}
				e = min(fs+k.c2, len(line))
			}
		}
	}
	if e < s {
		return ""
	}
	return line[s:e]
}

func numPrefix(s string) float64 {
	s = strings.TrimLeft(s, " \t")
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.') {
		end++
	}
	v, err := strconv.ParseFloat(s[:end], 64)
	if err != nil {
		for end > 0 {
			end--
			if v, err = strconv.ParseFloat(s[:end], 64); err == nil {
				return v
			}
		}
		return 0
	}
	return v
}

func compareKey(a, b string, numeric, fold bool) int {
	if numeric {
		x, y := numPrefix(a), numPrefix(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	if fold {
		a, b = strings.ToUpper(a), strings.ToUpper(b)
	}
	return strings.Compare(a, b)
}

func sortCmd(e *Env, args []string) int {
	fl := newFlags("sort", "nrufbsgcmhVdzM", "kto")
	fl.longs["numeric-sort"] = 'n'
	fl.longs["reverse"] = 'r'
	fl.longs["unique"] = 'u'
	fl.longs["ignore-case"] = 'f'
	fl.longs["stable"] = 's'
	fl.longVals["key"] = 'k'
	fl.longVals["field-separator"] = 't'
	fl.longVals["output"] = 'o'
	files, err := fl.parse(args)
	if err != nil {
		e.errf("sort", "%v", err)
		return 2
	}
	var keys []sortKey
	for _, ks := range fl.vals['k'] {
		k, err := parseKey(ks)
		if err != nil {
			e.errf("sort", "%v", err)
			return 2
		}
		keys = append(keys, k)
	}
	sep := fl.val('t')
	numeric := fl.has('n') || fl.has('g') || fl.has('h')
	var lines []string
	st := e.inputs("sort", files, func(_ string, r io.Reader) error {
		data, err := io.ReadAll(r)
		lines = append(lines, splitLines(string(data))...)
		return err
	})
	if st != 0 {
		return 2
	}
	cmpKeys := func(a, b string) int {
		if len(keys) == 0 {
			x, y := a, b
			if fl.has('b') {
				x, y = strings.TrimLeft(x, " \t"), strings.TrimLeft(y, " \t")
			}
			c := compareKey(x, y, numeric, fl.has('f'))
			if fl.has('r') {
				c = -c
			}
			return c
		}
		for _, k := range keys {
			n, f, rev := k.numeric || k.general, k.fold, k.reverse
			if !k.hasOpts {
				n, f, rev = numeric, fl.has('f'), fl.has('r')
			}
			c := compareKey(k.extract(a, sep, fl.has('b')), k.extract(b, sep, fl.has('b')), n, f)
			if rev {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	}
	if fl.has('c') {
		for i := 1; i < len(lines); i++ {
			c := cmpKeys(lines[i-1], lines[i])
			if c > 0 || c == 0 && fl.has('u') {
				fmt.Fprintf(e.Stderr, "sort: -:%d: disorder: %s\n", i+1, lines[i])
				return 1
			}
		}
		return 0
	}
	less := func(i, j int) bool {
		c := cmpKeys(lines[i], lines[j])
		if c == 0 && !fl.has('s') && !fl.has('u') {
			c = strings.Compare(lines[i], lines[j])
			if fl.has('r') {
				c = -c
			}
		}
		return c < 0
	}
	sort.SliceStable(lines, less)
	if fl.has('u') {
		var out []string
		for i, l := range lines {
			if i == 0 || cmpKeys(out[len(out)-1], l) != 0 {
				out = append(out, l)
			}
		}
		lines = out
	}
	w := e.Stdout
	if fl.has('o') {
		f, err := e.Create(fl.val('o'), false)
		if err != nil {
			e.errf("sort", "%s: %v", fl.val('o'), err)
			return 2
		}
		defer f.Close()
		w = f
	}
	o := outBuf{newBufWriter(w)}
	for _, l := range lines {
		if _, err := o.WriteString(l + "\n"); err != nil {
			break
		}
	}
	return o.done(0)
}

func uniq(e *Env, args []string) int {
	fl := newFlags("uniq", "cdui", "fs")
	files, err := fl.parse(args)
	if err != nil {
		e.errf("uniq", "%v", err)
		return 1
	}
	var data []byte
	in := "-"
	if len(files) > 0 {
		in = files[0]
	}
	data, err = e.ReadFile(in)
	if err != nil {
		e.errf("uniq", "%s: %v", in, err)
		return 1
	}
	skipF, skipC := 0, 0
	fmt.Sscan(fl.val('f'), &skipF)
	fmt.Sscan(fl.val('s'), &skipC)
	key := func(l string) string {
		for i := 0; i < skipF; i++ {
			l = strings.TrimLeft(l, " \t")
			j := strings.IndexAny(l, " \t")
			if j < 0 {
				l = ""
				break
			}
			l = l[j:]
		}
		if skipC < len(l) {
			l = l[skipC:]
		} else {
			l = ""
		}
		if fl.has('i') {
			l = strings.ToLower(l)
		}
		return l
	}
	o := e.out()
	if len(files) > 1 {
		f, err := e.Create(files[1], false)
		if err != nil {
			e.errf("uniq", "%s: %v", files[1], err)
			return 1
		}
		defer f.Close()
		o = outBuf{newBufWriter(f)}
	}
	lines := splitLines(string(data))
	emit := func(l string, n int) {
		if fl.has('d') && n < 2 || fl.has('u') && n > 1 {
			return
		}
		if fl.has('c') {
			fmt.Fprintf(o, "%7d %s\n", n, l)
		} else {
			o.WriteString(l + "\n")
		}
	}
	for i := 0; i < len(lines); {
		j := i + 1
		for j < len(lines) && key(lines[j]) == key(lines[i]) {
			j++
		}
		emit(lines[i], j-i)
		i = j
	}
	return o.done(0)
}

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
