//go:build !toolboxlite

package cmds

import (
	"fmt"
	"strconv"
	"strings"
)

// awk lexer and parser. The language is a subset of POSIX awk; see awk.go.

type tokKind int

const (
	tEOF tokKind = iota
	tNewline
	tNum
	tStr
	tRegex
	tName
	tFuncName // name immediately followed by '('
	tBuiltin
	tKeyword
	tPunct
)

type token struct {
	kind tokKind
	s    string
	n    float64
	line int
}

var awkKeywords = map[string]bool{
	"BEGIN": true, "END": true, "function": true, "func": true, "if": true, "else": true,
	"while": true, "for": true, "do": true, "break": true, "continue": true, "next": true,
	"exit": true, "return": true, "delete": true, "in": true, "print": true, "printf": true,
	"getline": true, "nextfile": true,
}

var awkBuiltins = map[string]bool{
	"length": true, "substr": true, "index": true, "split": true, "sub": true, "gsub": true,
	"match": true, "sprintf": true, "tolower": true, "toupper": true, "int": true,
	"sqrt": true, "exp": true, "log": true, "sin": true, "cos": true, "atan2": true,
	"rand": true, "srand": true, "system": true, "close": true, "fflush": true,
}

func lexAwk(src string) ([]token, error) {
	var toks []token
	line := 1
	lastSignificant := func() token {
		if len(toks) == 0 {
			return token{kind: tNewline}
		}
		return toks[len(toks)-1]
	}
	regexAllowed := func() bool {
		t := lastSignificant()
		switch t.kind {
		case tNum, tStr, tName, tRegex:
			return false
		case tBuiltin:
			return false
		case tPunct:
			return t.s != ")" && t.s != "]" && t.s != "$" && t.s != "++" && t.s != "--"
		case tKeyword:
			return true
		}
		return true
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
			line++
		case c == '\\' && i+2 < len(src) && src[i+1] == '\r' && src[i+2] == '\n':
			i += 3
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\n':
			toks = append(toks, token{kind: tNewline, line: line})
			line++
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			if c == '0' && i+1 < len(src) && (src[i+1] == 'x' || src[i+1] == 'X') {
				j += 2
				for j < len(src) && isHex(src[j]) {
					j++
				}
				v, _ := strconv.ParseInt(src[i+2:j], 16, 64)
				toks = append(toks, token{kind: tNum, n: float64(v), line: line})
				i = j
				continue
			}
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
				j++
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				k := j + 1
				if k < len(src) && (src[k] == '+' || src[k] == '-') {
					k++
				}
				if k < len(src) && src[k] >= '0' && src[k] <= '9' {
					j = k
					for j < len(src) && src[j] >= '0' && src[j] <= '9' {
						j++
					}
				}
			}
			v, err := strconv.ParseFloat(src[i:j], 64)
			if err != nil {
				return nil, fmt.Errorf("syntax error at source line %d: bad number %q", line, src[i:j])
			}
			toks = append(toks, token{kind: tNum, n: v, line: line})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			w := src[i:j]
			switch {
			case awkKeywords[w]:
				toks = append(toks, token{kind: tKeyword, s: w, line: line})
			case awkBuiltins[w]:
				toks = append(toks, token{kind: tBuiltin, s: w, line: line})
			case j < len(src) && src[j] == '(':
				toks = append(toks, token{kind: tFuncName, s: w, line: line})
			default:
				toks = append(toks, token{kind: tName, s: w, line: line})
			}
			i = j
		case c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\n' {
					return nil, fmt.Errorf("syntax error at source line %d: newline in string", line)
				}
				if src[j] == '\\' && j+1 < len(src) {
					j++
					switch d := src[j]; d {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case 'r':
						b.WriteByte('\r')
					case '\\':
						b.WriteByte('\\')
					case '"':
						b.WriteByte('"')
					case '/':
						b.WriteByte('/')
					case 'a':
						b.WriteByte('\a')
					case 'b':
						b.WriteByte('\b')
					case 'f':
						b.WriteByte('\f')
					case 'v':
						b.WriteByte('\v')
					case '\n':
						line++
					case '0', '1', '2', '3', '4', '5', '6', '7':
						v, k := 0, j
						for ; k < len(src) && k < j+3 && src[k] >= '0' && src[k] <= '7'; k++ {
							v = v*8 + int(src[k]-'0')
						}
						b.WriteByte(byte(v))
						j = k - 1
					default:
						b.WriteByte('\\')
						b.WriteByte(d)
					}
					continue
				}
				b.WriteByte(src[j])
			}
			if j >= len(src) {
				return nil, fmt.Errorf("syntax error at source line %d: unterminated string", line)
			}
			toks = append(toks, token{kind: tStr, s: b.String(), line: line})
			i = j + 1
		case c == '/' && regexAllowed():
			var b strings.Builder
			j := i + 1
			inBr := false
			for ; j < len(src); j++ {
				d := src[j]
				if d == '\n' {
					return nil, fmt.Errorf("syntax error at source line %d: newline in regex", line)
				}
				if d == '\\' && j+1 < len(src) {
					if src[j+1] == '/' {
						b.WriteByte('/')
					} else {
						b.WriteByte('\\')
						b.WriteByte(src[j+1])
					}
					j++
					continue
				}
				if d == '[' {
					inBr = true
				} else if d == ']' {
					inBr = false
				} else if d == '/' && !inBr {
					break
				}
				b.WriteByte(d)
			}
			if j >= len(src) {
				return nil, fmt.Errorf("syntax error at source line %d: unterminated regex", line)
			}
			toks = append(toks, token{kind: tRegex, s: b.String(), line: line})
			i = j + 1
		default:
			ops := []string{"+=", "-=", "*=", "/=", "%=", "^=", "**=", "==", "<=", ">=", "!=", "++", "--",
				"&&", "||", ">>", "!~", "**"}
			matched := ""
			for _, op := range ops {
				if strings.HasPrefix(src[i:], op) && len(op) > len(matched) {
					matched = op
				}
			}
			if matched == "" {
				if strings.IndexByte("{}()[];,+-*/%^!<>|?:~$=", c) < 0 {
					return nil, fmt.Errorf("syntax error at source line %d: unexpected character %q", line, c)
				}
				matched = string(c)
			}
			switch matched {
			case "**":
				matched = "^"
			case "**=":
				matched = "^="
			}
			toks = append(toks, token{kind: tPunct, s: matched, line: line})
			i += len(matched)
		}
	}
	toks = append(toks, token{kind: tEOF, line: line})
	return toks, nil
}

// AST

type aExpr interface{}

type (
	eNum   struct{ v float64 }
	eStr   struct{ v string }
	eRegex struct{ re string } // matches $0 when used as a value
	eVar   struct{ name string }
	eField struct{ idx aExpr }
	eIndex struct {
		name string
		idx  []aExpr
	}
	eAssign struct {
		op     string // "=", "+=", ...
		lv, rv aExpr
	}
	eCond   struct{ c, a, b aExpr }
	eBinary struct {
		op   string
		a, b aExpr
	}
	eUnary struct {
		op string
		a  aExpr
	}
	eIncr struct {
		op  string // "++" or "--"
		pre bool
		lv  aExpr
	}
	eIn struct {
		idx  []aExpr
		name string
	}
	eMatch struct {
		neg   bool
		a, re aExpr
	}
	eCall struct {
		name string
		args []aExpr
	}
	eUser struct {
		name string
		args []aExpr
	}
	eGroup   struct{ list []aExpr }
	eGetline struct {
		lv   aExpr
		file aExpr
	}
)

type aStmt interface{}

type (
	sExpr  struct{ e aExpr }
	sPrint struct {
		printf bool
		args   []aExpr
		redir  string // ">", ">>", "|" or ""
		dest   aExpr
	}
	sIf struct {
		c    aExpr
		a, b aStmt
	}
	sWhile struct {
		c    aExpr
		body aStmt
		do   bool
	}
	sFor struct {
		init, post aStmt
		c          aExpr
		body       aStmt
	}
	sForIn struct {
		v    string
		arr  string
		body aStmt
	}
	sBlock    struct{ list []aStmt }
	sNext     struct{}
	sNextFile struct{}
	sBreak    struct{}
	sContinue struct{}
	sExit     struct{ e aExpr }
	sReturn   struct{ e aExpr }
	sDelete   struct {
		name string
		idx  []aExpr
	}
)

type awkItem struct {
	kind      int // 0 pattern/action, 1 BEGIN, 2 END
	pat, pat2 aExpr
	isRange   bool
	inRange   bool
	body      *sBlock // nil: print $0
}

type awkFunc struct {
	name   string
	params []string
	body   *sBlock
}

type awkProg struct {
	items []*awkItem
	funcs map[string]*awkFunc
}

type awkParser struct {
	toks   []token
	pos    int
	noGT   int // >0: '>' is a print redirection, not a comparison
	noIn   int // >0: 'in' not an operator (for (x in a))
	funcs  map[string]*awkFunc
	params map[string]bool
}

type awkSyntaxError struct{ msg string }

func (p *awkParser) tok() token { return p.toks[p.pos] }
func (p *awkParser) next() token {
	t := p.toks[p.pos]
	if p.pos < len(p.toks)-1 {
		p.pos++
	}
	return t
}
func (p *awkParser) is(s string) bool {
	t := p.tok()
	return (t.kind == tPunct || t.kind == tKeyword) && t.s == s
}
func (p *awkParser) fail(format string, a ...any) {
	t := p.tok()
	near := t.s
	if t.kind == tNum {
		near = strconv.FormatFloat(t.n, 'g', -1, 64)
	}
	if t.kind == tNewline {
		near = "newline"
	}
	if t.kind == tEOF {
		near = "end of program"
	}
	panic(awkSyntaxError{fmt.Sprintf("syntax error at source line %d near %q: %s", t.line, near, fmt.Sprintf(format, a...))})
}
func (p *awkParser) expect(s string) {
	if !p.is(s) {
		p.fail("expected %q", s)
	}
	p.next()
}
func (p *awkParser) optNewlines() {
	for p.tok().kind == tNewline {
		p.next()
	}
}
func (p *awkParser) terminators() {
	for p.tok().kind == tNewline || p.is(";") {
		p.next()
	}
}

func parseAwk(src string) (prog *awkProg, err error) {
	toks, err := lexAwk(src)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(awkSyntaxError)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s", se.msg)
		}
	}()
	p := &awkParser{toks: toks, funcs: map[string]*awkFunc{}}
	prog = &awkProg{funcs: p.funcs}
	for {
		p.terminators()
		if p.tok().kind == tEOF {
			break
		}
		switch {
		case p.is("BEGIN"):
			p.next()
			p.optNewlines()
			prog.items = append(prog.items, &awkItem{kind: 1, body: p.block()})
		case p.is("END"):
			p.next()
			p.optNewlines()
			prog.items = append(prog.items, &awkItem{kind: 2, body: p.block()})
		case p.is("function") || p.is("func"):
			p.next()
			t := p.next()
			if t.kind != tFuncName && t.kind != tName {
				p.fail("expected function name")
			}
			f := &awkFunc{name: t.s}
			p.expect("(")
			p.params = map[string]bool{}
			for !p.is(")") {
				pt := p.next()
				if pt.kind != tName {
					p.fail("expected parameter name")
				}
				f.params = append(f.params, pt.s)
				p.params[pt.s] = true
				if p.is(",") {
					p.next()
					p.optNewlines()
				}
			}
			p.next()
			p.optNewlines()
			f.body = p.block()
			p.params = nil
			p.funcs[f.name] = f
		default:
			it := &awkItem{}
			if !p.is("{") {
				it.pat = p.expr()
				if p.is(",") {
					p.next()
					p.optNewlines()
					it.isRange = true
					it.pat2 = p.expr()
				}
			}
			if p.is("{") {
				it.body = p.block()
			}
			prog.items = append(prog.items, it)
		}
	}
	return prog, nil
}

func (p *awkParser) block() *sBlock {
	p.expect("{")
	b := &sBlock{}
	for {
		p.terminators()
		if p.is("}") {
			p.next()
			return b
		}
		if p.tok().kind == tEOF {
			p.fail("unexpected end of program, missing }")
		}
		b.list = append(b.list, p.stmt())
	}
}

// simpleEnd consumes a statement terminator: ';', newline, or nothing before '}'.
func (p *awkParser) simpleEnd() {
	switch {
	case p.is(";") || p.tok().kind == tNewline:
		p.next()
	case p.is("}") || p.tok().kind == tEOF:
	default:
		p.fail("unexpected token")
	}
}

func (p *awkParser) stmtBody() aStmt {
	p.optNewlines()
	if p.is(";") {
		p.next()
		return &sBlock{}
	}
	return p.stmt()
}

func (p *awkParser) stmt() aStmt {
	switch {
	case p.is("{"):
		return p.block()
	case p.is("if"):
		p.next()
		p.expect("(")
		c := p.expr()
		p.expect(")")
		s := &sIf{c: c, a: p.stmtBody()}
		save := p.pos
		p.terminators()
		if p.is("else") {
			p.next()
			s.b = p.stmtBody()
		} else {
			p.pos = save
		}
		return s
	case p.is("while"):
		p.next()
		p.expect("(")
		c := p.expr()
		p.expect(")")
		if p.is(";") {
			p.next()
			return &sWhile{c: c, body: &sBlock{}}
		}
		return &sWhile{c: c, body: p.stmtBody()}
	case p.is("do"):
		p.next()
		body := p.stmtBody()
		p.terminators()
		p.expect("while")
		p.expect("(")
		c := p.expr()
		p.expect(")")
		p.simpleEnd()
		return &sWhile{c: c, body: body, do: true}
	case p.is("for"):
		p.next()
		p.expect("(")
		if p.tok().kind == tName && p.toks[p.pos+1].kind == tKeyword && p.toks[p.pos+1].s == "in" {
			save := p.pos
			v := p.next().s
			p.next()
			if t := p.tok(); t.kind == tName && p.toks[p.pos+1].s == ")" {
				p.next()
				p.next()
				return &sForIn{v: v, arr: t.s, body: p.stmtBody()}
			}
			p.pos = save
		}
		f := &sFor{}
		if !p.is(";") {
			f.init = &sExpr{p.expr()}
		}
		p.expect(";")
		p.optNewlines()
		if !p.is(";") {
			f.c = p.expr()
		}
		p.expect(";")
		p.optNewlines()
		if !p.is(")") {
			f.post = &sExpr{p.expr()}
		}
		p.expect(")")
		if p.is(";") {
			p.next()
			f.body = &sBlock{}
			return f
		}
		f.body = p.stmtBody()
		return f
	case p.is(";"):
		p.next()
		return &sBlock{}
	}
	s := p.simpleStmt()
	p.simpleEnd()
	return s
}

func (p *awkParser) simpleStmt() aStmt {
	switch {
	case p.is("print") || p.is("printf"):
		s := &sPrint{printf: p.next().s == "printf"}
		p.noGT++
		if !p.is(";") && !p.is("}") && !p.is(">") && !p.is(">>") && !p.is("|") && p.tok().kind != tNewline && p.tok().kind != tEOF {
			s.args = p.exprList()
		}
		p.noGT--
		if len(s.args) == 1 {
			if g, ok := s.args[0].(*eGroup); ok {
				s.args = g.list
			}
		}
		if p.is(">") || p.is(">>") || p.is("|") {
			s.redir = p.next().s
			s.dest = p.concat()
		}
		if s.printf && len(s.args) == 0 {
			p.fail("printf: no format")
		}
		return s
	case p.is("next"):
		p.next()
		return &sNext{}
	case p.is("nextfile"):
		p.next()
		return &sNextFile{}
	case p.is("break"):
		p.next()
		return &sBreak{}
	case p.is("continue"):
		p.next()
		return &sContinue{}
	case p.is("exit"):
		p.next()
		s := &sExit{}
		if !p.is(";") && !p.is("}") && p.tok().kind != tNewline && p.tok().kind != tEOF {
			s.e = p.expr()
		}
		return s
	case p.is("return"):
		p.next()
		s := &sReturn{}
		if !p.is(";") && !p.is("}") && p.tok().kind != tNewline && p.tok().kind != tEOF {
			s.e = p.expr()
		}
		return s
	case p.is("delete"):
		p.next()
		t := p.next()
		if t.kind != tName {
			p.fail("expected array name")
		}
		s := &sDelete{name: t.s}
		if p.is("[") {
			p.next()
			s.idx = p.exprList()
			p.expect("]")
		}
		return s
	}
	return &sExpr{p.expr()}
}

func (p *awkParser) exprList() []aExpr {
	list := []aExpr{p.expr()}
	for p.is(",") {
		p.next()
		p.optNewlines()
		list = append(list, p.expr())
	}
	return list
}

func isLvalue(e aExpr) bool {
	switch e.(type) {
	case *eVar, *eField, *eIndex:
		return true
	}
	return false
}

func (p *awkParser) expr() aExpr {
	lhs := p.ternary()
	if t := p.tok(); t.kind == tPunct && isLvalue(lhs) {
		switch t.s {
		case "=", "+=", "-=", "*=", "/=", "%=", "^=":
			p.next()
			p.optNewlines()
			return &eAssign{op: t.s, lv: lhs, rv: p.expr()}
		}
	}
	return lhs
}

func (p *awkParser) ternary() aExpr {
	c := p.or()
	if p.is("?") {
		p.next()
		p.optNewlines()
		a := p.ternary()
		p.optNewlines()
		p.expect(":")
		p.optNewlines()
		b := p.ternary()
		return &eCond{c, a, b}
	}
	return c
}

func (p *awkParser) or() aExpr {
	a := p.and()
	for p.is("||") {
		p.next()
		p.optNewlines()
		a = &eBinary{"||", a, p.and()}
	}
	return a
}

func (p *awkParser) and() aExpr {
	a := p.in()
	for p.is("&&") {
		p.next()
		p.optNewlines()
		a = &eBinary{"&&", a, p.in()}
	}
	return a
}

func (p *awkParser) in() aExpr {
	a := p.match()
	for p.is("in") && p.noIn == 0 {
		p.next()
		t := p.next()
		if t.kind != tName {
			p.fail("expected array name after in")
		}
		idx := []aExpr{a}
		if g, ok := a.(*eGroup); ok {
			idx = g.list
		}
		a = &eIn{idx: idx, name: t.s}
	}
	return a
}

func (p *awkParser) match() aExpr {
	a := p.compare()
	for p.is("~") || p.is("!~") {
		neg := p.next().s == "!~"
		a = &eMatch{neg: neg, a: a, re: p.compare()}
	}
	return a
}

func (p *awkParser) compare() aExpr {
	a := p.concat()
	t := p.tok()
	if t.kind == tPunct {
		switch t.s {
		case "<", "<=", "==", "!=", ">=":
			p.next()
			return &eBinary{t.s, a, p.concat()}
		case ">":
			if p.noGT == 0 {
				p.next()
				return &eBinary{t.s, a, p.concat()}
			}
		}
	}
	return a
}

func (p *awkParser) startsOperand() bool {
	t := p.tok()
	switch t.kind {
	case tNum, tStr, tRegex, tName, tFuncName, tBuiltin:
		return true
	case tPunct:
		return t.s == "$" || t.s == "(" || t.s == "!" || t.s == "-" || t.s == "+" || t.s == "++" || t.s == "--"
	}
	return false
}

func (p *awkParser) concat() aExpr {
	a := p.additive()
	for p.startsOperand() && !p.is("-") && !p.is("+") && !p.is("!") {
		if p.is("in") {
			break
		}
		a = &eBinary{"concat", a, p.additive()}
	}
	return a
}

func (p *awkParser) additive() aExpr {
	a := p.mul()
	for p.is("+") || p.is("-") {
		op := p.next().s
		a = &eBinary{op, a, p.mul()}
	}
	return a
}

func (p *awkParser) mul() aExpr {
	a := p.unary()
	for p.is("*") || p.is("/") || p.is("%") {
		op := p.next().s
		a = &eBinary{op, a, p.unary()}
	}
	return a
}

func (p *awkParser) unary() aExpr {
	switch {
	case p.is("!"):
		p.next()
		return &eUnary{"!", p.unary()}
	case p.is("-"):
		p.next()
		return &eUnary{"-", p.unary()}
	case p.is("+"):
		p.next()
		return &eUnary{"+", p.unary()}
	}
	return p.power()
}

func (p *awkParser) power() aExpr {
	a := p.postfix()
	if p.is("^") {
		p.next()
		// right associative; the exponent may carry a unary minus
		var b aExpr
		if p.is("-") {
			p.next()
			b = &eUnary{"-", p.power()}
		} else {
			b = p.power()
		}
		return &eBinary{"^", a, b}
	}
	return a
}

func (p *awkParser) postfix() aExpr {
	if p.is("++") || p.is("--") {
		op := p.next().s
		lv := p.postfix()
		if !isLvalue(lv) {
			p.fail("%s applied to a non-variable", op)
		}
		return &eIncr{op: op, pre: true, lv: lv}
	}
	a := p.primary()
	if isLvalue(a) && (p.is("++") || p.is("--")) {
		return &eIncr{op: p.next().s, lv: a}
	}
	return a
}

func (p *awkParser) primary() aExpr {
	t := p.next()
	switch t.kind {
	case tNum:
		return &eNum{t.n}
	case tStr:
		return &eStr{t.s}
	case tRegex:
		return &eRegex{t.s}
	case tName:
		if p.is("[") {
			p.next()
			idx := p.exprList()
			p.expect("]")
			return &eIndex{name: t.s, idx: idx}
		}
		return &eVar{t.s}
	case tFuncName:
		p.expect("(")
		var args []aExpr
		p.noGT++
		saveGT := p.noGT
		p.noGT = 0
		if !p.is(")") {
			args = p.exprList()
		}
		p.noGT = saveGT - 1
		p.expect(")")
		return &eUser{name: t.s, args: args}
	case tBuiltin:
		var args []aExpr
		if p.is("(") {
			p.next()
			saveGT := p.noGT
			p.noGT = 0
			if !p.is(")") {
				args = p.exprList()
			}
			p.noGT = saveGT
			p.expect(")")
		} else if t.s != "length" {
			p.fail("%s needs arguments", t.s)
		}
		return &eCall{name: t.s, args: args}
	case tKeyword:
		if t.s == "getline" {
			g := &eGetline{}
			if p.tok().kind == tName || p.is("$") {
				g.lv = p.postfix()
			}
			if p.is("<") {
				p.next()
				g.file = p.concat()
			}
			return g
		}
	case tPunct:
		switch t.s {
		case "$":
			return &eField{p.postfixNoIncr()}
		case "(":
			saveGT, saveIn := p.noGT, p.noIn
			p.noGT, p.noIn = 0, 0
			list := p.exprList()
			p.noGT, p.noIn = saveGT, saveIn
			p.expect(")")
			if len(list) > 1 {
				return &eGroup{list}
			}
			return &eGroup{list}
		case "-":
			return &eUnary{"-", p.primary()}
		case "!":
			return &eUnary{"!", p.primary()}
		}
	}
	p.pos--
	p.fail("unexpected token")
	return nil
}

// postfixNoIncr parses the operand of '$' (a primary, with ++/-- prefix allowed).
func (p *awkParser) postfixNoIncr() aExpr {
	if p.is("++") || p.is("--") {
		return p.postfix()
	}
	if p.is("-") {
		p.next()
		return &eUnary{"-", p.primary()}
	}
	return p.primary()
}
