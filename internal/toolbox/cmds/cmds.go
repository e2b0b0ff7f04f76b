package cmds

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Env is what a command sees: its standard streams, working directory and environment.
type Env struct {
	Ctx    context.Context
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Dir is the absolute working directory; relative paths resolve against it.
	Dir string
	// Getenv returns an exported shell variable, or "".
	Getenv func(string) string
	// Environ lists the exported shell variables as NAME=value.
	Environ func() []string
	// Run runs another toolbox command (for xargs) with the given streams.
	Run func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// Func is one command: it returns its exit status.
type Func func(e *Env, args []string) int

var registry = map[string]Func{}

func register(name string, f Func) { registry[name] = f }

// Lookup returns the command called name.
func Lookup(name string) (Func, bool) {
	f, ok := registry[name]
	return f, ok
}

// Names lists every command, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NotFound is the message for a command outside the toolbox.
func NotFound(name string) string {
	return fmt.Sprintf("%s: command not found (the toolbox runs no programs, not even ones on PATH; "+
		"available: %s and the shell builtins)", name, strings.Join(Names(), " "))
}

// Path resolves p against the working directory.
func (e *Env) Path(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(e.Dir, p)
}

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }

// Open opens a file for reading; "-" and /dev/stdin are standard input, /dev/null is empty.
func (e *Env) Open(name string) (io.ReadCloser, error) {
	switch name {
	case "-", "/dev/stdin":
		return nopCloser{e.Stdin}, nil
	case "/dev/null":
		return nopCloser{strings.NewReader("")}, nil
	}
	f, err := os.Open(e.Path(name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && strings.HasPrefix(name, "-") {
			return nil, errors.New("No such file or directory (read as an operand: options go before the first operand)")
		}
		return nil, cleanErr(err)
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, errors.New("Is a directory")
	}
	return f, nil
}

// ReadFile reads a whole file (see Open).
func (e *Env) ReadFile(name string) ([]byte, error) {
	f, err := e.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Create opens a file for writing (truncating, or appending); /dev/null, /dev/stdout and
// /dev/stderr are the obvious streams.
func (e *Env) Create(name string, appendTo bool) (io.WriteCloser, error) {
	switch name {
	case "/dev/null":
		return nopWriteCloser{io.Discard}, nil
	case "/dev/stdout":
		return nopWriteCloser{e.Stdout}, nil
	case "/dev/stderr":
		return nopWriteCloser{e.Stderr}, nil
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(e.Path(name), flag, 0o644)
	if err != nil {
		return nil, cleanErr(err)
	}
	return f, nil
}

// cleanErr turns *PathError into the bare reason, as coreutils prints it.
func cleanErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("No such file or directory")
	case errors.Is(err, os.ErrPermission), errors.Is(err, syscall.EROFS):
		if errors.Is(err, syscall.EROFS) {
			return errors.New("Read-only file system")
		}
		return errors.New("Permission denied")
	case errors.Is(err, syscall.EISDIR):
		return errors.New("Is a directory")
	case errors.Is(err, syscall.ENOTDIR):
		return errors.New("Not a directory")
	}
	return err
}

// CleanErr is cleanErr for the shell's redirection messages.
func CleanErr(err error) error { return cleanErr(err) }

// errf prints "cmd: message" to stderr.
func (e *Env) errf(cmd, format string, a ...any) {
	fmt.Fprintf(e.Stderr, cmd+": "+format+"\n", a...)
}

// out wraps stdout in a buffer; call the returned flush before returning. A write error
// on a closed pipe maps to status 141, as SIGPIPE does for a real process.
type outBuf struct {
	*bufio.Writer
}

func (e *Env) out() outBuf { return outBuf{bufio.NewWriterSize(e.Stdout, 32*1024)} }

// done flushes and returns status, or 141 when the reader went away.
func (o outBuf) done(status int) int {
	if err := o.Flush(); err != nil {
		return writeStatus(err, status)
	}
	return status
}

func writeStatus(err error, status int) int {
	if errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) {
		return 141
	}
	return 1
}

// BrokenPipe reports whether err means the reader went away.
func BrokenPipe(err error) bool {
	return errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE)
}

// inputs calls fn for each named file (or stdin when none), printing errors; it returns 1
// if any file failed.
func (e *Env) inputs(cmd string, files []string, fn func(name string, r io.Reader) error) int {
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, f := range files {
		rc, err := e.Open(f)
		if err != nil {
			e.errf(cmd, "%s: %v", f, err)
			status = 1
			continue
		}
		err = fn(f, rc)
		rc.Close()
		if err != nil {
			if BrokenPipe(err) {
				return 141
			}
			e.errf(cmd, "%s: %v", f, err)
			status = 1
		}
	}
	return status
}

// readLines splits data into lines without their newlines; a missing final newline is
// tolerated.
func splitLines(data string) []string {
	if data == "" {
		return nil
	}
	data = strings.TrimSuffix(data, "\n")
	return strings.Split(data, "\n")
}

// flagSet is the one option parser of every toolbox command: POSIX getopt (XBD 12.2,
// guideline 9), without GNU's permutation. Options end at the first operand (a lone "-" is
// an operand) and after "--", so a workspace file named "-v" that a glob expands after the
// pattern of `grep -q TODO *` stays a file instead of inverting the search.
// Single-letter options bundle (-nr) and take values attached or apart (-k2, -k 2).
type flagSet struct {
	cmd      string
	bools    string // letters taking no value
	values   string // letters taking a value
	optional string // letters taking a value only when attached (sed's -i[SUFFIX])
	set      map[byte]bool
	vals     map[byte][]string
	// order lists every option given with a value, in command-line order, for commands
	// where that order matters (sed's -e and -f, jq's variables).
	order []optValue
	// numFlag is the "-5" shorthand of head and tail, when numShorthand allows it.
	numFlag      string
	numShorthand bool
	// negNumbers makes an argument such as -5 or -.5 an operand (seq's negative numbers).
	negNumbers bool
	longs      map[string]byte // long options taking no value
	longVals   map[string]byte // long options taking a value (--key=V or --key V)
	longArgs   map[string]int  // values a longVals option takes when not 1 (jq's --arg NAME VALUE)
}

// optValue is one option that took values, as order records it.
type optValue struct {
	c    byte
	vals []string
}

func newFlags(cmd, bools, values string) *flagSet {
	return &flagSet{cmd: cmd, bools: bools, values: values, set: map[byte]bool{}, vals: map[byte][]string{},
		longs: map[string]byte{}, longVals: map[string]byte{}, longArgs: map[string]int{}}
}

func (f *flagSet) has(c byte) bool { return f.set[c] }
func (f *flagSet) val(c byte) string {
	v := f.vals[c]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// operandHint ends every option error: what to do when the "option" was meant as an operand.
const operandHint = " (options go before the first operand; put -- before operands that start with '-')"

// parse returns the operands: every argument from the first one that is not an option on,
// or after "--". Errors name the offending option.
func (f *flagSet) parse(args []string) ([]string, error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return args[i+1:], nil
		case len(a) < 2 || a[0] != '-':
			return args[i:], nil
		case f.negNumbers && (a[1] >= '0' && a[1] <= '9' || a[1] == '.'):
			return args[i:], nil
		case strings.HasPrefix(a, "--"):
			n, err := f.long(args, i)
			if err != nil {
				return nil, err
			}
			i += n
		case f.numShorthand && a[1] >= '0' && a[1] <= '9':
			f.numFlag = a[1:]
		default:
			n, err := f.short(args, i)
			if err != nil {
				return nil, err
			}
			i += n
		}
	}
	return nil, nil
}

// long parses the long option args[i]; it returns how many further arguments it consumed.
func (f *flagSet) long(args []string, i int) (int, error) {
	name, v, hasV := strings.Cut(args[i][2:], "=")
	if c, ok := f.longs[name]; ok {
		if hasV && strings.IndexByte(f.optional, c) < 0 {
			return 0, fmt.Errorf("option '--%s' doesn't allow an argument", name)
		}
		f.set[c] = true
		return 0, nil
	}
	c, ok := f.longVals[name]
	if !ok {
		return 0, fmt.Errorf("unrecognized option '%s'"+operandHint, args[i])
	}
	n := max(f.longArgs[name], 1)
	var vals []string
	used := 0
	if hasV {
		vals = append(vals, v)
	}
	for len(vals) < n {
		if i+used+1 >= len(args) {
			return 0, fmt.Errorf("option '--%s' requires %d argument(s)", name, n)
		}
		used++
		vals = append(vals, args[i+used])
	}
	f.record(c, vals...)
	return used, nil
}

// short parses the bundle of single-letter options args[i]; it returns how many further
// arguments it consumed.
func (f *flagSet) short(args []string, i int) (int, error) {
	a := args[i]
	for j := 1; j < len(a); j++ {
		c := a[j]
		switch {
		case strings.IndexByte(f.bools, c) >= 0:
			f.set[c] = true
		case strings.IndexByte(f.optional, c) >= 0:
			f.record(c, a[j+1:])
			return 0, nil
		case strings.IndexByte(f.values, c) >= 0:
			if v := a[j+1:]; v != "" {
				f.record(c, v)
				return 0, nil
			}
			if i+1 >= len(args) {
				return 0, fmt.Errorf("option requires an argument -- '%c'", c)
			}
			f.record(c, args[i+1])
			return 1, nil
		default:
			return 0, fmt.Errorf("invalid option -- '%c'"+operandHint, c)
		}
	}
	return 0, nil
}

func (f *flagSet) record(c byte, vals ...string) {
	f.set[c] = true
	f.vals[c] = append(f.vals[c], vals...)
	f.order = append(f.order, optValue{c: c, vals: vals})
}

// asBufReader reuses a shared buffered stdin, so that a command that stops early (head,
// grep -m) leaves the rest of the input to the next command, as a seekable file would.
func asBufReader(r io.Reader) *bufio.Reader {
	if nc, ok := r.(nopCloser); ok {
		r = nc.Reader
	}
	if br, ok := r.(*bufio.Reader); ok {
		return br
	}
	return bufio.NewReaderSize(r, 64*1024)
}

func newBufWriter(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 32*1024) }
