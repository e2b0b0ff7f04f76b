package shell

import (
	"bufio"
	"io"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"ceval.dev/ceval/internal/toolbox/cmds"
)

// heredoc returns a here-document's body: literal when its delimiter is quoted,
// expanded otherwise; <<- strips leading tabs.
func (r *Runner) heredoc(rd *syntax.Redirect) (string, bool) {
	if rd.Hdoc == nil {
		return "", true
	}
	quoted := false
	for _, p := range rd.Word.Parts {
		switch x := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			quoted = true
		case *syntax.Lit:
			if strings.Contains(x.Value, `\`) {
				quoted = true
			}
		}
	}
	parts := rd.Hdoc.Parts
	if rd.Op == syntax.DashHdoc {
		var stripped []syntax.WordPart
		lineStart := true
		for _, p := range parts {
			lit, ok := p.(*syntax.Lit)
			if !ok {
				stripped = append(stripped, p)
				lineStart = false
				continue
			}
			var b strings.Builder
			for i, line := range strings.Split(lit.Value, "\n") {
				if i > 0 {
					b.WriteByte('\n')
					lineStart = true
				}
				if lineStart {
					line = strings.TrimLeft(line, "\t")
				}
				b.WriteString(line)
				if line != "" {
					lineStart = false
				}
			}
			stripped = append(stripped, &syntax.Lit{Value: b.String()})
		}
		parts = stripped
	}
	if quoted {
		var b strings.Builder
		for _, p := range parts {
			if lit, ok := p.(*syntax.Lit); ok {
				b.WriteString(lit.Value)
			}
		}
		return b.String(), true
	}
	s, err := expand.Document(r.cfg(), &syntax.Word{Parts: parts})
	if err != nil {
		r.expandErr(err)
		return "", false
	}
	return s, true
}

// redirect applies redirections to this runner's streams; the closers release files.
// On failure it reports the error and sets the status to 1.
func (r *Runner) redirect(rds []*syntax.Redirect) ([]func(), bool) {
	var closers []func()
	fail := func() ([]func(), bool) {
		for _, c := range closers {
			c()
		}
		r.exit = 1
		return nil, false
	}
	for _, rd := range rds {
		fd := -1
		if rd.N != nil {
			switch rd.N.Value {
			case "0":
				fd = 0
			case "1":
				fd = 1
			case "2":
				fd = 2
			default:
				r.errf("%s: file descriptors above 2 are not supported", rd.N.Value)
				return fail()
			}
		}
		switch rd.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			body, ok := r.heredoc(rd)
			if !ok {
				return fail()
			}
			r.stdin = bufio.NewReader(strings.NewReader(body))
			continue
		case syntax.WordHdoc:
			s, ok := r.literal(rd.Word)
			if !ok {
				return fail()
			}
			r.stdin = bufio.NewReader(strings.NewReader(s + "\n"))
			continue
		}
		words, ok := r.fields(rd.Word)
		if !ok {
			return fail()
		}
		if len(words) != 1 {
			r.errf("%s: ambiguous redirect", strings.Join(words, " "))
			return fail()
		}
		target := words[0]
		e := r.env()
		switch rd.Op {
		case syntax.RdrIn, syntax.RdrInOut:
			f, err := e.Open(target)
			if err != nil {
				r.errf("%s: %v", target, err)
				return fail()
			}
			closers = append(closers, func() { f.Close() })
			if fd < 0 || fd == 0 {
				r.stdin = bufio.NewReader(f)
			}
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
			w, err := e.Create(target, rd.Op == syntax.AppOut || rd.Op == syntax.AppAll)
			if err != nil {
				r.errf("%s: %v", target, cmds.CleanErr(err))
				return fail()
			}
			closers = append(closers, func() { w.Close() })
			switch {
			case rd.Op == syntax.RdrAll || rd.Op == syntax.AppAll:
				r.stdout, r.stderr = w, w
			case fd == 2:
				r.stderr = w
			case fd == 0:
				r.stdin = strings.NewReader("")
			default:
				r.stdout = w
			}
		case syntax.DplOut, syntax.DplIn:
			var src io.Writer
			switch target {
			case "1":
				src = r.stdout
			case "2":
				src = r.stderr
			case "0":
				if rd.Op == syntax.DplIn {
					continue
				}
				src = io.Discard
			case "-":
				src = io.Discard
			default:
				if rd.Op == syntax.DplOut && fd < 0 {
					// >&file is &>file
					w, err := e.Create(target, false)
					if err != nil {
						r.errf("%s: %v", target, err)
						return fail()
					}
					closers = append(closers, func() { w.Close() })
					r.stdout, r.stderr = w, w
					continue
				}
				r.errf("%s: bad file descriptor", target)
				return fail()
			}
			if rd.Op == syntax.DplIn {
				continue
			}
			if fd == 2 {
				r.stderr = src
			} else {
				r.stdout = src
			}
		default:
			r.errf("unsupported redirection %s", rd.Op)
			return fail()
		}
	}
	return closers, true
}
