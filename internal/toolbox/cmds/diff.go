//go:build !toolboxlite

package cmds

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// editOp is one line of an edit script: ' ' kept, '-' deleted from a, '+' inserted from b.
type editOp struct {
	op   byte
	a, b int // indexes into a and b (the one that applies)
}

// myers computes a shortest edit script between a and b (Myers' O(ND) algorithm), after
// trimming the common prefix and suffix.
func myers(a, b []string) []editOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	var ops []editOp
	for i := 0; i < pre; i++ {
		ops = append(ops, editOp{' ', i, i})
	}
	n, m := len(ma), len(mb)
	maxD := n + m
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := false
	for d := 0; d <= maxD && !found; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && ma[x] == mb[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	// backtrack
	var mid []editOp
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		vv := trace[d]
		k := x - y
		var pk int
		if k == -d || k != d && vv[off+k-1] < vv[off+k+1] {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := vv[off+pk]
		py := px - pk
		for x > px && y > py {
			x--
			y--
			mid = append(mid, editOp{' ', x, y})
		}
		if x == px {
			y--
			mid = append(mid, editOp{'+', x, y})
		} else {
			x--
			mid = append(mid, editOp{'-', x, y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		mid = append(mid, editOp{' ', x, y})
	}
	for i := len(mid) - 1; i >= 0; i-- {
		o := mid[i]
		o.a += pre
		o.b += pre
		ops = append(ops, o)
	}
	for i := 0; i < suf; i++ {
		ops = append(ops, editOp{' ', len(a) - suf + i, len(b) - suf + i})
	}
	// GNU diff lists deletions before insertions inside a change.
	for i := 0; i < len(ops); {
		if ops[i].op == ' ' {
			i++
			continue
		}
		j := i
		for j < len(ops) && ops[j].op != ' ' {
			j++
		}
		var dels, ins []editOp
		for _, o := range ops[i:j] {
			if o.op == '-' {
				dels = append(dels, o)
			} else {
				ins = append(ins, o)
			}
		}
		copy(ops[i:], append(dels, ins...))
		i = j
	}
	return ops
}

type diffFile struct {
	name  string
	lines []string // with their newline, the last maybe without
	keys  []string
	mtime time.Time
}

func (e *Env) loadDiffFile(name string, norm func(string) string) (*diffFile, error) {
	data, err := e.ReadFile(name)
	if err != nil {
		return nil, err
	}
	f := &diffFile{name: name, lines: splitKeep(string(data))}
	if st, err := os.Stat(e.Path(name)); err == nil && name != "-" {
		f.mtime = st.ModTime()
	} else {
		f.mtime = time.Now()
	}
	f.keys = make([]string, len(f.lines))
	for i, l := range f.lines {
		f.keys[i] = norm(strings.TrimSuffix(l, "\n"))
	}
	if n := len(f.lines); n > 0 && !strings.HasSuffix(f.lines[n-1], "\n") {
		f.keys[n-1] += "\x00no newline"
	}
	return f, nil
}

func diff(e *Env, args []string) int {
	fl := newFlags("diff", "uqiwbBsNaet", "UC")
	fl.longs["brief"] = 'q'
	fl.longs["unified"] = 'u'
	fl.longs["ignore-case"] = 'i'
	fl.longs["ignore-all-space"] = 'w'
	fl.longs["ignore-space-change"] = 'b'
	fl.longs["report-identical-files"] = 's'
	fl.longs["text"] = 'a'
	fl.longs["strip-trailing-cr"] = 'R'
	fl.longVals["label"] = 'L'
	fl.longVals["color"] = 4
	files, err := fl.parse(args)
	if err != nil {
		e.errf("diff", "%v", err)
		return 2
	}
	if len(files) > 2 {
		e.errf("diff", "extra operand '%s'"+operandHint, files[2])
		return 2
	}
	if len(files) != 2 {
		e.errf("diff", "missing operand after '%s'", strings.Join(args, " "))
		return 2
	}
	norm := func(s string) string {
		if fl.has('R') {
			s = strings.TrimSuffix(s, "\r")
		}
		if fl.has('w') {
			s = strings.Join(strings.Fields(s), "")
		} else if fl.has('b') {
			s = strings.Join(strings.Fields(s), " ")
			if len(s) > 0 && s[0] == ' ' {
				s = s[1:]
			}
		}
		if fl.has('i') {
			s = strings.ToLower(s)
		}
		return s
	}
	for i, f := range files {
		if st, err := os.Stat(e.Path(f)); err == nil && st.IsDir() {
			other := files[1-i]
			if st2, err := os.Stat(e.Path(other)); err == nil && !st2.IsDir() {
				files[i] = f + "/" + lastElem(other)
			} else {
				e.errf("diff", "directory comparison is not supported")
				return 2
			}
		}
	}
	a, err := e.loadDiffFile(files[0], norm)
	if err != nil {
		e.errf("diff", "%s: %v", files[0], err)
		return 2
	}
	b, err := e.loadDiffFile(files[1], norm)
	if err != nil {
		e.errf("diff", "%s: %v", files[1], err)
		return 2
	}
	ops := myers(a.keys, b.keys)
	changed := false
	for _, o := range ops {
		if o.op != ' ' {
			changed = true
			break
		}
	}
	if !changed {
		if fl.has('s') {
			fmt.Fprintf(e.Stdout, "Files %s and %s are identical\n", files[0], files[1])
		}
		return 0
	}
	if fl.has('q') {
		fmt.Fprintf(e.Stdout, "Files %s and %s differ\n", files[0], files[1])
		return 1
	}
	o := e.out()
	if fl.has('u') || fl.has('U') {
		ctx := 3
		if fl.has('U') {
			ctx, _ = strconv.Atoi(fl.val('U'))
		}
		labels := fl.vals['L']
		la, lb := fmt.Sprintf("%s\t%s", files[0], a.mtime.Format("2006-01-02 15:04:05.000000000 -0700")),
			fmt.Sprintf("%s\t%s", files[1], b.mtime.Format("2006-01-02 15:04:05.000000000 -0700"))
		if len(labels) > 0 {
			la = labels[0]
		}
		if len(labels) > 1 {
			lb = labels[1]
		}
		fmt.Fprintf(o, "--- %s\n+++ %s\n", la, lb)
		unified(o, ops, a.lines, b.lines, ctx)
	} else {
		normal(o, ops, a.lines, b.lines)
	}
	return o.done(1)
}

func lastElem(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func writeDiffLine(w io.Writer, prefix, line string) {
	if strings.HasSuffix(line, "\n") {
		io.WriteString(w, prefix+line)
		return
	}
	io.WriteString(w, prefix+line+"\n\\ No newline at end of file\n")
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

func unified(w io.Writer, ops []editOp, a, b []string, ctx int) {
	for i := 0; i < len(ops); {
		if ops[i].op == ' ' {
			i++
			continue
		}
		start := max(i-ctx, 0)
		end := i
		// extend the hunk while the next change is within 2*ctx kept lines
		for {
			for end < len(ops) && ops[end].op != ' ' {
				end++
			}
			k := end
			for k < len(ops) && ops[k].op == ' ' && k-end < 2*ctx+1 {
				k++
			}
			if k < len(ops) && ops[k].op != ' ' && k-end <= 2*ctx {
				end = k
				continue
			}
			end = min(end+ctx, len(ops))
			break
		}
		var body bytes.Buffer
		na, nb := 0, 0
		sa, sb := -1, -1
		for _, o := range ops[start:end] {
			switch o.op {
			case ' ':
				if sa < 0 {
					sa, sb = o.a, o.b
				}
				writeDiffLine(&body, " ", a[o.a])
				na++
				nb++
			case '-':
				if sa < 0 {
					sa, sb = o.a, o.b
				}
				writeDiffLine(&body, "-", lineAt(a, o.a))
				na++
			case '+':
				if sa < 0 {
					sa, sb = o.a, o.b
				}
				writeDiffLine(&body, "+", lineAt(b, o.b))
				nb++
			}
		}
		rng := func(s, n int) string {
			if n == 0 {
				return fmt.Sprintf("%d,0", s)
			}
			if n == 1 {
				return strconv.Itoa(s + 1)
			}
			return fmt.Sprintf("%d,%d", s+1, n)
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n", rng(sa, na), rng(sb, nb))
		w.Write(body.Bytes())
		i = end
	}
}

func normal(w io.Writer, ops []editOp, a, b []string) {
	rng := func(s, e int) string { // 1-based inclusive
		if s == e {
			return strconv.Itoa(s)
		}
		return fmt.Sprintf("%d,%d", s, e)
	}
	for i := 0; i < len(ops); {
		if ops[i].op == ' ' {
			i++
			continue
		}
		j := i
		var dels, ins []editOp
		for j < len(ops) && ops[j].op != ' ' {
			if ops[j].op == '-' {
				dels = append(dels, ops[j])
			} else {
				ins = append(ins, ops[j])
			}
			j++
		}
		switch {
		case len(ins) == 0:
			fmt.Fprintf(w, "%sd%d\n", rng(dels[0].a+1, dels[len(dels)-1].a+1), dels[0].b)
		case len(dels) == 0:
			fmt.Fprintf(w, "%da%s\n", ins[0].a, rng(ins[0].b+1, ins[len(ins)-1].b+1))
		default:
			fmt.Fprintf(w, "%sc%s\n", rng(dels[0].a+1, dels[len(dels)-1].a+1), rng(ins[0].b+1, ins[len(ins)-1].b+1))
		}
		for _, d := range dels {
			writeDiffLine(w, "< ", lineAt(a, d.a))
		}
		if len(dels) > 0 && len(ins) > 0 {
			io.WriteString(w, "---\n")
		}
		for _, in := range ins {
			writeDiffLine(w, "> ", lineAt(b, in.b))
		}
		i = j
	}
}

func cmp(e *Env, args []string) int {
	fl := newFlags("cmp", "sl", "")
	fl.longs["silent"] = 's'
	fl.longs["quiet"] = 's'
	files, err := fl.parse(args)
	if err != nil || len(files) < 1 || len(files) > 2 {
		e.errf("cmp", "usage: cmp [-s] FILE1 [FILE2]")
		return 2
	}
	if len(files) == 1 {
		files = append(files, "-")
	}
	a, err := e.ReadFile(files[0])
	if err != nil {
		e.errf("cmp", "%s: %v", files[0], err)
		return 2
	}
	b, err := e.ReadFile(files[1])
	if err != nil {
		e.errf("cmp", "%s: %v", files[1], err)
		return 2
	}
	line := 1
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if !fl.has('s') {
				fmt.Fprintf(e.Stdout, "%s %s differ: char %d, line %d\n", files[0], files[1], i+1, line)
			}
			return 1
		}
		if a[i] == '\n' {
			line++
		}
	}
	if len(a) != len(b) {
		if !fl.has('s') {
			short := files[0]
			if len(b) < len(a) {
				short = files[1]
			}
			if n == 0 {
				fmt.Fprintf(e.Stderr, "cmp: EOF on %s which is empty\n", short)
			} else {
				// GNU cmp counts the line of the last byte compared.
				l := line
				if n > 0 && a[n-1] == '\n' {
					l--
				}
				fmt.Fprintf(e.Stderr, "cmp: EOF on %s after byte %d, line %d\n", short, n, l)
			}
		}
		return 1
	}
	return 0
}
