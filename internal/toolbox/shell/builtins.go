package shell

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"ceval.dev/ceval/internal/toolbox/cmds"
)

type builtin func(r *Runner, args []string) int

var builtins map[string]builtin

func init() {
	builtins = map[string]builtin{
		":":        func(*Runner, []string) int { return 0 },
		"true":     func(*Runner, []string) int { return 0 },
		"false":    func(*Runner, []string) int { return 1 },
		"cd":       bCd,
		"pwd":      bPwd,
		"unset":    bUnset,
		"set":      bSet,
		"exit":     bExit,
		"return":   bReturn,
		"shift":    bShift,
		"read":     bRead,
		"break":    func(r *Runner, a []string) int { return r.loopJump(a, &r.breakN, "break") },
		"continue": func(r *Runner, a []string) int { return r.loopJump(a, &r.contN, "continue") },
		"eval":     bEval,
		"source":   bSource,
		".":        bSource,
		"command":  bCommand,
		"type":     bType,
		"wait":     func(*Runner, []string) int { return 0 },
		"trap":     bTrap,
		"shopt":    bShopt,
		"exec":     bExec,
	}
}

// Builtins lists the shell builtins, sorted.
func Builtins() []string {
	var names []string
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func bCd(r *Runner, args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	dir := r.vars["HOME"].String()
	if len(args) > 0 {
		dir = args[0]
	}
	if dir == "-" {
		dir = r.vars["OLDPWD"].String()
		fmt.Fprintln(r.stdout, dir)
	}
	if dir == "" {
		dir = "/"
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.dir, dir)
	}
	dir = filepath.Clean(dir)
	st, err := os.Stat(dir)
	if err != nil {
		r.errf("cd: %s: %v", args[0], cmds.CleanErr(err))
		return 1
	}
	if !st.IsDir() {
		r.errf("cd: %s: Not a directory", args[0])
		return 1
	}
	r.setStr("OLDPWD", r.dir, false)
	r.dir = dir
	r.setStr("PWD", dir, false)
	return 0
}

func bPwd(r *Runner, _ []string) int {
	fmt.Fprintln(r.stdout, r.dir)
	return 0
}

func bUnset(r *Runner, args []string) int {
	funcs := false
	status := 0
	opts := true // options end at the first name and at "--", as for every command
	for _, a := range args {
		switch {
		case opts && a == "--":
			opts = false
			continue
		case opts && a == "-f":
			funcs = true
			continue
		case opts && a == "-v":
			funcs = false
			continue
		}
		opts = false
		if funcs {
			delete(r.funcs, a)
			continue
		}
		if err := r.Set(a, expand.Variable{}); err != nil {
			r.errf("unset: %v", err)
			status = 1
		}
		if !r.vars[a].IsSet() {
			delete(r.funcs, a)
		}
	}
	return status
}

func (r *Runner) setOpt(name string, on bool) bool {
	switch name {
	case "errexit", "e":
		r.opts.errexit = on
	case "nounset", "u":
		r.opts.nounset = on
	case "pipefail":
		r.opts.pipefail = on
	case "noglob", "f":
		r.opts.noglob = on
	case "xtrace", "x":
		r.opts.xtrace = on
	case "verbose", "v", "noclobber", "C", "h", "hashall", "B", "braceexpand", "posix", "a", "allexport", "m", "monitor", "notify", "b":
	default:
		return false
	}
	return true
}

func bSet(r *Runner, args []string) int {
	if len(args) == 0 {
		var names []string
		for k, v := range r.vars {
			if v.IsSet() {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			q, err := syntax.Quote(r.vars[n].String(), syntax.LangBash)
			if err != nil {
				q = r.vars[n].String()
			}
			fmt.Fprintf(r.stdout, "%s=%s\n", n, q)
		}
		return 0
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			r.params = append([]string(nil), args[i+1:]...)
			return 0
		}
		if a == "-" {
			r.params = append([]string(nil), args[i+1:]...)
			return 0
		}
		if len(a) < 2 || a[0] != '-' && a[0] != '+' {
			r.params = append([]string(nil), args[i:]...)
			return 0
		}
		on := a[0] == '-'
		for _, c := range a[1:] {
			if c == 'o' {
				if i+1 >= len(args) {
					for _, o := range []struct {
						n string
						v bool
					}{{"errexit", r.opts.errexit}, {"nounset", r.opts.nounset}, {"pipefail", r.opts.pipefail}} {
						state := "off"
						if o.v {
							state = "on"
						}
						fmt.Fprintf(r.stdout, "%-15s\t%s\n", o.n, state)
					}
					return 0
				}
				i++
				if !r.setOpt(args[i], on) {
					r.errf("set: %s: invalid option name", args[i])
					return 2
				}
				continue
			}
			if !r.setOpt(string(c), on) {
				r.errf("set: -%c: invalid option", c)
				return 2
			}
		}
	}
	return 0
}

func (r *Runner) numArg(name string, args []string, def int) (int, bool) {
	if len(args) == 0 {
		return def, true
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		r.errf("%s: %s: numeric argument required", name, args[0])
		return 2, false
	}
	return n, true
}

func bExit(r *Runner, args []string) int {
	n, _ := r.numArg("exit", args, r.exit)
	r.exit = n & 0xff
	r.exiting = true
	return r.exit
}

func bReturn(r *Runner, args []string) int {
	if len(r.frames) == 0 {
		r.errf("return: can only `return' from a function or sourced script")
		return 1
	}
	n, _ := r.numArg("return", args, r.exit)
	r.returning = true
	return n & 0xff
}

func bShift(r *Runner, args []string) int {
	n, ok := r.numArg("shift", args, 1)
	if !ok {
		return 1
	}
	if n > len(r.params) || n < 0 {
		return 1
	}
	r.params = r.params[n:]
	return 0
}

func (r *Runner) loopJump(args []string, counter *int, name string) int {
	n, ok := r.numArg(name, args, 1)
	if !ok || n < 1 {
		r.errf("%s: loop count out of range", name)
		return 1
	}
	*counter = n
	return 0
}

// readByte reads one byte without reading ahead, so that the rest of the input stays
// for the next command.
func readByte(rd io.Reader) (byte, error) {
	if br, ok := rd.(io.ByteReader); ok {
		return br.ReadByte()
	}
	var b [1]byte
	for {
		n, err := rd.Read(b[:])
		if n == 1 {
			return b[0], nil
		}
		if err != nil {
			return 0, err
		}
	}
}

func bRead(r *Runner, args []string) int {
	raw := false
	delim := byte('\n')
	nchars := -1
	arrayName := ""
	var names []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			names = append(names, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			names = append(names, args[i:]...)
			break
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			val := func() string {
				if j+1 < len(a) {
					v := a[j+1:]
					j = len(a)
					return v
				}
				i++
				j = len(a)
				if i < len(args) {
					return args[i]
				}
				return ""
			}
			switch c {
			case 'r':
				raw = true
			case 's':
			case 'p':
				fmt.Fprint(r.stderr, val())
			case 'd':
				d := val()
				delim = 0
				if d != "" {
					delim = d[0]
				}
			case 'n', 'N':
				nchars, _ = strconv.Atoi(val())
			case 'a':
				arrayName = val()
			case 't', 'u':
				val()
			default:
				r.errf("read: -%c: invalid option", c)
				return 2
			}
		}
	}
	var line []byte
	eof := false
	for nchars < 0 || len(line) < nchars {
		b, err := readByte(r.stdin)
		if err != nil {
			eof = true
			break
		}
		if b == delim {
			break
		}
		if b == '\\' && !raw {
			nb, err := readByte(r.stdin)
			if err != nil {
				eof = true
				break
			}
			if nb == '\n' {
				continue
			}
			line = append(line, '\\', nb) // keep escapes for splitting; removed below
			continue
		}
		line = append(line, b)
	}
	s := string(line)
	if eof && s == "" {
		for _, n := range names {
			r.Set(n, expand.Variable{Set: true, Kind: expand.String})
		}
		return 1
	}
	ifs := " \t\n"
	if v, ok := r.vars["IFS"]; ok {
		ifs = v.String()
	}
	unescape := func(s string) string {
		if raw {
			return s
		}
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		}
		return b.String()
	}
	if arrayName != "" {
		fields := splitIFS(s, ifs, -1, raw)
		for i := range fields {
			fields[i] = unescape(fields[i])
		}
		r.Set(arrayName, expand.Variable{Set: true, Kind: expand.Indexed, List: fields})
	} else if len(names) == 0 {
		r.Set("REPLY", expand.Variable{Set: true, Kind: expand.String, Str: unescape(s)})
	} else {
		fields := splitIFS(s, ifs, len(names), raw)
		for i, n := range names {
			v := ""
			if i < len(fields) {
				v = unescape(fields[i])
			}
			if err := r.Set(n, expand.Variable{Set: true, Kind: expand.String, Str: v}); err != nil {
				r.errf("read: %v", err)
				return 1
			}
		}
	}
	if eof {
		return 1
	}
	return 0
}

// splitIFS splits s into at most n fields (n < 0: all) as read does: the last field keeps
// the rest of the line, minus trailing IFS whitespace. Backslash-escaped characters
// (when !raw) never split.
func splitIFS(s, ifs string, n int, raw bool) []string {
	isWS := func(c byte) bool { return (c == ' ' || c == '\t' || c == '\n') && strings.IndexByte(ifs, c) >= 0 }
	isIFS := func(c byte) bool { return strings.IndexByte(ifs, c) >= 0 }
	var fields []string
	i := 0
	for i < len(s) && isWS(s[i]) {
		i++
	}
	for i < len(s) {
		if n > 0 && len(fields) == n-1 {
			rest := s[i:]
			end := len(rest)
			for end > 0 && isWS(rest[end-1]) && !(end > 1 && rest[end-2] == '\\' && !raw) {
				end--
			}
			fields = append(fields, rest[:end])
			return fields
		}
		start := i
		for i < len(s) && !isIFS(s[i]) {
			if s[i] == '\\' && !raw && i+1 < len(s) {
				i++
			}
			i++
		}
		fields = append(fields, s[start:i])
		// consume one delimiter: whitespace run, optionally one non-whitespace IFS char
		for i < len(s) && isWS(s[i]) {
			i++
		}
		if i < len(s) && isIFS(s[i]) && !isWS(s[i]) {
			i++
			for i < len(s) && isWS(s[i]) {
				i++
			}
		}
	}
	return fields
}

func (r *Runner) runScript(src, name string) int {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), name)
	if err != nil {
		r.errf("%v", err)
		return 2
	}
	r.exit = 0
	r.stmts(f.Stmts)
	return r.exit
}

func bEval(r *Runner, args []string) int {
	return r.runScript(strings.Join(args, " "), "eval")
}

func bSource(r *Runner, args []string) int {
	if len(args) == 0 {
		r.errf("source: filename argument required")
		return 2
	}
	data, err := r.env().ReadFile(args[0])
	if err != nil {
		r.errf("%s: %v", args[0], err)
		return 1
	}
	oldParams := r.params
	if len(args) > 1 {
		r.params = args[1:]
	}
	r.frames = append(r.frames, map[string]*expand.Variable{})
	st := r.runScript(string(data), args[0])
	fr := r.frames[len(r.frames)-1]
	r.frames = r.frames[:len(r.frames)-1]
	if len(r.frames) > 0 {
		parent := r.frames[len(r.frames)-1]
		for k, v := range fr {
			if _, ok := parent[k]; !ok {
				parent[k] = v
			}
		}
	}
	if r.returning {
		r.returning = false
	}
	r.params = oldParams
	return st
}

// kind describes what a name runs, for command -v and type.
func (r *Runner) kind(name string) string {
	switch {
	case r.funcs[name] != nil:
		return "function"
	case builtins[name] != nil:
		return "builtin"
	}
	if _, ok := cmds.Lookup(commandName(name)); ok || name == "sh" || name == "bash" {
		return "command"
	}
	return ""
}

func bCommand(r *Runner, args []string) int {
	if len(args) > 0 && (args[0] == "-v" || args[0] == "-V") {
		status := 0
		for _, n := range args[1:] {
			switch r.kind(n) {
			case "":
				status = 1
			case "command":
				fmt.Fprintln(r.stdout, "/usr/bin/"+commandName(n))
			default:
				fmt.Fprintln(r.stdout, n)
			}
		}
		return status
	}
	if len(args) == 0 {
		return 0
	}
	if b, ok := builtins[args[0]]; ok {
		return b(r, args[1:])
	}
	return r.runCommand(args, r.stdin, r.stdout, r.stderr)
}

func bType(r *Runner, args []string) int {
	status := 0
	for _, n := range args {
		switch r.kind(n) {
		case "function":
			fmt.Fprintf(r.stdout, "%s is a function\n", n)
		case "builtin":
			fmt.Fprintf(r.stdout, "%s is a shell builtin\n", n)
		case "command":
			fmt.Fprintf(r.stdout, "%s is a toolbox command\n", n)
		default:
			r.errf("type: %s: not found", n)
			status = 1
		}
	}
	return status
}

func bTrap(r *Runner, args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) < 2 {
		return 0
	}
	for _, sig := range args[1:] {
		if sig == "EXIT" || sig == "0" {
			if args[0] == "-" {
				r.exitTrap = ""
			} else {
				r.exitTrap = args[0]
			}
		}
	}
	return 0
}

func bShopt(r *Runner, args []string) int {
	on := true
	opts := true // options end at the first name and at "--", as for every command
	for _, a := range args {
		switch {
		case opts && a == "--":
			opts = false
			continue
		case opts && (a == "-s" || a == "-u"):
			on = a == "-s"
			continue
		case opts && (a == "-q" || a == "-o"):
			continue
		}
		opts = false
		switch a {
		case "nullglob":
			r.opts.nullglob = on
		case "dotglob":
			r.opts.dotglob = on
		case "globstar":
			r.opts.globstar = on
		case "extglob", "failglob", "nocaseglob", "lastpipe", "expand_aliases":
		default:
			r.errf("shopt: %s: invalid shell option name", a)
			return 1
		}
	}
	return 0
}

func bExec(r *Runner, args []string) int {
	if len(args) == 0 {
		return 0
	}
	r.exec(args)
	r.exiting = true
	return r.exit
}
