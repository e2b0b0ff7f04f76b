package cmds

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
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
