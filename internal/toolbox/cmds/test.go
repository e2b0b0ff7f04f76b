package cmds

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

func bracketCmd(e *Env, args []string) int {
	if len(args) == 0 || args[len(args)-1] != "]" {
		e.errf("[", "missing `]'")
		return 2
	}
	return test(e, args[:len(args)-1])
}

type testErr struct{ msg string }

func test(e *Env, args []string) (status int) {
	defer func() {
		if r := recover(); r != nil {
			te, ok := r.(testErr)
			if !ok {
				panic(r)
			}
			e.errf("test", "%s", te.msg)
			status = 2
		}
	}()
	t := &tester{e: e, args: args}
	var ok bool
	switch len(args) {
	case 0:
		ok = false
	case 1:
		ok = args[0] != ""
	case 2:
		if args[0] == "!" {
			ok = args[1] == ""
		} else {
			ok = t.unary(args[0], args[1])
		}
	case 3:
		switch {
		case isBinaryTestOp(args[1]):
			ok = t.binary(args[0], args[1], args[2])
		case args[0] == "!":
			ok = !t.eval2(args[1], args[2])
		case args[0] == "(" && args[2] == ")":
			ok = args[1] != ""
		default:
			panic(testErr{args[1] + ": binary operator expected"})
		}
	case 4:
		switch {
		case args[0] == "!" && isBinaryTestOp(args[2]):
			ok = !t.binary(args[1], args[2], args[3])
		case args[0] == "(" && args[3] == ")":
			ok = t.eval2(args[1], args[2])
		default:
			ok = t.parse()
		}
	default:
		ok = t.parse()
	}
	if ok {
		return 0
	}
	return 1
}

type tester struct {
	e    *Env
	args []string
	i    int
}

func (t *tester) eval2(a, b string) bool {
	if a == "!" {
		return b == ""
	}
	return t.unary(a, b)
}

func isBinaryTestOp(s string) bool {
	switch s {
	case "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef", "-a", "-o":
		return true
	}
	return false
}

func isUnaryTestOp(s string) bool {
	return len(s) == 2 && s[0] == '-' && strings.IndexByte("bcdefghknprstuwxzLSGOv", s[1]) >= 0
}

func (t *tester) parse() bool {
	v := t.or()
	if t.i < len(t.args) {
		panic(testErr{"too many arguments"})
	}
	return v
}

func (t *tester) peek() string {
	if t.i < len(t.args) {
		return t.args[t.i]
	}
	return ""
}

func (t *tester) or() bool {
	v := t.and()
	for t.peek() == "-o" {
		t.i++
		r := t.and()
		v = v || r
	}
	return v
}

func (t *tester) and() bool {
	v := t.not()
	for t.peek() == "-a" {
		t.i++
		r := t.not()
		v = v && r
	}
	return v
}

func (t *tester) not() bool {
	if t.peek() == "!" && t.i+1 < len(t.args) {
		t.i++
		return !t.not()
	}
	return t.primary()
}

func (t *tester) primary() bool {
	if t.i >= len(t.args) {
		panic(testErr{"argument expected"})
	}
	a := t.args[t.i]
	if a == "(" {
		t.i++
		v := t.or()
		if t.peek() != ")" {
			panic(testErr{"')' expected"})
		}
		t.i++
		return v
	}
	if t.i+2 < len(t.args) && isBinaryTestOp(t.args[t.i+1]) && t.args[t.i+1] != "-a" && t.args[t.i+1] != "-o" {
		t.i += 3
		return t.binary(a, t.args[t.i-2], t.args[t.i-1])
	}
	if isUnaryTestOp(a) && t.i+1 < len(t.args) {
		t.i += 2
		return t.unary(a, t.args[t.i-1])
	}
	t.i++
	return a != ""
}

func testInt(s string) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		panic(testErr{s + ": integer expression expected"})
	}
	return v
}

func (t *tester) binary(a, op, b string) bool {
	switch op {
	case "=", "==":
		return a == b
	case "!=":
		return a != b
	case "<":
		return a < b
	case ">":
		return a > b
	case "-eq":
		return testInt(a) == testInt(b)
	case "-ne":
		return testInt(a) != testInt(b)
	case "-lt":
		return testInt(a) < testInt(b)
	case "-le":
		return testInt(a) <= testInt(b)
	case "-gt":
		return testInt(a) > testInt(b)
	case "-ge":
		return testInt(a) >= testInt(b)
	case "-a":
		return a != "" && b != ""
	case "-o":
		return a != "" || b != ""
	case "-nt", "-ot":
		sa, errA := os.Stat(t.e.Path(a))
		sb, errB := os.Stat(t.e.Path(b))
		if op == "-nt" {
			return errA == nil && (errB != nil || sa.ModTime().After(sb.ModTime()))
		}
		return errB == nil && (errA != nil || sa.ModTime().Before(sb.ModTime()))
	case "-ef":
		sa, errA := os.Stat(t.e.Path(a))
		sb, errB := os.Stat(t.e.Path(b))
		return errA == nil && errB == nil && os.SameFile(sa, sb)
	}
	panic(testErr{fmt.Sprintf("%s: binary operator expected", op)})
}

func (t *tester) unary(op, a string) bool {
	switch op {
	case "-n":
		return a != ""
	case "-z":
		return a == ""
	case "-v":
		return t.e.Getenv != nil && t.e.Getenv(a) != ""
	case "-t":
		return false
	}
	if !isUnaryTestOp(op) {
		panic(testErr{op + ": unary operator expected"})
	}
	var st os.FileInfo
	var err error
	if op == "-L" || op == "-h" {
		st, err = os.Lstat(t.e.Path(a))
	} else {
		st, err = os.Stat(t.e.Path(a))
	}
	if err != nil || a == "" {
		return false
	}
	m := st.Mode()
	switch op {
	case "-e":
		return true
	case "-f":
		return m.IsRegular()
	case "-d":
		return m.IsDir()
	case "-s":
		return st.Size() > 0
	case "-r":
		return m.Perm()&0o444 != 0
	case "-w":
		return m.Perm()&0o222 != 0
	case "-x":
		return m.Perm()&0o111 != 0
	case "-L", "-h":
		return m&os.ModeSymlink != 0
	case "-p":
		return m&os.ModeNamedPipe != 0
	case "-S":
		return m&os.ModeSocket != 0
	case "-b":
		return m&os.ModeDevice != 0 && m&os.ModeCharDevice == 0
	case "-c":
		return m&os.ModeCharDevice != 0
	case "-u":
		return m&os.ModeSetuid != 0
	case "-g":
		return m&os.ModeSetgid != 0
	case "-k":
		return m&os.ModeSticky != 0
	case "-G", "-O":
		return true
	}
	return false
}

// Lookup2Test evaluates one unary (op, a) or binary (a, op, b) test primary for the
// shell's [[ ]]; errors count as false.
func Lookup2Test(e *Env, op string, operands ...string) bool {
	args := []string{op, operands[0]}
	if len(operands) == 2 {
		args = []string{operands[0], op, operands[1]}
	}
	saved := e.Stderr
	e.Stderr = io.Discard
	defer func() { e.Stderr = saved }()
	return test(e, args) == 0
}
