package cmds

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
)

func cat(e *Env, args []string) int {
	fl := newFlags("cat", "nAsEvbu", "")
	files, err := fl.parse(args)
	if err != nil {
		e.errf("cat", "%v", err)
		return 1
	}
	o := e.out()
	n := 0
	st := e.inputs("cat", files, func(_ string, r io.Reader) error {
		if !fl.has('n') && !fl.has('E') && !fl.has('A') {
			_, err := io.Copy(o, r)
			return err
		}
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				if fl.has('n') {
					n++
					fmt.Fprintf(o, "%6d\t", n)
				}
				if fl.has('E') || fl.has('A') {
					if strings.HasSuffix(line, "\n") {
						line = line[:len(line)-1] + "$\n"
					}
				}
				if _, werr := o.WriteString(line); werr != nil {
					return werr
				}
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	})
	return o.done(st)
}

// count is head's and tail's -n/-c/-N option.
type count struct {
	n           int64
	plus, minus bool // "+N": from line N; "-N": all but the last N
	bytes       bool // -c
}

// countOptions parses head's or tail's options (default 10 lines), reporting errors itself.
func countOptions(e *Env, cmd, bools string, args []string) (files []string, c count, ok bool) {
	fl := newFlags(cmd, bools, "nc")
	fl.numShorthand = true
	files, err := fl.parse(args)
	if err != nil {
		e.errf(cmd, "%v", err)
		return nil, c, false
	}
	spec := "10"
	if fl.numFlag != "" {
		spec = fl.numFlag
	}
	if fl.has('n') {
		spec = fl.val('n')
	}
	if fl.has('c') {
		spec, c.bytes = fl.val('c'), true
	}
	if c.n, c.plus, c.minus, err = countArg(spec); err != nil {
		e.errf(cmd, "invalid number of lines: '%s'", spec)
		return nil, c, false
	}
	return files, c, true
}

// fileHeaders returns what prints "==> NAME <==" before each file when there are several,
// with a blank line between files, as head and tail do.
func fileHeaders(o outBuf, multi bool) func(name string) {
	first := true
	return func(name string) {
		if !multi {
			return
		}
		if !first {
			o.WriteString("\n")
		}
		first = false
		fmt.Fprintf(o, "==> %s <==\n", displayName(name))
	}
}

// countArg parses head/tail's -n/-c value: "5", "+5" (from), "-5" (all but).
func countArg(s string) (n int64, plus, minus bool, err error) {
	switch {
	case strings.HasPrefix(s, "+"):
		plus = true
		s = s[1:]
	case strings.HasPrefix(s, "-"):
		minus = true
		s = s[1:]
	}
	n, err = strconv.ParseInt(s, 10, 64)
	return n, plus, minus, err
}

func head(e *Env, args []string) int {
	files, c, ok := countOptions(e, "head", "qv", args)
	if !ok {
		return 1
	}
	n, _, minus, bytesMode := c.n, c.plus, c.minus, c.bytes
	o := e.out()
	header := fileHeaders(o, len(files) > 1)
	st := e.inputs("head", files, func(name string, r io.Reader) error {
		header(name)
		if bytesMode {
			if minus {
				data, err := io.ReadAll(r)
				if err != nil {
					return err
				}
				if int64(len(data)) > n {
					o.Write(data[:int64(len(data))-n])
				}
				return nil
			}
			_, err := io.CopyN(o, r, n)
			if err == io.EOF {
				err = nil
			}
			return err
		}
		br := asBufReader(r)
		if minus {
			data, err := io.ReadAll(br)
			if err != nil {
				return err
			}
			lines := splitKeep(string(data))
			if int64(len(lines)) > n {
				for _, l := range lines[:int64(len(lines))-n] {
					o.WriteString(l)
				}
			}
			return nil
		}
		for i := int64(0); i < n; i++ {
			line, err := br.ReadString('\n')
			if _, werr := o.WriteString(line); werr != nil {
				return werr
			}
			if err != nil {
				break
			}
		}
		return nil
	})
	return o.done(st)
}

func displayName(n string) string {
	if n == "-" {
		return "standard input"
	}
	return n
}

// splitKeep splits into lines keeping their newlines.
func splitKeep(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func tail(e *Env, args []string) int {
	files, c, ok := countOptions(e, "tail", "qvfF", args)
	if !ok {
		return 1
	}
	n, plus, _, bytesMode := c.n, c.plus, c.minus, c.bytes
	o := e.out()
	header := fileHeaders(o, len(files) > 1)
	st := e.inputs("tail", files, func(name string, r io.Reader) error {
		header(name)
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if bytesMode {
			switch {
			case plus:
				if n > 0 && n-1 < int64(len(data)) {
					o.Write(data[n-1:])
				} else if n == 0 {
					o.Write(data)
				}
			case n < int64(len(data)):
				o.Write(data[int64(len(data))-n:])
			default:
				o.Write(data)
			}
			return nil
		}
		lines := splitKeep(string(data))
		var sel []string
		switch {
		case plus:
			if n == 0 {
				n = 1
			}
			if n-1 < int64(len(lines)) {
				sel = lines[n-1:]
			}
		case n < int64(len(lines)):
			sel = lines[int64(len(lines))-n:]
		default:
			sel = lines
		}
		for _, l := range sel {
			o.WriteString(l)
		}
		return nil
	})
	return o.done(st)
}

func wc(e *Env, args []string) int {
	fl := newFlags("wc", "lwcmL", "")
	files, err := fl.parse(args)
	if err != nil {
		e.errf("wc", "%v", err)
		return 1
	}
	show := map[byte]bool{'l': fl.has('l'), 'w': fl.has('w'), 'c': fl.has('c') || fl.has('m')}
	if !fl.has('l') && !fl.has('w') && !fl.has('c') && !fl.has('m') {
		show = map[byte]bool{'l': true, 'w': true, 'c': true}
	}
	type counts struct {
		l, w, c int64
		name    string
	}
	var all []counts
	var total counts
	var totalBytes int64
	st := e.inputs("wc", files, func(name string, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		var c counts
		totalBytes += int64(len(data))
		c.l = int64(bytes.Count(data, []byte{'\n'}))
		c.w = int64(len(bytes.Fields(data)))
		if fl.has('m') {
			c.c = int64(len([]rune(string(data))))
		} else {
			c.c = int64(len(data))
		}
		if len(files) > 0 {
			c.name = name
		}
		all = append(all, c)
		total.l += c.l
		total.w += c.w
		total.c += c.c
		return nil
	})
	if len(files) > 1 {
		total.name = "total"
		all = append(all, total)
	}
	nShown := 0
	for _, v := range show {
		if v {
			nShown++
		}
	}
	// GNU wc: one number for one input is unpadded; otherwise the width is that of the
	// total byte count, at least 7 when standard input is among the inputs.
	width := 1
	if nShown > 1 || len(all) > 1 {
		width = len(strconv.FormatInt(totalBytes, 10))
		if len(files) == 0 {
			width = max(width, 7)
		}
	}
	o := e.out()
	for _, c := range all {
		var parts []string
		if show['l'] {
			parts = append(parts, fmt.Sprintf("%*d", width, c.l))
		}
		if show['w'] {
			parts = append(parts, fmt.Sprintf("%*d", width, c.w))
		}
		if show['c'] {
			parts = append(parts, fmt.Sprintf("%*d", width, c.c))
		}
		line := strings.Join(parts, " ")
		if c.name != "" {
			line += " " + c.name
		}
		o.WriteString(line + "\n")
	}
	return o.done(st)
}

func tee(e *Env, args []string) int {
	fl := newFlags("tee", "ai", "")
	files, err := fl.parse(args)
	if err != nil {
		e.errf("tee", "%v", err)
		return 1
	}
	ws := []io.Writer{e.Stdout}
	status := 0
	for _, f := range files {
		w, err := e.Create(f, fl.has('a'))
		if err != nil {
			e.errf("tee", "%s: %v", f, err)
			status = 1
			continue
		}
		defer w.Close()
		ws = append(ws, w)
	}
	if _, err := io.Copy(io.MultiWriter(ws...), e.Stdin); err != nil {
		return writeStatus(err, 1)
	}
	return status
}

func echo(e *Env, args []string) int {
	newline, escapes := true, false
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' || strings.Trim(a[1:], "neE") != "" {
			break
		}
		for _, c := range a[1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	s := strings.Join(args, " ")
	if escapes {
		var stop bool
		s, stop = echoEscapes(s)
		if stop {
			newline = false
		}
	}
	if newline {
		s += "\n"
	}
	if _, err := io.WriteString(e.Stdout, s); err != nil {
		return writeStatus(err, 1)
	}
	return 0
}

// echoEscapes interprets echo -e's escapes; stop is true after \c.
func echoEscapes(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case '\\':
			b.WriteByte('\\')
		case 'c':
			return b.String(), true
		case '0':
			v, j := 0, i+1
			for ; j < len(s) && j < i+4 && s[j] >= '0' && s[j] <= '7'; j++ {
				v = v*8 + int(s[j]-'0')
			}
			b.WriteByte(byte(v))
			i = j - 1
		case 'x':
			v, j := 0, i+1
			for ; j < len(s) && j < i+3 && isHex(s[j]); j++ {
				d, _ := strconv.ParseUint(s[j:j+1], 16, 8)
				v = v*16 + int(d)
			}
			if j == i+1 {
				b.WriteString("\\x")
			} else {
				b.WriteByte(byte(v))
			}
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String(), false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func printf(e *Env, args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		e.errf("printf", "usage: printf format [arguments]")
		return 2
	}
	format, rest := args[0], args[1:]
	var b strings.Builder
	status := 0
	for {
		n, stop, st := formatOnce(&b, format, rest, e)
		if st != 0 {
			status = st
		}
		if stop || n == 0 || n >= len(rest) {
			break
		}
		rest = rest[n:]
	}
	if _, err := io.WriteString(e.Stdout, b.String()); err != nil {
		return writeStatus(err, 1)
	}
	return status
}

// formatOnce applies format once, as bash's printf does; it returns how many arguments
// it consumed and whether \c stopped output.
func formatOnce(b *strings.Builder, format string, args []string, e *Env) (int, bool, int) {
	used, status := 0, 0
	next := func() (string, bool) {
		if used < len(args) {
			used++
			return args[used-1], true
		}
		return "", false
	}
	num := func(s string, ok bool) (int64, float64, bool) {
		if !ok || s == "" {
			return 0, 0, true
		}
		if s[0] == '\'' || s[0] == '"' {
			if len(s) > 1 {
				r := []rune(s[1:])[0]
				return int64(r), float64(r), true
			}
			return 0, 0, true
		}
		t := strings.TrimSpace(s)
		if i, err := strconv.ParseInt(t, 0, 64); err == nil {
			return i, float64(i), true
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return int64(f), f, true
		}
		e.errf("printf", "%s: invalid number", s)
		status = 1
		return 0, 0, false
	}
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c == '\\' {
			if i+1 >= len(format) {
				b.WriteByte('\\')
				continue
			}
			esc, width := oneEscape(format[i+1:])
			if esc == "\x00stop" {
				return used, true, status
			}
			b.WriteString(esc)
			i += width
			continue
		}
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		j := i + 1
		spec := "%"
		for j < len(format) && strings.IndexByte("-+ #0", format[j]) >= 0 {
			spec += string(format[j])
			j++
		}
		for j < len(format) && (format[j] >= '0' && format[j] <= '9' || format[j] == '*' || format[j] == '.') {
			if format[j] == '*' {
				v, _, _ := num(next())
				spec += strconv.FormatInt(v, 10)
			} else {
				spec += string(format[j])
			}
			j++
		}
		for j < len(format) && strings.IndexByte("hlLqjzt", format[j]) >= 0 && format[j] != 'q' {
			j++
		}
		if j >= len(format) {
			e.errf("printf", "%s: invalid conversion specification", format[i:])
			return used, true, 1
		}
		verb := format[j]
		i = j
		switch verb {
		case 's':
			s, _ := next()
			fmt.Fprintf(b, spec+"s", s)
		case 'b':
			s, _ := next()
			out, stop := echoEscapes(strings.ReplaceAll(s, "\\0", "\\0"))
			fmt.Fprintf(b, spec+"s", out)
			if stop {
				return used, true, status
			}
		case 'q':
			s, _ := next()
			fmt.Fprintf(b, spec+"s", shellQuote(s))
		case 'c':
			s, _ := next()
			if s != "" {
				s = s[:1]
			}
			fmt.Fprintf(b, spec+"s", s)
		case 'd', 'i':
			v, _, _ := num(next())
			fmt.Fprintf(b, spec+"d", v)
		case 'u':
			v, _, _ := num(next())
			fmt.Fprintf(b, spec+"d", uint64(v))
		case 'o', 'x', 'X':
			v, _, _ := num(next())
			fmt.Fprintf(b, spec+string(verb), uint64(v))
		case 'e', 'E', 'f', 'F', 'g', 'G':
			_, f, _ := num(next())
			if verb == 'F' {
				verb = 'f'
			}
			if (verb == 'g' || verb == 'G') && !strings.Contains(spec, ".") {
				spec += ".6"
			}
			fmt.Fprintf(b, spec+string(verb), f)
		default:
			e.errf("printf", "%%%c: invalid directive", verb)
			return used, true, 1
		}
	}
	return used, false, status
}

// oneEscape decodes the backslash escape at the start of s (after the backslash); it
// returns the text and how many bytes of s it used.
func oneEscape(s string) (string, int) {
	switch s[0] {
	case 'n':
		return "\n", 1
	case 't':
		return "\t", 1
	case 'r':
		return "\r", 1
	case 'a':
		return "\a", 1
	case 'b':
		return "\b", 1
	case 'f':
		return "\f", 1
	case 'v':
		return "\v", 1
	case 'e', 'E':
		return "\x1b", 1
	case '\\':
		return "\\", 1
	case '"':
		return "\"", 1
	case '\'':
		return "'", 1
	case 'c':
		return "\x00stop", 1
	case '0', '1', '2', '3', '4', '5', '6', '7':
		v, j := 0, 0
		for ; j < len(s) && j < 3 && s[j] >= '0' && s[j] <= '7'; j++ {
			v = v*8 + int(s[j]-'0')
		}
		return string([]byte{byte(v)}), j
	case 'x':
		v, j := 0, 1
		for ; j < len(s) && j < 3 && isHex(s[j]); j++ {
			d, _ := strconv.ParseUint(s[j:j+1], 16, 8)
			v = v*16 + int(d)
		}
		if j == 1 {
			return "\\x", 1
		}
		return string([]byte{byte(v)}), j
	}
	return "\\" + s[:1], 1
}

// shellQuote quotes s for reuse as shell input, as printf %q does.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c == '_' || c == '-' || c == '.' || c == '/' || c == ',' || c == ':' || c == '=' || c == '+' || c == '@' ||
			c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(" \t\n'\"\\$`!&|;()<>*?[]{}~#^", c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func seq(e *Env, args []string) int {
	fl := newFlags("seq", "w", "s")
	fl.negNumbers = true
	fl.longs["equal-width"] = 'w'
	fl.longVals["separator"] = 's'
	nums, err := fl.parse(args)
	if err != nil {
		e.errf("seq", "%v", err)
		return 1
	}
	sep, width := "\n", fl.has('w')
	if fl.has('s') {
		sep = fl.val('s')
	}
	if len(nums) < 1 || len(nums) > 3 {
		e.errf("seq", "missing operand")
		return 1
	}
	vals := make([]float64, len(nums))
	isInt := true
	for i, s := range nums {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			e.errf("seq", "invalid floating point argument: '%s'", s)
			return 1
		}
		vals[i] = v
		if strings.ContainsAny(s, ".eE") {
			isInt = false
		}
	}
	first, incr, last := 1.0, 1.0, vals[len(vals)-1]
	if len(vals) >= 2 {
		first = vals[0]
	}
	if len(vals) == 3 {
		incr = vals[1]
	}
	if incr == 0 {
		e.errf("seq", "invalid Zero increment value: '0'")
		return 1
	}
	prec := 0
	if !isInt {
		for _, s := range nums {
			if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 > prec {
				prec = len(s) - i - 1
			}
		}
	}
	w := 0
	if width {
		w = max(len(strconv.FormatFloat(first, 'f', prec, 64)), len(strconv.FormatFloat(last, 'f', prec, 64)))
	}
	o := e.out()
	n := 0
	for i := 0; ; i++ {
		v := first + float64(i)*incr
		if incr > 0 && v > last+1e-9 || incr < 0 && v < last-1e-9 {
			break
		}
		if n > 0 {
			o.WriteString(sep)
		}
		n++
		s := strconv.FormatFloat(v, 'f', prec, 64)
		if width && len(s) < w {
			s = strings.Repeat("0", w-len(s)) + s
		}
		if _, err := o.WriteString(s); err != nil {
			return writeStatus(err, 1)
		}
	}
	if n > 0 {
		o.WriteString("\n")
	}
	return o.done(0)
}

func basename(e *Env, args []string) int {
	fl := newFlags("basename", "az", "s")
	fl.longs["multiple"] = 'a'
	fl.longs["zero"] = 'z'
	fl.longVals["suffix"] = 's'
	names, err := fl.parse(args)
	if err != nil {
		e.errf("basename", "%v", err)
		return 1
	}
	multi, suffix := fl.has('a') || fl.has('s'), fl.val('s')
	if len(names) == 0 {
		e.errf("basename", "missing operand")
		return 1
	}
	if !multi && len(names) == 2 {
		suffix, names = names[1], names[:1]
	}
	for _, n := range names {
		b := strings.TrimRight(n, "/")
		if b == "" && n != "" {
			b = "/"
		} else {
			b = path.Base(b)
		}
		if suffix != "" && b != suffix {
			b = strings.TrimSuffix(b, suffix)
		}
		fmt.Fprintln(e.Stdout, b)
	}
	return 0
}

func dirname(e *Env, args []string) int {
	names, err := newFlags("dirname", "", "").parse(args)
	if err != nil {
		e.errf("dirname", "%v", err)
		return 1
	}
	if len(names) == 0 {
		e.errf("dirname", "missing operand")
		return 1
	}
	for _, n := range names {
		d := strings.TrimRight(n, "/")
		switch {
		case d == "" && n != "":
			d = "/"
		case !strings.Contains(d, "/"):
			d = "."
		default:
			d = strings.TrimRight(d[:strings.LastIndexByte(d, '/')], "/")
			if d == "" {
				d = "/"
			}
		}
		fmt.Fprintln(e.Stdout, d)
	}
	return 0
}

func pwd(e *Env, _ []string) int {
	fmt.Fprintln(e.Stdout, e.Dir)
	return 0
}

func env(e *Env, args []string) int {
	if len(args) > 0 {
		e.errf("env", "running programs is not supported in the toolbox")
		return 125
	}
	for _, kv := range e.Environ() {
		fmt.Fprintln(e.Stdout, kv)
	}
	return 0
}
