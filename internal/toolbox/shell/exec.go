package shell

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/pattern"
	"mvdan.cc/sh/v3/syntax"

	"ceval.dev/ceval/internal/toolbox/cmds"
	"ceval.dev/ceval/internal/toolbox/pipeline"
)

func (r *Runner) stmts(list []*syntax.Stmt) {
	for _, st := range list {
		if r.stopped() {
			return
		}
		r.stmt(st)
	}
}

// errexitApplies reports whether a failure of cmd itself (not of a command inside it)
// triggers set -e.
func errexitApplies(cmd syntax.Command) bool {
	switch x := cmd.(type) {
	case *syntax.BinaryCmd:
		return x.Op == syntax.Pipe || x.Op == syntax.PipeAll
	case *syntax.Block, *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause,
		*syntax.CaseClause, *syntax.FuncDecl:
		return false
	}
	return true
}

func (r *Runner) stmt(st *syntax.Stmt) {
	if r.stopped() {
		return
	}
	// "exec" with only redirections changes this shell's streams for good.
	if call, ok := st.Cmd.(*syntax.CallExpr); ok && len(call.Args) == 1 && call.Args[0].Lit() == "exec" {
		_, ok := r.redirect(st.Redirs)
		if ok {
			r.exit = 0
		}
		return
	}
	in, out, errw := r.stdin, r.stdout, r.stderr
	closers, ok := r.redirect(st.Redirs)
	if ok {
		if st.Negated {
			old := r.noErrExit
			r.noErrExit = true
			r.cmd(st.Cmd)
			r.noErrExit = old
			if r.exit == 0 {
				r.exit = 1
			} else {
				r.exit = 0
			}
		} else {
			r.cmd(st.Cmd)
		}
	}
	for _, c := range closers {
		c()
	}
	r.stdin, r.stdout, r.stderr = in, out, errw
	if r.exit != 0 && r.opts.errexit && !r.noErrExit && !st.Negated && !r.exiting && !r.returning &&
		(!ok || errexitApplies(st.Cmd)) {
		r.exiting = true
	}
}

func (r *Runner) cmd(cmd syntax.Command) {
	switch x := cmd.(type) {
	case nil:
		r.exit = 0
	case *syntax.CallExpr:
		r.call(x)
	case *syntax.Block:
		r.stmts(x.Stmts)
	case *syntax.Subshell:
		sub := r.subshell()
		sub.stmts(x.Stmts)
		r.exit = sub.exit
	case *syntax.BinaryCmd:
		switch x.Op {
		case syntax.AndStmt, syntax.OrStmt:
			old := r.noErrExit
			r.noErrExit = true
			r.stmt(x.X)
			r.noErrExit = old
			if r.stopped() {
				return
			}
			if (r.exit == 0) == (x.Op == syntax.AndStmt) {
				r.stmt(x.Y)
			}
		default:
			r.pipeline(x)
		}
	case *syntax.IfClause:
		r.ifClause(x)
	case *syntax.WhileClause:
		r.whileClause(x)
	case *syntax.ForClause:
		r.forClause(x)
	case *syntax.CaseClause:
		r.caseClause(x)
	case *syntax.FuncDecl:
		r.funcs[x.Name.Value] = x.Body
		r.exit = 0
	case *syntax.ArithmCmd:
		n, err := expand.Arithm(r.cfg(), x.X)
		if err != nil {
			r.errf("%v", err)
			r.exit = 1
			return
		}
		r.exit = b2i(n == 0)
	case *syntax.LetClause:
		r.exit = 1
		for _, e := range x.Exprs {
			n, err := expand.Arithm(r.cfg(), e)
			if err != nil {
				r.errf("let: %v", err)
				return
			}
			r.exit = b2i(n == 0)
		}
	case *syntax.TestClause:
		r.exit = r.testClause(x.X)
	case *syntax.DeclClause:
		r.declClause(x)
	case *syntax.TimeClause:
		if x.Stmt != nil {
			r.stmt(x.Stmt)
		}
	default:
		r.errf("unsupported shell construct %T", cmd)
		r.exit = 2
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cond runs a condition list, where set -e does not apply.
func (r *Runner) cond(list []*syntax.Stmt) bool {
	old := r.noErrExit
	r.noErrExit = true
	r.stmts(list)
	r.noErrExit = old
	return r.exit == 0
}

func (r *Runner) ifClause(x *syntax.IfClause) {
	for c := x; c != nil; c = c.Else {
		if len(c.Cond) == 0 && c.ThenPos == (syntax.Pos{}) {
			r.stmts(c.Then)
			return
		}
		ok := r.cond(c.Cond)
		if r.stopped() {
			return
		}
		if ok {
			r.stmts(c.Then)
			return
		}
	}
	r.exit = 0
}

// loopCtl handles break/continue after a loop body; it reports whether to leave the loop.
func (r *Runner) loopCtl() bool {
	if r.breakN > 0 {
		r.breakN--
		return true
	}
	if r.contN > 0 {
		r.contN--
		return r.contN > 0
	}
	return r.stopped()
}

func (r *Runner) whileClause(x *syntax.WhileClause) {
	status := 0
	for !r.stopped() {
		ok := r.cond(x.Cond)
		if r.stopped() {
			if r.loopCtl() {
				break
			}
			continue
		}
		if ok == x.Until {
			break
		}
		r.stmts(x.Do)
		status = r.exit
		if r.loopCtl() {
			break
		}
	}
	if !r.exiting && !r.returning {
		r.exit = status
	}
}

func (r *Runner) forClause(x *syntax.ForClause) {
	status := 0
	switch l := x.Loop.(type) {
	case *syntax.WordIter:
		var items []string
		if l.InPos == (syntax.Pos{}) && len(l.Items) == 0 {
			items = r.params
		} else {
			var ok bool
			if items, ok = r.fields(l.Items...); !ok {
				return
			}
		}
		for _, it := range items {
			if err := r.Set(l.Name.Value, expand.Variable{Set: true, Kind: expand.String, Str: it}); err != nil {
				r.errf("%v", err)
				r.exit = 1
				return
			}
			r.stmts(x.Do)
			status = r.exit
			if r.loopCtl() {
				break
			}
		}
	case *syntax.CStyleLoop:
		cfg := r.cfg()
		if l.Init != nil {
			if _, err := expand.Arithm(cfg, l.Init); err != nil {
				r.errf("%v", err)
				r.exit = 1
				return
			}
		}
		for !r.stopped() {
			if l.Cond != nil {
				n, err := expand.Arithm(cfg, l.Cond)
				if err != nil {
					r.errf("%v", err)
					r.exit = 1
					return
				}
				if n == 0 {
					break
				}
			}
			r.stmts(x.Do)
			status = r.exit
			if r.loopCtl() {
				break
			}
			if l.Post != nil {
				if _, err := expand.Arithm(cfg, l.Post); err != nil {
					r.errf("%v", err)
					r.exit = 1
					return
				}
			}
		}
	}
	if !r.exiting && !r.returning {
		r.exit = status
	}
}

func (r *Runner) matchPattern(word *syntax.Word, subject string) bool {
	pat, err := expand.Pattern(r.cfg(), word)
	if err != nil {
		r.expandErr(err)
		return false
	}
	expr, err := pattern.Regexp(pat, pattern.EntireString|pattern.ExtendedOperators)
	if err != nil {
		return pat == subject
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return false
	}
	return re.MatchString(subject)
}

func (r *Runner) caseClause(x *syntax.CaseClause) {
	subject, ok := r.literal(x.Word)
	if !ok {
		return
	}
	r.exit = 0
	fall := false
	for _, item := range x.Items {
		matched := fall
		for _, p := range item.Patterns {
			if matched {
				break
			}
			matched = r.matchPattern(p, subject)
		}
		if !matched {
			continue
		}
		r.stmts(item.Stmts)
		switch item.Op {
		case syntax.Fallthrough:
			fall = true
		case syntax.Resume:
			fall = false
		default:
			return
		}
	}
}

// pipeline runs each stage in a subshell on its own goroutine, joined by in-process
// pipes; the last stage runs on this goroutine.
func (r *Runner) pipeline(x *syntax.BinaryCmd) {
	var stages []*syntax.Stmt
	var withStderr []bool
	var flatten func(c *syntax.BinaryCmd)
	flatten = func(c *syntax.BinaryCmd) {
		if b, ok := c.X.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) &&
			len(c.X.Redirs) == 0 && !c.X.Negated {
			flatten(b)
		} else {
			stages = append(stages, c.X)
			withStderr = append(withStderr, false)
		}
		withStderr[len(withStderr)-1] = c.Op == syntax.PipeAll
		stages = append(stages, c.Y)
		withStderr = append(withStderr, false)
	}
	flatten(x)
	n := len(stages)
	// Each stage's subshell is made here, in order, before any stage runs.
	subs := make([]*Runner, n)
	for i := range stages {
		subs[i] = r.subshell()
	}
	statuses := pipeline.Run(n, r.stdin, r.stdout, r.stderr, func(i int, in io.Reader, out io.Writer) int {
		sub := subs[i]
		sub.stdin = in
		sub.stdout = out
		if withStderr[i] {
			sub.stderr = out
		}
		sub.stmt(stages[i])
		return sub.exit
	})
	status := statuses[n-1]
	if r.opts.pipefail {
		for i := n - 1; i >= 0; i-- {
			if statuses[i] != 0 {
				status = statuses[i]
				break
			}
		}
	}
	list := make([]string, n)
	for i, s := range statuses {
		list[i] = strconv.Itoa(s)
	}
	r.vars["PIPESTATUS"] = expand.Variable{Set: true, Kind: expand.Indexed, List: list}
	r.exit = status
}

// assign performs one assignment in the current shell.
func (r *Runner) assign(a *syntax.Assign, local, export bool) bool {
	name := a.Name.Value
	if local {
		r.declareLocal(name)
	}
	cfg := r.cfg()
	var vr expand.Variable
	switch {
	case a.Array != nil:
		var list []string
		for _, el := range a.Array.Elems {
			if el.Value == nil {
				continue
			}
			f, ok := r.fields(el.Value)
			if !ok {
				return false
			}
			list = append(list, f...)
		}
		if a.Append {
			list = append(append([]string(nil), r.vars[name].List...), list...)
		}
		vr = expand.Variable{Set: true, Kind: expand.Indexed, List: list}
	case a.Index != nil:
		idx, err := expand.Arithm(cfg, a.Index)
		if err != nil {
			r.errf("%v", err)
			return false
		}
		val, ok := r.literal(a.Value)
		if !ok {
			return false
		}
		old := r.vars[name]
		list := append([]string(nil), old.List...)
		if old.Kind == expand.String {
			list = []string{old.Str}
		}
		for len(list) <= idx {
			list = append(list, "")
		}
		if idx < 0 {
			r.errf("%s[%d]: bad array subscript", name, idx)
			return false
		}
		if a.Append {
			val = list[idx] + val
		}
		list[idx] = val
		vr = expand.Variable{Set: true, Kind: expand.Indexed, List: list}
	case a.Naked:
		if export {
			vr = expand.Variable{Set: true, Kind: expand.KeepValue, Exported: true}
			if _, had := r.vars[name]; !had {
				vr = expand.Variable{Kind: expand.KeepValue, Exported: true}
				old := r.vars[name]
				old.Exported = true
				r.vars[name] = old
				return true
			}
		} else if local {
			vr = expand.Variable{Set: true, Kind: expand.String}
			if v, ok := r.vars[name]; ok && v.IsSet() && !local {
				return true
			}
		} else {
			return true
		}
	default:
		val, ok := r.literal(a.Value)
		if !ok {
			return false
		}
		if a.Append {
			val = r.vars[name].String() + val
		}
		vr = expand.Variable{Set: true, Kind: expand.String, Str: val}
	}
	vr.Exported = export
	if err := r.Set(name, vr); err != nil {
		r.errf("%v", err)
		return false
	}
	return true
}

func (r *Runner) declareLocal(name string) {
	if len(r.frames) == 0 {
		return
	}
	fr := r.frames[len(r.frames)-1]
	if _, saved := fr[name]; saved {
		return
	}
	if v, ok := r.vars[name]; ok {
		fr[name] = &v
	} else {
		fr[name] = nil
	}
}

func (r *Runner) declClause(x *syntax.DeclClause) {
	variant := x.Variant.Value
	local := variant == "local" || (variant == "declare" || variant == "typeset") && len(r.frames) > 0
	if variant == "local" && len(r.frames) == 0 {
		r.errf("local: can only be used in a function")
		r.exit = 1
		return
	}
	export := variant == "export"
	readonly := variant == "readonly"
	unexport := false
	r.exit = 0
	r.substStatus = 0
	opts := true // options end at the first name and at "--", as for every command
	for _, a := range x.Args {
		if a.Naked && a.Name == nil {
			words, ok := r.fields(a.Value)
			if !ok {
				return
			}
			for _, w := range words {
				switch {
				case opts && w == "--":
					opts = false
				case opts && len(w) > 1 && (w[0] == '-' || w[0] == '+'):
					for _, c := range w[1:] {
						switch c {
						case 'x':
							export = w[0] == '-'
						case 'r':
							readonly = true
						case 'n':
							unexport = variant == "export"
						case 'g':
							local = false
						case 'p':
							for _, kv := range r.exported() {
								fmt.Fprintf(r.stdout, "declare -x %s\n", kv)
							}
						}
					}
				default:
					opts = false
					name, val, hasVal := strings.Cut(w, "=")
					if !syntax.ValidName(name) {
						r.errf("%s: `%s': not a valid identifier", variant, w)
						r.exit = 1
						continue
					}
					as := &syntax.Assign{Name: &syntax.Lit{Value: name}, Naked: !hasVal,
						Value: &syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: val}}}}
					r.declOne(as, local, export, readonly, unexport)
				}
			}
			continue
		}
		opts = false
		r.declOne(a, local, export, readonly, unexport)
	}
}

func (r *Runner) declOne(a *syntax.Assign, local, export, readonly, unexport bool) {
	if !syntax.ValidName(a.Name.Value) {
		r.errf("`%s': not a valid identifier", a.Name.Value)
		r.exit = 1
		return
	}
	if unexport {
		v := r.vars[a.Name.Value]
		v.Exported = false
		r.vars[a.Name.Value] = v
		return
	}
	if !r.assign(a, local, export) {
		r.exit = 1
		return
	}
	if readonly {
		v := r.vars[a.Name.Value]
		v.ReadOnly = true
		if !v.IsSet() {
			v.Set, v.Kind = true, expand.String
		}
		r.vars[a.Name.Value] = v
	}
}

func (r *Runner) call(x *syntax.CallExpr) {
	r.substStatus = 0
	if len(x.Args) == 0 {
		for _, a := range x.Assigns {
			if !r.assign(a, false, false) {
				r.exit = 1
				return
			}
		}
		r.exit = r.substStatus
		return
	}
	fields, ok := r.fields(x.Args...)
	if !ok {
		return
	}
	if len(fields) == 0 {
		for _, a := range x.Assigns {
			if !r.assign(a, false, false) {
				r.exit = 1
				return
			}
		}
		r.exit = r.substStatus
		return
	}
	// Prefix assignments last for this command only.
	var restore []func()
	for _, a := range x.Assigns {
		name := a.Name.Value
		old, had := r.vars[name]
		if !r.assign(a, false, true) {
			r.exit = 1
			return
		}
		restore = append(restore, func() {
			if had {
				r.vars[name] = old
			} else {
				delete(r.vars, name)
			}
		})
	}
	if r.opts.xtrace {
		var q []string
		for _, f := range fields {
			s, err := syntax.Quote(f, syntax.LangBash)
			if err != nil {
				s = f
			}
			q = append(q, s)
		}
		fmt.Fprintf(r.stderr, "+ %s\n", strings.Join(q, " "))
	}
	r.exec(fields)
	for i := len(restore) - 1; i >= 0; i-- {
		restore[i]()
	}
}

// exec runs a command by name: a function, a builtin, or a toolbox command.
func (r *Runner) exec(args []string) {
	if body, ok := r.funcs[args[0]]; ok {
		r.callFunc(body, args)
		return
	}
	if b, ok := builtins[args[0]]; ok {
		r.exit = b(r, args[1:])
		return
	}
	r.exit = r.runCommand(args, r.stdin, r.stdout, r.stderr)
}

func (r *Runner) callFunc(body *syntax.Stmt, args []string) {
	if r.depth >= maxCallDepth {
		r.errf("%s: maximum function nesting level exceeded (%d)", args[0], maxCallDepth)
		r.exit = 1
		r.exiting = true
		return
	}
	oldParams := r.params
	r.params = args[1:]
	r.frames = append(r.frames, map[string]*expand.Variable{})
	r.depth++
	r.stmt(body)
	r.depth--
	fr := r.frames[len(r.frames)-1]
	r.frames = r.frames[:len(r.frames)-1]
	for name, v := range fr {
		if v == nil {
			delete(r.vars, name)
		} else {
			r.vars[name] = *v
		}
	}
	r.params = oldParams
	r.returning = false
}

// env is what a toolbox command sees of this shell.
func (r *Runner) env() *cmds.Env {
	return &cmds.Env{
		Ctx: r.ctx, Stdin: r.stdin, Stdout: r.stdout, Stderr: r.stderr, Dir: r.dir,
		Getenv: func(name string) string {
			if v, ok := r.vars[name]; ok && v.Exported {
				return v.String()
			}
			return ""
		},
		Environ: r.exported,
		Run: func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
			return r.runCommand(args, stdin, stdout, stderr)
		},
	}
}

// commandName maps /bin/grep and friends to the toolbox's own command; any other path is
// a program, which the toolbox cannot run.
func commandName(name string) string {
	for _, dir := range []string{"/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/"} {
		if rest, ok := strings.CutPrefix(name, dir); ok && !strings.Contains(rest, "/") {
			return rest
		}
	}
	return name
}

// runCommand runs a toolbox command (never a program: there is no exec).
func (r *Runner) runCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) (status int) {
	name := commandName(args[0])
	if name == "sh" || name == "bash" {
		return r.runShell(args[1:], stdin, stdout, stderr)
	}
	fn, ok := cmds.Lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "toolbox: %s\n", cmds.NotFound(args[0]))
		return 127
	}
	e := r.env()
	e.Stdin, e.Stdout, e.Stderr = stdin, stdout, stderr
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "toolbox: %s: internal error: %v\n", name, p)
			status = 2
		}
	}()
	return fn(e, args[1:])
}

// runShell implements "sh -c SCRIPT [NAME [ARGS...]]" and "sh FILE [ARGS...]" as a fresh
// shell that sees only the exported variables.
func (r *Runner) runShell(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var opts options
	script, haveScript := "", false
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "-c" {
			if i+1 >= len(args) {
				fmt.Fprintln(stderr, "toolbox: sh: -c: option requires an argument")
				return 2
			}
			script, haveScript = args[i+1], true
			i += 2
			break
		}
		if a == "-o" && i+1 < len(args) {
			i++
			if args[i] == "pipefail" {
				opts.pipefail = true
			}
			continue
		}
		if len(a) > 1 && a[0] == '-' {
			for _, c := range a[1:] {
				switch c {
				case 'e':
					opts.errexit = true
				case 'u':
					opts.nounset = true
				case 'x':
					opts.xtrace = true
				case 'c':
					if i+1 < len(args) {
						script, haveScript = args[i+1], true
						i++
					}
				}
			}
			if haveScript {
				i++
				break
			}
			continue
		}
		break
	}
	name := "sh"
	var params []string
	if !haveScript {
		if i >= len(args) {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return 1
			}
			script = string(data)
		} else {
			data, err := r.env().ReadFile(args[i])
			if err != nil {
				fmt.Fprintf(stderr, "toolbox: sh: %s: %v\n", args[i], err)
				return 127
			}
			script, name, params = string(data), args[i], args[i+1:]
		}
	} else if i < len(args) {
		name, params = args[i], args[i+1:]
	}
	sub := New(r.dir, r.exported(), stdin, stdout, stderr)
	sub.opts = opts
	sub.SetParams(name, params)
	return sub.Run(r.ctx, script)
}
