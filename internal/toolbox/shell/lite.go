package shell

import (
	"errors"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"ceval.dev/ceval/internal/toolbox/cmds"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// LiteProgram returns script as the program of the small toolbox (cmd/ceval-toolbox-lite),
// or ok false when the script needs the full one. It accepts only what runs the same in
// both: statements of commands of cmds.LiteNames joined by &&, ||, ! and pipelines, with
// no redirection but to /dev/null and between stdout and stderr, no assignment or
// background job, and words without a parameter,
// command substitution, arithmetic, tilde or glob, so that their fields depend on nothing
// the sandbox holds. The fields are expanded here by the same parser and expand package
// the full shell runs.
func LiteProgram(script string) (prog []string, ok bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, false
	}
	for _, st := range f.Stmts {
		if prog, ok = liteStmt(prog, st); !ok {
			return nil, false
		}
	}
	if prog == nil {
		prog = []string{}
	}
	return prog, true
}

func liteStmt(prog []string, st *syntax.Stmt) ([]string, bool) {
	if st == nil || st.Background || st.Coprocess || st.Disown {
		return nil, false
	}
	if st.Negated {
		prog = append(prog, "!")
	}
	if len(st.Redirs) > 0 {
		call, isCall := st.Cmd.(*syntax.CallExpr)
		var ok bool
		if prog, ok = liteRedirs(prog, st.Redirs); !ok || !isCall {
			return nil, false
		}
		return liteCall(prog, call)
	}
	switch x := st.Cmd.(type) {
	case *syntax.BinaryCmd:
		var op string
		switch x.Op {
		case syntax.AndStmt:
			op = "&&"
		case syntax.OrStmt:
			op = "||"
		case syntax.Pipe:
			return litePipeline(prog, x)
		default:
			return nil, false
		}
		prog = append(prog, op)
		var ok bool
		if prog, ok = liteStmt(prog, x.X); !ok {
			return nil, false
		}
		return liteStmt(prog, x.Y)
	case *syntax.CallExpr:
		return liteCall(prog, x)
	}
	return nil, false
}

// litePipeline writes a pipeline whose stages are all plain commands (no negation,
// redirection or |&) as "|" N and its N commands; the small toolbox joins them as the full
// shell's pipeline does (goroutines, io.Pipe, the last stage's status).
func litePipeline(prog []string, x *syntax.BinaryCmd) ([]string, bool) {
	var stages []*syntax.CallExpr
	var flatten func(c *syntax.BinaryCmd) bool
	var redirs [][]*syntax.Redirect
	stage := func(st *syntax.Stmt) bool {
		call, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || st.Negated || st.Background || st.Coprocess || st.Disown {
			return false
		}
		stages, redirs = append(stages, call), append(redirs, st.Redirs)
		return true
	}
	flatten = func(c *syntax.BinaryCmd) bool {
		if c.Op != syntax.Pipe {
			return false
		}
		if b, ok := c.X.Cmd.(*syntax.BinaryCmd); ok && !c.X.Negated && len(c.X.Redirs) == 0 {
			if !flatten(b) {
				return false
			}
		} else if !stage(c.X) {
			return false
		}
		return stage(c.Y)
	}
	if !flatten(x) {
		return nil, false
	}
	prog = append(prog, "|", strconv.Itoa(len(stages)))
	for i, call := range stages {
		var ok bool
		if prog, ok = liteRedirs(prog, redirs[i]); !ok {
			return nil, false
		}
		if prog, ok = liteCall(prog, call); !ok {
			return nil, false
		}
	}
	return prog, true
}

// liteRedirs writes a command's redirections, when it has any, as "r" N and N of: "o-"
// (stdout to /dev/null), "e-" (stderr to /dev/null), "e>o" (2>&1: stderr to where stdout
// goes now), "o>e" (>&2); the full shell's redirect makes these of >, >>, >|, &>, &>> to
// /dev/null and of >& and 2>&, left to right. Any other redirection needs the full shell.
func liteRedirs(prog []string, rds []*syntax.Redirect) ([]string, bool) {
	if len(rds) == 0 {
		return prog, true
	}
	var ops []string
	for _, rd := range rds {
		fd := "1"
		if rd.N != nil {
			fd = rd.N.Value
		}
		if fd != "1" && fd != "2" || rd.Hdoc != nil {
			return nil, false
		}
		words, ok := liteFields(rd.Word)
		if !ok || len(words) != 1 {
			return nil, false
		}
		target := words[0]
		switch rd.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob:
			if target != "/dev/null" {
				return nil, false
			}
			ops = append(ops, map[string]string{"1": "o-", "2": "e-"}[fd])
		case syntax.RdrAll, syntax.AppAll:
			if target != "/dev/null" || rd.N != nil {
				return nil, false
			}
			ops = append(ops, "o-", "e-")
		case syntax.DplOut:
			switch {
			case fd == "2" && target == "1":
				ops = append(ops, "e>o")
			case fd == "1" && target == "2":
				ops = append(ops, "o>e")
			case fd == target:
			default:
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if len(ops) == 0 {
		return prog, true
	}
	prog = append(prog, "r", strconv.Itoa(len(ops)))
	return append(prog, ops...), true
}

// liteCall writes a command as "c" N and its N fields.
func liteCall(prog []string, x *syntax.CallExpr) ([]string, bool) {
	if len(x.Assigns) > 0 || len(x.Args) == 0 {
		return nil, false
	}
	var fields []string
	for _, w := range x.Args {
		f, ok := liteFields(w)
		if !ok {
			return nil, false
		}
		fields = append(fields, f...)
	}
	if len(fields) == 0 {
		return nil, false
	}
	// The full shell looks a name up as a builtin first (true and false are both, with
	// the same status), then maps /bin/NAME and the like to the toolbox's NAME.
	name := commandName(fields[0])
	if _, builtin := builtins[fields[0]]; builtin && name != "true" && name != "false" {
		return nil, false
	}
	if !slices.Contains(cmds.LiteNames, name) {
		return nil, false
	}
	fields[0] = name
	prog = append(prog, "c", strconv.Itoa(len(fields)))
	return append(prog, fields...), true
}

// liteFields expands a word that holds only literal text and quotes, as the full shell
// would; ok is false for any other word, and for one the full shell would glob or rewrite
// (its runner's dotSlashDashNames applies to words with glob characters).
func liteFields(w *syntax.Word) ([]string, bool) {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?~") || strings.Contains(p.Value, "[") && !(len(w.Parts) == 1 && p.Value == "[") {
				return nil, false
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return nil, false
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return nil, false
				}
			}
		default:
			return nil, false
		}
	}
	cfg := &expand.Config{
		Env: expand.ListEnviron(),
		// Never called for these words; if it were, the field would depend on the sandbox.
		ReadDir2: func(string) ([]fs.DirEntry, error) { return nil, errors.New("glob") },
	}
	fields, err := expand.Fields(cfg, w)
	if err != nil {
		return nil, false
	}
	return fields, true
}
