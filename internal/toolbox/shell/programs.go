package shell

import (
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"ceval.dev/ceval/internal/toolbox/cmds"
)

// Unavailable lists the command names script calls literally that the toolbox cannot run:
// not a builtin, a toolbox command (python and python3 included), sh or bash, nor a
// function the script defines. Names built at run time ($cmd) are not judged. A script
// that does not parse returns the parse error.
func Unavailable(script string) ([]string, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	funcs := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok {
			funcs[fd.Name.Value] = true
		}
		return true
	})
	seen := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		name := call.Args[0].Lit()
		if name == "" {
			return true
		}
		base := commandName(name)
		_, builtin := builtins[base]
		_, command := cmds.Lookup(base)
		if !builtin && !command && !funcs[name] && base != "sh" && base != "bash" {
			seen[name] = true
		}
		return true
	})
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}
