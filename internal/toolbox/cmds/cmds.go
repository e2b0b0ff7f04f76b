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

func init() {
	for name, f := range map[string]Func{
		"cat": cat, "head": head, "tail": tail, "wc": wc, "tee": tee,
		"echo": echo, "printf": printf, "seq": seq, "basename": basename, "dirname": dirname,
		"true": func(*Env, []string) int { return 0 }, "false": func(*Env, []string) int { return 1 },
		"grep": grep, "egrep": egrep, "fgrep": fgrep,
		"sort": sortCmd, "uniq": uniq, "cut": cut, "tr": tr,
		"sed": sed, "awk": awk, "diff": diff, "cmp": cmp,
		"find": find, "ls": ls, "test": test, "[": bracketCmd,
		"sha256sum": sha256sum, "md5sum": md5sum, "jq": jq, "xargs": xargs,
		"pwd": pwd, "env": env, "mkdir": mkdir, "rm": rm, "touch": touch,
	} {
		register(name, f)
	}
}

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

// flagSet is a tiny getopt: single-letter flags, bundled (-nr), with values (-k2 or -k 2).
type flagSet struct {
	cmd      string
	bools    string // letters taking no value
	values   string // letters taking a value
	set      map[byte]bool
	vals     map[byte][]string
	numFlag  string // "-5" style numeric shorthand (head/tail), if allowed
	longs    map[string]byte
	longVals map[string]byte
}

func newFlags(cmd, bools, values string) *flagSet {
	return &flagSet{cmd: cmd, bools: bools, values: values, set: map[byte]bool{}, vals: map[byte][]string{},
		longs: map[string]byte{}, longVals: map[string]byte{}}
}

func (f *flagSet) has(c byte) bool { return f.set[c] }
func (f *flagSet) val(c byte) string {
	v := f.vals[c]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// parse returns the operands, or an error message.
func (f *flagSet) parse(args []string, allowNum bool) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "--") {
			name, v, hasV := strings.Cut(a[2:], "=")
			if c, ok := f.longs[name]; ok {
				f.set[c] = true
				continue
			}
			if c, ok := f.longVals[name]; ok {
				if !hasV {
					if i+1 >= len(args) {
						return nil, fmt.Errorf("option '--%s' requires an argument", name)
					}
					i++
					v = args[i]
				}
				f.set[c] = true
				f.vals[c] = append(f.vals[c], v)
				continue
			}
			return nil, fmt.Errorf("unrecognized option '%s'", a)
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		if allowNum && a[1] >= '0' && a[1] <= '9' {
			f.numFlag = a[1:]
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			switch {
			case strings.IndexByte(f.bools, c) >= 0:
				f.set[c] = true
			case strings.IndexByte(f.values, c) >= 0:
				v := a[j+1:]
				if v == "" {
					if i+1 >= len(args) {
						return nil, fmt.Errorf("option requires an argument -- '%c'", c)
					}
					i++
					v = args[i]
				}
				f.set[c] = true
				f.vals[c] = append(f.vals[c], v)
				j = len(a)
			default:
				return nil, fmt.Errorf("invalid option -- '%c'", c)
			}
		}
	}
	return rest, nil
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
