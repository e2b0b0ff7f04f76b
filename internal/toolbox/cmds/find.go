//go:build !toolboxlite

package cmds

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// find supports -name -iname -path -ipath -type -maxdepth -mindepth -empty -size -newer
// -not/! -a -o ( ) -print -print0 -prune -exec/-execdir (toolbox commands only) -delete.
// Entries are visited in name order (GNU find uses directory order).

type findNode struct {
	kind  string
	arg   string
	args  []string
	plus  bool
	l, r  *findNode
	n     int64
	cmp   int // -1 less, 0 exact, 1 more
	unit  int64
	mtime int64
}

type findParser struct {
	args      []string
	i         int
	hasAction bool
	maxDepth  int
	minDepth  int
	err       error
}

func (p *findParser) peek() string {
	if p.i < len(p.args) {
		return p.args[p.i]
	}
	return ""
}

func (p *findParser) or() *findNode {
	l := p.and()
	for p.peek() == "-o" || p.peek() == "-or" {
		p.i++
		l = &findNode{kind: "or", l: l, r: p.and()}
	}
	return l
}

func (p *findParser) and() *findNode {
	l := p.not()
	for {
		t := p.peek()
		if t == "" || t == ")" || t == "-o" || t == "-or" {
			return l
		}
		if t == "-a" || t == "-and" {
			p.i++
		}
		l = &findNode{kind: "and", l: l, r: p.not()}
	}
}

func (p *findParser) not() *findNode {
	if t := p.peek(); t == "!" || t == "-not" {
		p.i++
		return &findNode{kind: "not", l: p.not()}
	}
	return p.primary()
}

func (p *findParser) need() string {
	if p.i >= len(p.args) {
		if p.err == nil {
			p.err = fmt.Errorf("missing argument to `%s'", p.args[p.i-1])
		}
		return ""
	}
	p.i++
	return p.args[p.i-1]
}

func (p *findParser) primary() *findNode {
	t := p.need()
	n := &findNode{kind: t}
	switch t {
	case "(":
		n = p.or()
		if p.peek() != ")" {
			p.err = fmt.Errorf("invalid expression; missing ')'")
		}
		p.i++
	case "-name", "-iname", "-path", "-ipath", "-wholename", "-type", "-newer", "-regex", "-iregex":
		n.arg = p.need()
	case "-maxdepth", "-mindepth":
		v, err := strconv.Atoi(p.need())
		if err != nil {
			p.err = fmt.Errorf("invalid argument to %s", t)
		}
		if t == "-maxdepth" {
			p.maxDepth = v
		} else {
			p.minDepth = v
		}
		n.kind = "true"
	case "-size":
		s := p.need()
		if strings.HasPrefix(s, "+") {
			n.cmp, s = 1, s[1:]
		} else if strings.HasPrefix(s, "-") {
			n.cmp, s = -1, s[1:]
		}
		n.unit = 512
		if s != "" {
			switch s[len(s)-1] {
			case 'c':
				n.unit, s = 1, s[:len(s)-1]
			case 'k':
				n.unit, s = 1024, s[:len(s)-1]
			case 'M':
				n.unit, s = 1<<20, s[:len(s)-1]
			case 'G':
				n.unit, s = 1<<30, s[:len(s)-1]
			case 'b':
				s = s[:len(s)-1]
			}
		}
		n.n, _ = strconv.ParseInt(s, 10, 64)
	case "-empty", "-print", "-print0", "-prune", "-true", "-false", "-delete", "-quit":
		if t == "-print" || t == "-print0" || t == "-delete" {
			p.hasAction = true
		}
	case "-exec", "-execdir", "-ok":
		p.hasAction = true
		for {
			a := p.need()
			if a == "" && p.err != nil {
				return n
			}
			if a == ";" {
				break
			}
			if a == "+" && len(n.args) > 0 && n.args[len(n.args)-1] == "{}" {
				n.plus = true
				break
			}
			n.args = append(n.args, a)
		}
	default:
		if p.err == nil {
			p.err = fmt.Errorf("unknown predicate `%s'", t)
		}
	}
	return n
}

type findRun struct {
	e       *Env
	status  int
	pruned  bool
	quit    bool
	batches map[*findNode][]string
}

func (r *findRun) eval(n *findNode, p string, d fs.DirEntry, info fs.FileInfo) bool {
	switch n.kind {
	case "and":
		return r.eval(n.l, p, d, info) && r.eval(n.r, p, d, info)
	case "or":
		return r.eval(n.l, p, d, info) || r.eval(n.r, p, d, info)
	case "not":
		return !r.eval(n.l, p, d, info)
	case "true", "-true":
		return true
	case "-false":
		return false
	case "-name", "-iname":
		name := path.Base(p)
		pat := n.arg
		if n.kind == "-iname" {
			name, pat = strings.ToLower(name), strings.ToLower(pat)
		}
		ok, _ := path.Match(pat, name)
		return ok
	case "-path", "-ipath", "-wholename":
		pp, pat := p, n.arg
		if n.kind == "-ipath" {
			pp, pat = strings.ToLower(pp), strings.ToLower(pat)
		}
		return globPath(pat, pp)
	case "-regex", "-iregex":
		re, err := compileRegex(n.arg, true, n.kind == "-iregex")
		if err != nil {
			return false
		}
		loc := re.FindStringIndex(p)
		return loc != nil && loc[0] == 0 && loc[1] == len(p)
	case "-type":
		switch n.arg {
		case "f":
			return info.Mode().IsRegular()
		case "d":
			return info.IsDir()
		case "l":
			return info.Mode()&fs.ModeSymlink != 0
		case "p":
			return info.Mode()&fs.ModeNamedPipe != 0
		case "s":
			return info.Mode()&fs.ModeSocket != 0
		}
		return false
	case "-empty":
		if info.IsDir() {
			ents, err := os.ReadDir(r.e.Path(p))
			return err == nil && len(ents) == 0
		}
		return info.Mode().IsRegular() && info.Size() == 0
	case "-size":
		size := info.Size()
		units := (size + n.unit - 1) / n.unit
		switch n.cmp {
		case 1:
			return units > n.n
		case -1:
			return units < n.n
		}
		return units == n.n
	case "-newer":
		st, err := os.Stat(r.e.Path(n.arg))
		return err == nil && info.ModTime().After(st.ModTime())
	case "-print":
		fmt.Fprintln(r.e.Stdout, p)
		return true
	case "-print0":
		fmt.Fprint(r.e.Stdout, p+"\x00")
		return true
	case "-prune":
		r.pruned = true
		return true
	case "-quit":
		r.quit = true
		return true
	case "-delete":
		if err := os.Remove(r.e.Path(p)); err != nil {
			r.e.errf("find", "cannot delete '%s': %v", p, cleanErr(err))
			r.status = 1
			return false
		}
		return true
	case "-exec", "-execdir", "-ok":
		arg := p
		if n.kind == "-execdir" {
			arg = "./" + path.Base(p)
		}
		if n.plus {
			r.batches[n] = append(r.batches[n], arg)
			return true
		}
		var argv []string
		for _, a := range n.args {
			argv = append(argv, strings.ReplaceAll(a, "{}", arg))
		}
		return r.e.Run(argv, r.e.Stdin, r.e.Stdout, r.e.Stderr) == 0
	}
	return false
}

// globPath matches a -path pattern, where '*' also matches '/'.
func globPath(pat, s string) bool {
	re, err := compileRegex(globToRegex(pat), true, false)
	if err != nil {
		return false
	}
	loc := re.FindStringIndex(s)
	return loc != nil && loc[0] == 0 && loc[1] == len(s)
}

func globToRegex(pat string) string {
	var b strings.Builder
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := strings.IndexByte(pat[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			cls := pat[i+1 : i+1+j]
			if strings.HasPrefix(cls, "!") {
				cls = "^" + cls[1:]
			}
			b.WriteString("[" + cls + "]")
			i += j + 1
		case '\\':
			if i+1 < len(pat) {
				i++
				b.WriteString(regexpQuote(pat[i : i+1]))
			}
		default:
			b.WriteString(regexpQuote(string(c)))
		}
	}
	return b.String()
}

func regexpQuote(s string) string {
	if strings.ContainsAny(s, `.+*?()|[]{}^$\`) {
		return `\` + s
	}
	return s
}

func find(e *Env, args []string) int {
	var roots []string
	i := 0
	for i < len(args) && (!strings.HasPrefix(args[i], "-") || args[i] == "-") && args[i] != "(" && args[i] != "!" {
		roots = append(roots, args[i])
		i++
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	p := &findParser{args: args[i:], maxDepth: -1}
	var expr *findNode
	if len(p.args) > 0 {
		expr = p.or()
		if p.err == nil && p.i < len(p.args) {
			p.err = fmt.Errorf("paths must precede expression: `%s'", p.args[p.i])
		}
	} else {
		expr = &findNode{kind: "true"}
	}
	if p.err != nil {
		e.errf("find", "%v", p.err)
		return 1
	}
	if !p.hasAction {
		expr = &findNode{kind: "and", l: expr, r: &findNode{kind: "-print"}}
	}
	r := &findRun{e: e, batches: map[*findNode][]string{}}
	for _, root := range roots {
		if r.quit {
			break
		}
		full := e.Path(root)
		if _, err := os.Lstat(full); err != nil {
			e.errf("find", "'%s': %v", root, cleanErr(err))
			r.status = 1
			continue
		}
		var walk func(disp string, full string, depth int)
		walk = func(disp, full string, depth int) {
			if r.quit {
				return
			}
			info, err := os.Lstat(full)
			if err != nil {
				e.errf("find", "'%s': %v", disp, cleanErr(err))
				r.status = 1
				return
			}
			r.pruned = false
			if depth >= p.minDepth {
				r.eval(expr, disp, nil, info)
			}
			if !info.IsDir() || r.pruned || p.maxDepth >= 0 && depth >= p.maxDepth {
				return
			}
			ents, err := os.ReadDir(full)
			if err != nil {
				e.errf("find", "'%s': %v", disp, cleanErr(err))
				r.status = 1
				return
			}
			names := make([]string, len(ents))
			for i, d := range ents {
				names[i] = d.Name()
			}
			sort.Strings(names)
			for _, n := range names {
				child := disp + "/" + n
				if strings.HasSuffix(disp, "/") {
					child = disp + n
				}
				walk(child, filepath.Join(full, n), depth+1)
			}
		}
		walk(root, full, 0)
	}
	for n, items := range r.batches {
		argv := append([]string(nil), n.args[:len(n.args)-1]...)
		argv = append(argv, items...)
		if r.e.Run(argv, e.Stdin, e.Stdout, e.Stderr) != 0 {
			r.status = 1
		}
	}
	return r.status
}

func ls(e *Env, args []string) int {
	fl := newFlags("ls", "aA1dlrRFSth", "")
	names, err := fl.parse(args)
	if err != nil {
		e.errf("ls", "%v", err)
		return 2
	}
	if len(names) == 0 {
		names = []string{"."}
	}
	status := 0
	o := e.out()
	var files, dirs []string
	for _, n := range names {
		st, err := os.Stat(e.Path(n))
		if err != nil {
			e.errf("ls", "cannot access '%s': %v", n, cleanErr(err))
			status = 2
			continue
		}
		if st.IsDir() && !fl.has('d') {
			dirs = append(dirs, n)
		} else {
			files = append(files, n)
		}
	}
	sort.Strings(files)
	sort.Strings(dirs)
	entry := func(dir, name string) string {
		full := e.Path(path.Join(dir, name))
		st, err := os.Lstat(full)
		s := name
		if err == nil && fl.has('F') {
			switch {
			case st.IsDir():
				s += "/"
			case st.Mode()&0o111 != 0 && st.Mode().IsRegular():
				s += "*"
			}
		}
		if fl.has('l') && err == nil {
			s = fmt.Sprintf("%s 1 %d %d %8d %s %s", st.Mode().String(), 0, 0, st.Size(),
				st.ModTime().Format("Jan _2 15:04"), s)
		}
		return s
	}
	printList := func(dir string, list []string) {
		if fl.has('r') {
			for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
				list[i], list[j] = list[j], list[i]
			}
		}
		for _, n := range list {
			o.WriteString(entry(dir, n) + "\n")
		}
	}
	printList("", files)
	var listDir func(d string, header bool)
	listDir = func(d string, header bool) {
		ents, err := os.ReadDir(e.Path(d))
		if err != nil {
			e.errf("ls", "cannot open directory '%s': %v", d, cleanErr(err))
			status = 2
			return
		}
		var list []string
		if fl.has('a') {
			list = append(list, ".", "..")
		}
		var subdirs []string
		for _, ent := range ents {
			n := ent.Name()
			if strings.HasPrefix(n, ".") && !fl.has('a') && !fl.has('A') {
				continue
			}
			list = append(list, n)
			if ent.IsDir() {
				subdirs = append(subdirs, n)
			}
		}
		sort.Strings(list)
		if header {
			o.WriteString(d + ":\n")
		}
		printList(d, list)
		if fl.has('R') {
			sort.Strings(subdirs)
			for _, s := range subdirs {
				o.WriteString("\n")
				listDir(strings.TrimSuffix(d, "/")+"/"+s, true)
			}
		}
	}
	for i, d := range dirs {
		if i > 0 || len(files) > 0 {
			o.WriteString("\n")
		}
		listDir(d, len(names) > 1 || fl.has('R'))
	}
	return o.done(status)
}
