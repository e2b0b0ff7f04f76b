package shell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"ceval.dev/ceval/internal/toolbox/pipeline"
)

// maxCallDepth bounds function recursion; Go stacks would otherwise grow until the
// sandbox's memory cap kills the module with a less useful message.
const maxCallDepth = 400

type options struct {
	errexit, nounset, pipefail, noglob, xtrace bool
	nullglob, dotglob, globstar                bool
}

// Runner holds one shell's state. A subshell is a copy.
type Runner struct {
	ctx    context.Context
	dir    string
	vars   map[string]expand.Variable
	funcs  map[string]*syntax.Stmt
	params []string
	name   string
	opts   options

	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	exit        int
	substStatus int
	exiting     bool
	returning   bool
	breakN      int
	contN       int
	noErrExit   bool
	frames      []map[string]*expand.Variable // saved values of locals, per call
	depth       int
	exitTrap    string
	rnd         *rand.Rand
	pid         int
}

// New returns a shell whose working directory is dir and whose exported variables are
// environ (NAME=value).
func New(dir string, environ []string, stdin io.Reader, stdout, stderr io.Writer) *Runner {
	var mu sync.Mutex
	r := &Runner{
		ctx:    context.Background(),
		dir:    dir,
		vars:   map[string]expand.Variable{},
		funcs:  map[string]*syntax.Stmt{},
		name:   "toolbox",
		stdin:  bufio.NewReader(stdin),
		stdout: pipeline.Locked(&mu, stdout),
		stderr: pipeline.Locked(&mu, stderr),
		rnd:    rand.New(rand.NewSource(1)),
		pid:    os.Getpid(),
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			r.vars[k] = expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: v}
		}
	}
	r.setStr("PWD", dir, true)
	if _, ok := r.vars["IFS"]; !ok {
		r.setStr("IFS", " \t\n", false)
	}
	return r
}

// SetParams sets $0 and the positional parameters.
func (r *Runner) SetParams(name string, params []string) {
	r.name = name
	r.params = params
}

// Run parses and runs script and returns its exit status. A syntax error is reported
// on stderr with status 2, as bash does.
func (r *Runner) Run(ctx context.Context, script string) (status int) {
	r.ctx = ctx
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(r.stderr, "toolbox: internal error: %v\n", p)
			status = 2
		}
	}()
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		fmt.Fprintf(r.stderr, "toolbox: %v\n", err)
		return 2
	}
	r.stmts(f.Stmts)
	status = r.exit
	if r.exitTrap != "" {
		trap := r.exitTrap
		r.exitTrap = ""
		r.exiting, r.returning, r.breakN, r.contN = false, false, 0, 0
		if tf, err := syntax.NewParser().Parse(strings.NewReader(trap), ""); err == nil {
			r.stmts(tf.Stmts)
			if r.exiting {
				status = r.exit
			}
		}
	}
	return status
}

func (r *Runner) setStr(name, val string, export bool) {
	v := r.vars[name]
	v.Set, v.Kind, v.Str, v.List, v.Map = true, expand.String, val, nil, nil
	v.Exported = v.Exported || export
	r.vars[name] = v
}

func (r *Runner) errf(format string, a ...any) {
	fmt.Fprintf(r.stderr, "toolbox: "+format+"\n", a...)
}

// subshell copies the state that a ( ... ), a pipeline stage or $( ... ) starts from.
func (r *Runner) subshell() *Runner {
	s := *r
	s.vars = maps.Clone(r.vars)
	s.funcs = maps.Clone(r.funcs)
	s.frames = nil
	s.exitTrap = ""
	return &s
}

func (r *Runner) stopped() bool {
	return r.exiting || r.returning || r.breakN > 0 || r.contN > 0 || r.ctx.Err() != nil
}

// Environ implementation (expand.WriteEnviron).

// Get returns a variable, including the special parameters.
func (r *Runner) Get(name string) expand.Variable {
	str := func(s string) expand.Variable {
		return expand.Variable{Set: true, Kind: expand.String, Str: s}
	}
	switch name {
	case "#":
		return str(strconv.Itoa(len(r.params)))
	case "@", "*":
		return expand.Variable{Set: true, Kind: expand.Indexed, List: r.params}
	case "?":
		return str(strconv.Itoa(r.exit))
	case "$", "BASHPID":
		return str(strconv.Itoa(r.pid))
	case "PPID":
		return str("1")
	case "0":
		return str(r.name)
	case "-":
		flags := "h"
		if r.opts.errexit {
			flags += "e"
		}
		if r.opts.nounset {
			flags += "u"
		}
		return str(flags)
	case "RANDOM":
		return str(strconv.Itoa(r.rnd.Intn(32768)))
	}
	if n, err := strconv.Atoi(name); err == nil && n > 0 {
		if n <= len(r.params) {
			return str(r.params[n-1])
		}
		return expand.Variable{}
	}
	return r.vars[name]
}

// Each calls fn for every variable.
func (r *Runner) Each(fn func(name string, vr expand.Variable) bool) {
	for k, v := range r.vars {
		if !fn(k, v) {
			return
		}
	}
}

// Set assigns or unsets a variable, keeping its attributes.
func (r *Runner) Set(name string, vr expand.Variable) error {
	old, had := r.vars[name]
	if had && old.ReadOnly && (vr.Kind != expand.KeepValue || !vr.IsSet()) {
		return fmt.Errorf("%s: readonly variable", name)
	}
	if !vr.IsSet() && vr.Kind != expand.KeepValue {
		r.saveLocal(name)
		delete(r.vars, name)
		return nil
	}
	if vr.Kind == expand.KeepValue {
		old.Exported = old.Exported || vr.Exported
		old.ReadOnly = old.ReadOnly || vr.ReadOnly
		r.vars[name] = old
		return nil
	}
	vr.Exported = vr.Exported || old.Exported
	vr.ReadOnly = vr.ReadOnly || old.ReadOnly
	vr.Local = false
	vr.Set = true
	r.vars[name] = vr
	if name == "PWD" && vr.Kind == expand.String {
		r.dir = vr.Str
	}
	return nil
}

// saveLocal is a no-op hook kept for symmetry: locals are saved when declared.
func (r *Runner) saveLocal(string) {}

func (r *Runner) exported() []string {
	var out []string
	for k, v := range r.vars {
		if v.Exported && v.IsSet() {
			out = append(out, k+"="+v.String())
		}
	}
	sort.Strings(out)
	return out
}

func (r *Runner) cfg() *expand.Config {
	c := &expand.Config{
		Env:       r,
		CmdSubst:  r.cmdSubst,
		NoUnset:   r.opts.nounset,
		NullGlob:  r.opts.nullglob,
		DotGlob:   r.opts.dotglob,
		GlobStar:  r.opts.globstar,
		ProcSubst: nil,
	}
	if !r.opts.noglob {
		c.ReadDir2 = os.ReadDir
	}
	return c
}

func (r *Runner) cmdSubst(w io.Writer, cs *syntax.CmdSubst) error {
	sub := r.subshell()
	sub.stdout = w
	// $(< file) reads the file.
	if len(cs.Stmts) == 1 {
		st := cs.Stmts[0]
		if call, ok := st.Cmd.(*syntax.CallExpr); (st.Cmd == nil || ok && len(call.Args) == 0 && len(call.Assigns) == 0) &&
			len(st.Redirs) == 1 && st.Redirs[0].Op == syntax.RdrIn {
			names, err := expand.Fields(r.cfg(), st.Redirs[0].Word)
			if err != nil || len(names) != 1 {
				return fmt.Errorf("ambiguous redirect")
			}
			data, err := sub.env().ReadFile(names[0])
			if err != nil {
				r.errf("%s: %v", names[0], err)
				r.substStatus = 1
				return nil
			}
			w.Write(data)
			r.substStatus = 0
			return nil
		}
	}
	sub.stmts(cs.Stmts)
	r.substStatus = sub.exit
	return nil
}

// expandErr reports an expansion error; unset-parameter errors end a non-interactive
// shell, as in bash.
func (r *Runner) expandErr(err error) {
	r.errf("%v", err)
	r.exit = 1
	var upe expand.UnsetParameterError
	if errors.As(err, &upe) {
		// bash leaves a non-interactive shell with 127 here
		r.exit = 127
		r.exiting = true
	}
}

func (r *Runner) fields(words ...*syntax.Word) ([]string, bool) {
	cfg := r.cfg()
	var all []string
	for _, w := range words {
		f, err := expand.Fields(cfg, w)
		if err != nil {
			r.expandErr(err)
			return nil, false
		}
		if cfg.ReadDir2 != nil && plainPattern(w) {
			r.dotSlashDashNames(f)
		}
		all = append(all, f...)
	}
	return all, true
}

// dotSlashDashNames rewrites each file name that a glob in the working directory matched
// and that starts with "-" to "./NAME": the same file, but never an option nor standard
// input. Without it a workspace file named --help or -n makes `cat *` or `head *` (glob
// first, where options are still read) fail or change, a file named "-" is read as stdin,
// and a negated check such as `! cat * | grep -q TODO` passes. This is where the toolbox
// differs from bash, and only for such names.
func (r *Runner) dotSlashDashNames(fields []string) {
	for i, f := range fields {
		if f == "" || f[0] != '-' {
			continue
		}
		if _, err := os.Lstat(filepath.Join(r.dir, f)); err == nil {
			fields[i] = "./" + f
		}
	}
}

// plainPattern reports whether w is a glob pattern made only of literal text: every field
// it expands to is then a match of the pattern, or the pattern itself when nothing matched.
// Words with expansions ($x*, which may split into a -v the author meant), braces or extended
// globs are left as bash leaves them.
func plainPattern(w *syntax.Word) bool {
	meta := false
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "{}") {
				return false
			}
			meta = meta || strings.ContainsAny(p.Value, "*?[")
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return meta
}

func (r *Runner) literal(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	s, err := expand.Literal(r.cfg(), w)
	if err != nil {
		r.expandErr(err)
		return "", false
	}
	return s, true
}
