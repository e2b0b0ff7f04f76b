//go:build !toolboxlite

package cmds

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

type sedAddr struct {
	kind  byte // 'n' line, '$' last, '/' regex, '~' first~step, '+' relative end
	n, st int
	re    *regexp.Regexp
}

type sedCmd struct {
	a1, a2  *sedAddr
	negate  bool
	name    byte
	re      *regexp.Regexp
	repl    string
	global  bool
	nth     int
	print   bool
	text    string
	label   string
	jump    int // '{': index after the matching '}'; b/t/T: target
	from    string
	to      string
	active  bool
	rangeTo int
}

type sedProg struct {
	cmds   []*sedCmd
	ere    bool
	lastRE *regexp.Regexp
}

type sedParser struct {
	s   string
	i   int
	ere bool
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }
func (p *sedParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}
func (p *sedParser) skipWS() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// delimited reads up to the unescaped delimiter d; "\d" becomes d, "\n" a newline.
func (p *sedParser) delimited(d byte, isRegex bool) (string, error) {
	var b strings.Builder
	inBracket := false
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case isRegex && c == '[' && !inBracket:
			inBracket = true
			b.WriteByte(c)
			p.i++
			if p.peek() == '^' {
				b.WriteByte('^')
				p.i++
			}
			if p.peek() == ']' {
				b.WriteByte(']')
				p.i++
			}
			continue
		case inBracket && c == ']':
			inBracket = false
		case inBracket:
		case c == '\\' && p.i+1 < len(p.s):
			n := p.s[p.i+1]
			p.i += 2
			switch {
			case n == d:
				b.WriteByte(d)
			case n == 'n' && isRegex:
				b.WriteString(`\n`)
			case n == 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			continue
		case c == d:
			p.i++
			return b.String(), nil
		}
		b.WriteByte(c)
		p.i++
	}
	return "", fmt.Errorf("unterminated `s' command")
}

func (p *sedParser) regex(src string, icase bool) (*regexp.Regexp, error) {
	if src == "" {
		return nil, nil // reuse the last regex
	}
	return compileRegex(src, p.ere, icase)
}

func (p *sedParser) addr() (*sedAddr, error) {
	c := p.peek()
	switch {
	case c >= '0' && c <= '9':
		j := p.i
		for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		n, _ := strconv.Atoi(p.s[j:p.i])
		if p.peek() == '~' {
			p.i++
			k := p.i
			for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
				p.i++
			}
			st, _ := strconv.Atoi(p.s[k:p.i])
			return &sedAddr{kind: '~', n: n, st: st}, nil
		}
		return &sedAddr{kind: 'n', n: n}, nil
	case c == '$':
		p.i++
		return &sedAddr{kind: '$'}, nil
	case c == '/' || c == '\\':
		d := byte('/')
		if c == '\\' {
			p.i++
			d = p.peek()
		}
		p.i++
		src, err := p.delimited(d, true)
		if err != nil {
			return nil, fmt.Errorf("unterminated address regex")
		}
		icase := false
		if p.peek() == 'I' {
			icase = true
			p.i++
		}
		re, err := p.regex(src, icase)
		if err != nil {
			return nil, err
		}
		return &sedAddr{kind: '/', re: re}, nil
	case c == '+' && true:
		p.i++
		j := p.i
		for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		n, _ := strconv.Atoi(p.s[j:p.i])
		return &sedAddr{kind: '+', n: n}, nil
	}
	return nil, nil
}

// text reads the argument of a, i, c: "a\<newline>text", "a\text" or GNU's "a text".
func (p *sedParser) text() string {
	p.skipWS()
	if p.peek() == '\\' {
		p.i++
		if p.peek() == '\n' {
			p.i++
		}
	}
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.i]
		if c == '\\' && p.i+1 < len(p.s) {
			b.WriteByte(p.s[p.i+1])
			p.i += 2
			continue
		}
		if c == '\n' {
			break
		}
		b.WriteByte(c)
		p.i++
	}
	return b.String()
}

func (p *sedParser) label() string {
	p.skipWS()
	j := p.i
	for !p.eof() && p.s[p.i] != '\n' && p.s[p.i] != ';' {
		p.i++
	}
	return strings.TrimSpace(p.s[j:p.i])
}

func parseSed(script string, ere bool) (*sedProg, error) {
	p := &sedParser{s: script, ere: ere}
	prog := &sedProg{ere: ere}
	var open []int
	for {
		for !p.eof() && strings.IndexByte(" \t\n;", p.peek()) >= 0 {
			p.i++
		}
		if p.eof() {
			break
		}
		if p.peek() == '#' {
			for !p.eof() && p.peek() != '\n' {
				p.i++
			}
			continue
		}
		cmd := &sedCmd{}
		var err error
		if cmd.a1, err = p.addr(); err != nil {
			return nil, err
		}
		if cmd.a1 != nil && p.peek() == ',' {
			p.i++
			if cmd.a2, err = p.addr(); err != nil || cmd.a2 == nil {
				return nil, fmt.Errorf("unexpected `,'")
			}
		}
		p.skipWS()
		for p.peek() == '!' {
			cmd.negate = true
			p.i++
			p.skipWS()
		}
		if p.eof() {
			return nil, fmt.Errorf("missing command")
		}
		cmd.name = p.s[p.i]
		p.i++
		switch cmd.name {
		case '{':
			open = append(open, len(prog.cmds))
		case '}':
			if len(open) == 0 {
				return nil, fmt.Errorf("unexpected `}'")
			}
			prog.cmds[open[len(open)-1]].jump = len(prog.cmds) + 1
			open = open[:len(open)-1]
		case 's':
			d := p.peek()
			p.i++
			src, err := p.delimited(d, true)
			if err != nil {
				return nil, err
			}
			if cmd.repl, err = p.delimited(d, false); err != nil {
				return nil, err
			}
			icase := false
			for !p.eof() {
				c := p.peek()
				switch {
				case c == 'g':
					cmd.global = true
				case c == 'p':
					cmd.print = true
				case c == 'i' || c == 'I':
					icase = true
				case c >= '0' && c <= '9':
					j := p.i
					for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
						p.i++
					}
					cmd.nth, _ = strconv.Atoi(p.s[j:p.i])
					continue
				case c == 'm' || c == 'M' || c == 'e':
				default:
					goto flagsDone
				}
				p.i++
			}
		flagsDone:
			if cmd.re, err = p.regex(src, icase); err != nil {
				return nil, err
			}
		case 'y':
			d := p.peek()
			p.i++
			from, err := p.delimited(d, false)
			if err != nil {
				return nil, err
			}
			to, err := p.delimited(d, false)
			if err != nil {
				return nil, err
			}
			if len([]rune(from)) != len([]rune(to)) {
				return nil, fmt.Errorf("strings for `y' command are different lengths")
			}
			cmd.from, cmd.to = from, to
		case 'a', 'i', 'c':
			cmd.text = p.text()
		case 'b', 't', 'T', ':':
			cmd.label = p.label()
			if cmd.name == ':' && cmd.label == "" {
				return nil, fmt.Errorf("\":\" lacks a label")
			}
		case 'd', 'D', 'p', 'P', 'n', 'N', 'g', 'G', 'h', 'H', 'x', '=', 'q', 'Q', 'l', 'z':
			if cmd.name == 'q' || cmd.name == 'Q' {
				p.skipWS()
				j := p.i
				for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
					p.i++
				}
				cmd.nth, _ = strconv.Atoi(p.s[j:p.i])
			}
		default:
			return nil, fmt.Errorf("unknown command: `%c'", cmd.name)
		}
		prog.cmds = append(prog.cmds, cmd)
	}
	if len(open) > 0 {
		return nil, fmt.Errorf("unmatched `{'")
	}
	labels := map[string]int{}
	for i, c := range prog.cmds {
		if c.name == ':' {
			labels[c.label] = i
		}
	}
	for _, c := range prog.cmds {
		if c.name == 'b' || c.name == 't' || c.name == 'T' {
			if c.label == "" {
				c.jump = len(prog.cmds)
			} else if j, ok := labels[c.label]; ok {
				c.jump = j
			} else {
				return nil, fmt.Errorf("can't find label for jump to `%s'", c.label)
			}
		}
	}
	return prog, nil
}

type sedRun struct {
	prog   *sedProg
	lines  []string
	idx    int // next line to read
	lineNo int
	out    *strings.Builder
	hold   string
	quiet  bool
	subst  bool
	append []string
	lastRE *regexp.Regexp
}

func (r *sedRun) re(re *regexp.Regexp) *regexp.Regexp {
	if re == nil {
		return r.lastRE
	}
	r.lastRE = re
	return re
}

func (r *sedRun) isLast() bool { return r.idx >= len(r.lines) }

func (r *sedRun) matchAddr(a *sedAddr, ps string) bool {
	switch a.kind {
	case 'n':
		return r.lineNo == a.n
	case '$':
		return r.isLast()
	case '/':
		re := r.re(a.re)
		return re != nil && re.MatchString(ps)
	case '~':
		if a.st <= 0 {
			return r.lineNo == a.n
		}
		return r.lineNo >= a.n && (r.lineNo-a.n)%a.st == 0
	}
	return false
}

func (r *sedRun) selected(c *sedCmd, ps string) bool {
	if c.a1 == nil {
		return true
	}
	if c.a2 == nil {
		return r.matchAddr(c.a1, ps) != c.negate
	}
	if c.active {
		end := false
		switch c.a2.kind {
		case 'n':
			end = r.lineNo >= c.a2.n
			if r.lineNo > c.a2.n {
				c.active = false
				return c.negate != r.matchStart(c, ps)
			}
		case '+':
			end = r.lineNo >= c.rangeTo
		default:
			end = r.matchAddr(c.a2, ps)
		}
		if end {
			c.active = false
		}
		return !c.negate
	}
	return r.matchStart(c, ps) != c.negate
}

func (r *sedRun) matchStart(c *sedCmd, ps string) bool {
	if !r.matchAddr(c.a1, ps) {
		return false
	}
	c.active = true
	switch c.a2.kind {
	case 'n':
		if c.a2.n <= r.lineNo {
			c.active = false
		}
	case '+':
		c.rangeTo = r.lineNo + c.a2.n
		if c.a2.n == 0 {
			c.active = false
		}
	case '$':
		if r.isLast() {
			c.active = false
		}
	}
	return true
}

// substitute applies s///; it reports whether a replacement happened.
func (r *sedRun) substitute(c *sedCmd, ps string) (string, bool) {
	re := r.re(c.re)
	if re == nil {
		return ps, false
	}
	matches := re.FindAllStringSubmatchIndex(ps, -1)
	if len(matches) == 0 {
		return ps, false
	}
	var b strings.Builder
	last, done := 0, false
	for i, m := range matches {
		n := i + 1
		if c.nth > 0 && n < c.nth || done {
			continue
		}
		if c.nth > 0 && n > c.nth && !c.global {
			break
		}
		b.WriteString(ps[last:m[0]])
		b.WriteString(expandRepl(c.repl, ps, m))
		last = m[1]
		if !c.global {
			done = true
		}
	}
	if last == 0 && b.Len() == 0 && !done && c.nth > len(matches) {
		return ps, false
	}
	b.WriteString(ps[last:])
	return b.String(), true
}

func expandRepl(repl, s string, m []int) string {
	var b strings.Builder
	group := func(g int) {
		if 2*g+1 < len(m) && m[2*g] >= 0 {
			b.WriteString(s[m[2*g]:m[2*g+1]])
		}
	}
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '&':
			group(0)
		case c == '\\' && i+1 < len(repl):
			i++
			d := repl[i]
			switch {
			case d >= '0' && d <= '9':
				group(int(d - '0'))
			case d == 'n':
				b.WriteByte('\n')
			case d == 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(d)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// run executes the program over all lines; it returns the exit status from q/Q.
func (r *sedRun) run() (int, bool) {
	cmds := r.prog.cmds
	for !r.isLast() {
		ps := r.lines[r.idx]
		r.idx++
		r.lineNo++
		r.subst = false
	restart:
		autoprint := !r.quiet
		for pc := 0; pc < len(cmds); pc++ {
			c := cmds[pc]
			if c.name == '}' || c.name == ':' {
				continue
			}
			if !r.selected(c, ps) {
				if c.name == '{' {
					pc = c.jump - 1
				}
				continue
			}
			switch c.name {
			case '{':
			case 's':
				var ok bool
				if ps, ok = r.substitute(c, ps); ok {
					r.subst = true
					if c.print {
						r.out.WriteString(ps + "\n")
					}
				}
			case 'y':
				from, to := []rune(c.from), []rune(c.to)
				ps = strings.Map(func(x rune) rune {
					for i, f := range from {
						if f == x {
							return to[i]
						}
					}
					return x
				}, ps)
			case 'p':
				r.out.WriteString(ps + "\n")
			case 'P':
				first, _, _ := strings.Cut(ps, "\n")
				r.out.WriteString(first + "\n")
			case 'd':
				goto endCycleNoPrint
			case 'D':
				if i := strings.IndexByte(ps, '\n'); i >= 0 {
					ps = ps[i+1:]
					r.flushAppend()
					goto restart
				}
				goto endCycleNoPrint
			case 'n':
				if r.isLast() {
					goto endCycle
				}
				if !r.quiet {
					r.out.WriteString(ps + "\n")
				}
				r.flushAppend()
				ps = r.lines[r.idx]
				r.idx++
				r.lineNo++
			case 'N':
				if r.isLast() {
					goto endCycle
				}
				ps += "\n" + r.lines[r.idx]
				r.idx++
				r.lineNo++
			case 'g':
				ps = r.hold
			case 'G':
				ps += "\n" + r.hold
			case 'h':
				r.hold = ps
			case 'H':
				r.hold += "\n" + ps
			case 'x':
				ps, r.hold = r.hold, ps
			case 'z':
				ps = ""
			case '=':
				fmt.Fprintf(r.out, "%d\n", r.lineNo)
			case 'l':
				r.out.WriteString(strconv.Quote(ps) + "$\n")
			case 'a':
				r.append = append(r.append, c.text)
			case 'i':
				r.out.WriteString(c.text + "\n")
			case 'c':
				if c.a2 == nil || !c.active {
					r.out.WriteString(c.text + "\n")
				}
				goto endCycleNoPrint
			case 'b':
				pc = c.jump - 1
			case 't':
				if r.subst {
					r.subst = false
					pc = c.jump - 1
				}
			case 'T':
				if !r.subst {
					pc = c.jump - 1
				} else {
					r.subst = false
				}
			case 'q':
				if autoprint {
					r.out.WriteString(ps + "\n")
				}
				r.flushAppend()
				return c.nth, true
			case 'Q':
				return c.nth, true
			}
		}
	endCycle:
		if autoprint {
			r.out.WriteString(ps + "\n")
		}
	endCycleNoPrint:
		r.flushAppend()
	}
	return 0, false
}

func (r *sedRun) flushAppend() {
	for _, t := range r.append {
		r.out.WriteString(t + "\n")
	}
	r.append = r.append[:0]
}

func sed(e *Env, args []string) int {
	fl := newFlags("sed", "nErsuz", "ef")
	fl.optional = "i"
	fl.longs["quiet"] = 'n'
	fl.longs["silent"] = 'n'
	fl.longs["regexp-extended"] = 'E'
	fl.longs["in-place"] = 'i'
	fl.longs["posix"] = 'p'
	fl.longs["separate"] = 's'
	fl.longs["unbuffered"] = 'u'
	fl.longs["null-data"] = 'z'
	fl.longVals["expression"] = 'e'
	fl.longVals["file"] = 'f'
	files, err := fl.parse(args)
	if err != nil {
		e.errf("sed", "%v", err)
		return 1
	}
	quiet, ere, inPlace := fl.has('n'), fl.has('E') || fl.has('r'), fl.has('i')
	var scripts []string
	for _, o := range fl.order {
		switch o.c {
		case 'e':
			scripts = append(scripts, o.vals...)
		case 'f':
			data, err := e.ReadFile(o.vals[0])
			if err != nil {
				e.errf("sed", "couldn't open file %s: %v", o.vals[0], err)
				return 1
			}
			scripts = append(scripts, string(data))
		}
	}
	if len(scripts) == 0 {
		if len(files) == 0 {
			e.errf("sed", "no script specified")
			return 1
		}
		scripts, files = files[:1], files[1:]
	}
	prog, err := parseSed(strings.Join(scripts, "\n"), ere)
	if err != nil {
		e.errf("sed", "-e expression #1: %v", err)
		return 1
	}
	if inPlace {
		if len(files) == 0 {
			e.errf("sed", "no input files")
			return 1
		}
		status := 0
		for _, f := range files {
			data, err := e.ReadFile(f)
			if err != nil {
				e.errf("sed", "can't read %s: %v", f, err)
				status = 2
				continue
			}
			out, _, _ := runSed(prog, quiet, string(data))
			if err := os.WriteFile(e.Path(f), []byte(out), 0o644); err != nil {
				e.errf("sed", "couldn't edit %s: %v", f, cleanErr(err))
				status = 4
			}
			prog, _ = parseSed(strings.Join(scripts, "\n"), ere)
		}
		return status
	}
	var all strings.Builder
	lastNoNL := false
	status := e.inputs("sed", files, func(_ string, r io.Reader) error {
		data, err := io.ReadAll(r)
		all.Write(data)
		lastNoNL = len(data) > 0 && data[len(data)-1] != '\n'
		if lastNoNL {
			all.WriteByte('\n')
		}
		return err
	})
	if status != 0 {
		status = 2
	}
	input := all.String()
	if lastNoNL {
		input = input[:len(input)-1]
	}
	out, q, quit := runSed(prog, quiet, input)
	if quit {
		status = q
	}
	if _, err := io.WriteString(e.Stdout, out); err != nil {
		return writeStatus(err, 4)
	}
	return status
}

func runSed(prog *sedProg, quiet bool, input string) (string, int, bool) {
	noNL := input != "" && !strings.HasSuffix(input, "\n")
	var out strings.Builder
	r := &sedRun{prog: prog, lines: splitLines(input), out: &out, quiet: quiet}
	q, quit := r.run()
	s := out.String()
	if noNL && !quit {
		s = strings.TrimSuffix(s, "\n")
	}
	return s, q, quit
}
