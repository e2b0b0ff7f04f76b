package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/internal/kubeproto"
)

// Exit codes of the init itself; any other code is the agent's.
const (
	exitUsage       = 125                    // the init was called wrongly: a ceval bug, not the agent's
	exitNoGo        = 124                    // --wait-go and the host closed stdin without the go-ahead
	exitCannotExec  = 126                    // ARGV[0] exists but could not be executed
	exitNotFound    = 127                    // ARGV[0] does not exist
	exitDeadline    = 137                    // --timeout reached: 128+SIGKILL
	exitOrphaned    = kubeproto.ExitOrphaned // --supervisor-fifo closed or the control connection lost: the host's supervisor is gone
	defaultGrace    = 5 * time.Second
	defaultPathList = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

const usage = "usage: ceval-init [--timeout DURATION] [--grace DURATION] [--wait-go] [--supervisor-fifo PATH] [--rlimit-as BYTES] -- ARGV...\n" +
	"       ceval-init --control ADDR"

// config is the parsed command line.
type config struct {
	timeout time.Duration // 0: no deadline
	grace   time.Duration
	waitGo  bool // read "go\n" on stdin before starting the agent, which then gets /dev/null
	// supervisorFIFO is a FIFO whose write end only the host's supervisor holds: its EOF
	// means the supervisor is gone, and everything is killed (see watchSupervisor).
	supervisorFIFO string
	// rlimitAS (bytes; 0: none) is set as the agent's RLIMIT_AS, soft and hard, at its exec
	// stop: rootless without a memory cgroup, it bounds each of the agent's processes.
	rlimitAS uint64
	argv     []string
	// control is the address of control mode (kube.go): the run's parameters and the
	// agent's command come over the connection, so no other option is taken.
	control string
}

func main() {
	if sh := judgeShellStartedAs(); sh != "" { // judgeshell.go: a Codex judge's shell
		os.Exit(judgeShellAsShell(sh, os.Args[1:]))
	}
	if why := judgeShellOverBusybox(); why != "" {
		logf(why)
		os.Exit(exitNotFound)
	}
	if len(os.Args) > 1 && os.Args[1] == mcpRelayArg { // mcp.go: not an init, a program of the agent's CLI
		os.Exit(mcpRelay(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == judgeShellArg { // judgeshell.go: a judge agent's shell commands
		os.Exit(judgeShell(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == mcpServeArg { // mcp.go: a service's process
		os.Exit(mcpServe(os.Args[2:]))
	}
	// Every OS thread counts against the container's pids.max; the init needs no parallelism.
	runtime.GOMAXPROCS(1)
	// The agent runs as our UID: without this it could read or write our memory through
	// /proc/1/mem or ptrace us. Its own execve makes the agent dumpable again, as it should be.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	cfg, err := parseArgs(os.Args[1:])
	if err != nil {
		logf(err.Error() + "; " + usage)
		os.Exit(exitUsage)
	}
	var code int
	if cfg.control != "" {
		code = runControl(cfg.control)
	} else {
		code = run(cfg)
	}
	exiting.Lock() // the supervisor watch may be ending the process with its own code
	os.Exit(code)
}

// exiting is held by whatever ends the process, so it ends once, with one exit code.
var exiting sync.Mutex

// parseArgs reads the options up to the mandatory "--"; everything after it is the agent's.
func parseArgs(args []string) (config, error) {
	cfg := config{grace: defaultGrace}
	if len(args) > 0 && (args[0] == "--control" || strings.HasPrefix(args[0], "--control=")) {
		addr, hasValue := strings.CutPrefix(args[0], "--control=")
		rest := args[1:]
		if !hasValue && len(rest) > 0 {
			addr, rest = rest[0], rest[1:]
		}
		if addr == "" {
			return cfg, errors.New("--control needs an address (HOST:PORT)")
		}
		if len(rest) > 0 {
			return cfg, errors.New("--control takes no other option and no command (they come over the connection)")
		}
		cfg.control = addr
		return cfg, nil
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			cfg.argv = args[i+1:]
			if len(cfg.argv) == 0 || cfg.argv[0] == "" {
				return cfg, errors.New("no command after --")
			}
			return cfg, nil
		}
		if arg == "--wait-go" {
			cfg.waitGo = true
			continue
		}
		name, value, hasValue := strings.Cut(arg, "=")
		if name == "--rlimit-as" {
			if !hasValue {
				if i+1 >= len(args) {
					return cfg, errors.New(name + " needs a byte count")
				}
				i++
				value = args[i]
			}
			n, err := strconv.ParseUint(value, 10, 64)
			if err != nil || n == 0 {
				return cfg, errors.New(name + ": want a positive byte count, got " + strconv.Quote(value))
			}
			cfg.rlimitAS = n
			continue
		}
		if name == "--supervisor-fifo" {
			if !hasValue {
				if i+1 >= len(args) {
					return cfg, errors.New(name + " needs a path")
				}
				i++
				value = args[i]
			}
			if !strings.HasPrefix(value, "/") {
				return cfg, errors.New(name + ": want an absolute path, got " + strconv.Quote(value))
			}
			cfg.supervisorFIFO = value
			continue
		}
		var dst *time.Duration
		switch name {
		case "--timeout":
			dst = &cfg.timeout
		case "--grace":
			dst = &cfg.grace
		default:
			return cfg, errors.New("unknown option " + strconv.Quote(arg))
		}
		if !hasValue {
			if i+1 >= len(args) {
				return cfg, errors.New(name + " needs a duration")
			}
			i++
			value = args[i]
		}
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return cfg, errors.New(name + ": invalid duration " + strconv.Quote(value))
		}
		*dst = d
	}
	return cfg, errors.New("missing -- before the command")
}

// startError is why the agent could not be started, with the exit code a shell would use.
type startError struct {
	code int
	err  error
}

func (e *startError) Error() string { return e.err.Error() }

// waitForGo blocks until the host writes "go\n" on stdin: the host attests this process's
// isolation (after its execve, before any agent code runs) and only then lets the agent
// start. It returns a /dev/null descriptor to be the agent's stdin instead.
func waitForGo() (int, error) {
	var buf [3]byte
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(0, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil || m == 0 {
			return -1, errors.New("no go-ahead from the host (stdin closed); the agent was not started")
		}
		n += m
	}
	if string(buf[:]) != "go\n" {
		return -1, errors.New("unexpected go-ahead " + strconv.Quote(string(buf[:])) + "; the agent was not started")
	}
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, errors.New("open /dev/null: " + err.Error())
	}
	return fd, nil
}

// agentSpec is how the agent is started.
type agentSpec struct {
	argv     []string
	env      []string  // its whole environment; PATH in it finds argv[0]
	dir      string    // its working directory; "": ours
	files    []uintptr // its stdin, stdout and stderr
	setsid   bool      // a session (and process group) of its own
	rlimitAS uint64    // > 0: the agent's RLIMIT_AS, set at its exec stop (traceAgent)
}

// start runs s.argv as a child, traced by this thread (see agent), which must stay locked
// to its OS thread; with rlimitAS > 0 the child's RLIMIT_AS is set before its first
// instruction (traceAgent).
func start(s agentSpec) (*agent, error) {
	path, err := lookPath(s.argv[0], s.env, s.dir)
	if err != nil {
		return nil, err
	}
	pid, err := syscall.ForkExec(path, s.argv, &syscall.ProcAttr{
		Dir:   s.dir,
		Env:   s.env,
		Files: s.files,
		Sys:   &syscall.SysProcAttr{Ptrace: true, Setsid: s.setsid},
	})
	if err != nil {
		code := exitCannotExec
		if errors.Is(err, syscall.ENOENT) { // e.g. a missing #! interpreter
			code = exitNotFound
		}
		return nil, &startError{code, err}
	}
	return traceAgent(pid, s.rlimitAS)
}

// lookPath resolves name like execvp: as given when it has a slash, else through PATH in env
// (the first PATH= entry, as getenv finds it), where an empty entry means the working
// directory. A relative result is checked relative to dir, the child's working directory
// ("": ours). The first executable regular file wins; a match that is not executable makes it
// 126 rather than 127 when nothing executable is found.
func lookPath(name string, env []string, dir string) (string, error) {
	inDir := func(p string) string {
		if dir != "" && !filepath.IsAbs(p) {
			return filepath.Join(dir, p)
		}
		return p
	}
	if strings.Contains(name, "/") {
		if err := checkExecutable(inDir(name)); err != nil {
			return "", err
		}
		return name, nil
	}
	pathList, ok := getenv(env, "PATH")
	if !ok {
		pathList = defaultPathList
	}
	var firstErr error
	for _, d := range filepath.SplitList(pathList) {
		if d == "" {
			d = "."
		}
		err := checkExecutable(inDir(filepath.Join(d, name)))
		if err == nil {
			return filepath.Join(d, name), nil
		}
		if firstErr == nil && err.(*startError).code == exitCannotExec {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", &startError{exitNotFound, errors.New("executable file not found in $PATH")}
}

// getenv finds key's first entry in env, as getenv(3) does.
func getenv(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		code := exitNotFound
		if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTDIR) {
			code = exitCannotExec
		}
		return &startError{code, err}
	}
	if !fi.Mode().IsRegular() {
		return &startError{exitCannotExec, errors.New(path + ": not a regular file")}
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return &startError{exitCannotExec, &os.PathError{Op: "access", Path: path, Err: err}}
	}
	return nil
}

// logf writes one line to stderr; stdout belongs to the agent. Errors are ignored: there is
// nowhere else to report them.
func logf(msg string) {
	os.Stderr.WriteString("ceval-init: " + msg + "\n")
}
