package cmds

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

func egrep(e *Env, args []string) int { return grep(e, append([]string{"-E"}, args...)) }
func fgrep(e *Env, args []string) int { return grep(e, append([]string{"-F"}, args...)) }

type grepOpts struct {
	re                                  *regexp.Regexp
	invert, count, quiet, lineNum, list bool
	listNon, only, withName, noMessages bool
	maxCount                            int
	include, exclude, excludeDir        []string
	after, before                       int
}

func grep(e *Env, args []string) int {
	fl := newFlags("grep", "EFGPivcqsnrRlLoxwhHIza", "efmABCd")
	fl.longs["ignore-case"] = 'i'
	fl.longs["invert-match"] = 'v'
	fl.longs["count"] = 'c'
	fl.longs["quiet"] = 'q'
	fl.longs["silent"] = 'q'
	fl.longs["line-number"] = 'n'
	fl.longs["recursive"] = 'r'
	fl.longs["files-with-matches"] = 'l'
	fl.longs["files-without-match"] = 'L'
	fl.longs["only-matching"] = 'o'
	fl.longs["line-regexp"] = 'x'
	fl.longs["word-regexp"] = 'w'
	fl.longs["no-filename"] = 'h'
	fl.longs["with-filename"] = 'H'
	fl.longs["extended-regexp"] = 'E'
	fl.longs["fixed-strings"] = 'F'
	fl.longs["no-messages"] = 's'
	fl.longVals["regexp"] = 'e'
	fl.longVals["file"] = 'f'
	fl.longVals["max-count"] = 'm'
	fl.longVals["include"] = 1
	fl.longVals["exclude"] = 2
	fl.longVals["exclude-dir"] = 3
	fl.longVals["color"] = 4
	fl.longVals["colour"] = 4
	fl.longVals["after-context"] = 'A'
	fl.longVals["before-context"] = 'B'
	fl.longVals["context"] = 'C'
	rest, err := fl.parse(args)
	if err != nil {
		e.errf("grep", "%v", err)
		return 2
	}
	var pats []string
	if fl.has('e') || fl.has('f') {
		for _, p := range fl.vals['e'] {
			pats = append(pats, strings.Split(p, "\n")...)
		}
		for _, f := range fl.vals['f'] {
			data, err := e.ReadFile(f)
			if err != nil {
				e.errf("grep", "%s: %v", f, err)
				return 2
			}
			pats = append(pats, splitLines(string(data))...)
		}
	} else {
		if len(rest) == 0 {
			e.errf("grep", "usage: grep [OPTION]... PATTERNS [FILE]...")
			return 2
		}
		pats = strings.Split(rest[0], "\n")
		rest = rest[1:]
	}
	var alts []string
	for _, p := range pats {
		var s string
		switch {
		case fl.has('F'):
			s = regexp.QuoteMeta(p)
		case fl.has('P'):
			// Go's RE2 syntax is Perl's, less look-around and back-references.
			s = p
		default:
			s, err = translateRegex(p, fl.has('E'))
			if err != nil {
				e.errf("grep", "%v", err)
				return 2
			}
		}
		alts = append(alts, "(?:"+s+")")
	}
	expr := strings.Join(alts, "|")
	if len(alts) == 0 {
		expr = "$^"
	}
	if fl.has('x') {
		expr = "^(?:" + expr + ")$"
	} else if fl.has('w') {
		expr = `(?:^|\b)(?:` + expr + `)(?:\b|$)`
	}
	if fl.has('i') {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		e.errf("grep", "%v", err)
		return 2
	}
	re.Longest()
	o := &grepOpts{re: re, invert: fl.has('v'), count: fl.has('c'), quiet: fl.has('q'),
		lineNum: fl.has('n'), list: fl.has('l'), listNon: fl.has('L'), only: fl.has('o'),
		noMessages: fl.has('s'), maxCount: -1,
		include: fl.vals[1], exclude: fl.vals[2], excludeDir: fl.vals[3]}
	if fl.has('m') {
		fmt.Sscan(fl.val('m'), &o.maxCount)
	}
	if fl.has('C') {
		fmt.Sscan(fl.val('C'), &o.after)
		o.before = o.after
	}
	if fl.has('A') {
		fmt.Sscan(fl.val('A'), &o.after)
	}
	if fl.has('B') {
		fmt.Sscan(fl.val('B'), &o.before)
	}
	recursive := fl.has('r') || fl.has('R')
	files := rest
	if len(files) == 0 && recursive {
		files = []string{"."}
	}
	var targets []string
	errs := false
	if recursive {
		for _, f := range files {
			if f == "-" {
				targets = append(targets, f)
				continue
			}
			st, err := os.Stat(e.Path(f))
			if err != nil || !st.IsDir() {
				targets = append(targets, f)
				continue
			}
			var found []string
			filepath.WalkDir(e.Path(f), func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					// An unlistable directory is an error, as in GNU grep: a search that
					// could not look everywhere must not report "no match" (exit 1).
					if !o.noMessages {
						e.errf("grep", "%s: %v", p, err)
					}
					errs = true
					return nil
				}
				rel, _ := filepath.Rel(e.Path(f), p)
				name := path.Join(f, rel)
				if len(rest) == 0 {
					name = rel
				} else if f == "." {
					name = "./" + rel
				}
				if d.IsDir() {
					if rel != "." && matchAny(o.excludeDir, d.Name()) {
						return filepath.SkipDir
					}
					return nil
				}
				if !d.Type().IsRegular() {
					return nil
				}
				if len(o.include) > 0 && !matchAny(o.include, d.Name()) || matchAny(o.exclude, d.Name()) {
					return nil
				}
				found = append(found, name)
				return nil
			})
			sort.Strings(found)
			targets = append(targets, found...)
		}
	} else {
		targets = files
	}
	if len(targets) == 0 && !recursive {
		targets = []string{"-"}
	}
	o.withName = (len(targets) > 1 || recursive) && !fl.has('h') || fl.has('H')
	out := e.out()
	matched := false
	for _, t := range targets {
		if !recursive {
			if st, err := os.Stat(e.Path(t)); err == nil && st.IsDir() && t != "-" {
				if !o.noMessages {
					e.errf("grep", "%s: Is a directory", t)
				}
				errs = true
				continue
			}
		}
		rc, err := e.Open(t)
		if err != nil {
			if !o.noMessages {
				e.errf("grep", "%s: %v", t, err)
			}
			errs = true
			continue
		}
		name := t
		if t == "-" {
			name = "(standard input)"
		}
		m, err := o.scan(out.Writer, name, rc)
		rc.Close()
		if err != nil {
			if BrokenPipe(err) {
				return 141
			}
			e.errf("grep", "%s: %v", t, err)
			errs = true
		}
		if m {
			matched = true
			if o.quiet {
				return out.done(0)
			}
		}
	}
	switch {
	case errs && !(o.quiet && matched):
		return out.done(2)
	case matched:
		return out.done(0)
	}
	return out.done(1)
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// scan greps one input; it reports whether any line was selected.
func (o *grepOpts) scan(w *bufio.Writer, name string, r io.Reader) (bool, error) {
	br := asBufReader(r)
	n, count := 0, 0
	prefix := func(num int, sep string) string {
		p := ""
		if o.withName {
			p = name + sep
		}
		if o.lineNum {
			p += fmt.Sprint(num) + sep
		}
		return p
	}
	var before []string
	lastPrinted, afterLeft := 0, 0
	ctx := o.after > 0 || o.before > 0
	for {
		line, err := br.ReadString('\n')
		if err != nil && err != io.EOF {
			return count > 0, err // a read error is an error (exit 2), never the end of input
		}
		if line == "" && err != nil {
			break
		}
		n++
		line = strings.TrimSuffix(line, "\n")
		sel := o.re.MatchString(line) != o.invert
		if sel {
			count++
			if o.quiet || o.list || o.listNon {
				if o.quiet || o.list {
					break
				}
				continue
			}
			if !o.count {
				if ctx && lastPrinted > 0 && n-len(before) > lastPrinted+1 {
					w.WriteString("--\n")
				}
				for i, b := range before {
					w.WriteString(prefix(n-len(before)+i, "-") + b + "\n")
				}
				before = before[:0]
				if o.only {
					if !o.invert {
						for _, m := range o.re.FindAllString(line, -1) {
							if m != "" {
								w.WriteString(prefix(n, ":") + m + "\n")
							}
						}
					}
				} else if _, err := w.WriteString(prefix(n, ":") + line + "\n"); err != nil {
					return true, err
				}
				lastPrinted, afterLeft = n, o.after
			}
			if o.maxCount >= 0 && count >= o.maxCount {
				break
			}
		} else if ctx && !o.count {
			if afterLeft > 0 {
				w.WriteString(prefix(n, "-") + line + "\n")
				afterLeft--
				lastPrinted = n
			} else if o.before > 0 {
				before = append(before, line)
				if len(before) > o.before {
					before = before[1:]
				}
			}
		}
		if err != nil {
			break
		}
	}
	switch {
	case o.count:
		if o.withName {
			fmt.Fprintf(w, "%s:%d\n", name, count)
		} else {
			fmt.Fprintf(w, "%d\n", count)
		}
	case o.list && count > 0:
		fmt.Fprintln(w, name)
	case o.listNon && count == 0:
		fmt.Fprintln(w, name)
	}
	if o.listNon {
		return count == 0, nil
	}
	return count > 0, nil
}
