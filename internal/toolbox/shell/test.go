package shell

import (
	"regexp"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"ceval.dev/ceval/internal/toolbox/cmds"
)

// testClause evaluates [[ ... ]]: 0 true, 1 false, 2 error.
func (r *Runner) testClause(x syntax.TestExpr) int {
	v, err := r.testExpr(x)
	if err != "" {
		r.errf("%s", err)
		return 2
	}
	return b2i(!v)
}

func (r *Runner) testExpr(x syntax.TestExpr) (bool, string) {
	switch t := x.(type) {
	case *syntax.Word:
		s, ok := r.literal(t)
		if !ok {
			return false, "expansion failed"
		}
		return s != "", ""
	case *syntax.ParenTest:
		return r.testExpr(t.X)
	case *syntax.UnaryTest:
		if t.Op == syntax.TsNot {
			v, err := r.testExpr(t.X)
			return !v, err
		}
		w, ok := t.X.(*syntax.Word)
		if !ok {
			return false, "unexpected unary operand"
		}
		s, ok := r.literal(w)
		if !ok {
			return false, "expansion failed"
		}
		if t.Op.String() == "-v" {
			return r.Get(s).IsSet(), ""
		}
		e := r.env()
		e.Stderr = r.stderr
		return cmds.Lookup2Test(e, t.Op.String(), s), ""
	case *syntax.BinaryTest:
		switch t.Op {
		case syntax.AndTest:
			a, err := r.testExpr(t.X)
			if err != "" || !a {
				return false, err
			}
			return r.testExpr(t.Y)
		case syntax.OrTest:
			a, err := r.testExpr(t.X)
			if err != "" || a {
				return a, err
			}
			return r.testExpr(t.Y)
		}
		xw, _ := t.X.(*syntax.Word)
		yw, _ := t.Y.(*syntax.Word)
		if xw == nil || yw == nil {
			return false, "unexpected operand"
		}
		a, ok := r.literal(xw)
		if !ok {
			return false, "expansion failed"
		}
		switch t.Op {
		case syntax.TsMatch, syntax.TsMatchShort:
			return r.matchPattern(yw, a), ""
		case syntax.TsNoMatch:
			return !r.matchPattern(yw, a), ""
		case syntax.TsReMatch:
			src, ok := r.literal(yw)
			if !ok {
				return false, "expansion failed"
			}
			re, err := regexp.Compile(src)
			if err != nil {
				return false, "invalid regular expression " + src
			}
			m := re.FindStringSubmatch(a)
			r.vars["BASH_REMATCH"] = expand.Variable{Set: true, Kind: expand.Indexed, List: m}
			return m != nil, ""
		}
		b, ok := r.literal(yw)
		if !ok {
			return false, "expansion failed"
		}
		switch op := t.Op.String(); op {
		case "<":
			return a < b, ""
		case ">":
			return a > b, ""
		case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			x, err1 := r.arithOperand(a)
			y, err2 := r.arithOperand(b)
			if err1 != nil || err2 != nil {
				return false, "integer expression expected"
			}
			switch op {
			case "-eq":
				return x == y, ""
			case "-ne":
				return x != y, ""
			case "-lt":
				return x < y, ""
			case "-le":
				return x <= y, ""
			case "-gt":
				return x > y, ""
			}
			return x >= y, ""
		default:
			e := r.env()
			return cmds.Lookup2Test(e, op, a, b), ""
		}
	}
	return false, "unsupported test expression"
}

// arithOperand evaluates an operand of [[ -eq ]], which bash treats as arithmetic.
func (r *Runner) arithOperand(s string) (int, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	expr, err := syntax.NewParser().Arithmetic(strings.NewReader(s))
	if err != nil {
		return 0, err
	}
	return expand.Arithm(r.cfg(), expr)
}
