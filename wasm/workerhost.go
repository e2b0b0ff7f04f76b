package wasm

// The host side of the worker: starting it under its own UID with no_new_privs, the
// request/reply round trip with its deadline, and stopping it. worker.go is the other side,
// inside the worker process.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

var errWorkerTimeout = errors.New("the worker did not answer in time and was killed")

// workerDied is a worker that exited or broke the protocol; its stderr tail says why.
type workerDied struct {
	err    error
	stderr string
}

func (d *workerDied) Error() string {
	if d.stderr == "" {
		return d.err.Error()
	}
	return fmt.Sprintf("%v; worker stderr: %s", d.err, d.stderr)
}

// roundTrip sends one request and reads its reply, within wait. On a failure of any kind
// the worker is killed (its state is unknown) and the next Execute starts a new one.
func (e *Executor) roundTrip(ctx context.Context, wait time.Duration, send func(io.Writer) error, op byte, v any) error {
	w := e.w
	type result struct {
		sendErr, readErr error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		if r.sendErr = send(w.in); r.sendErr == nil {
			r.sendErr = w.in.Flush()
			if r.sendErr == nil {
				r.readErr = wire.ReadReply(w.out, op, v)
			}
		}
		done <- r
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var err error
	select {
	case r := <-done:
		switch {
		case r.readErr == nil && r.sendErr == nil:
			return nil
		case r.readErr == nil && !errors.Is(r.sendErr, syscall.EPIPE) && !w.exited():
			err = r.sendErr // ours: the request could not be built
		default:
			e.w = nil
			w.stop(0)
			cause := errors.Join(r.sendErr, r.readErr)
			if ps := w.cmd.ProcessState; ps != nil {
				cause = fmt.Errorf("worker %v: %w", ps, cause)
			}
			return &workerDied{err: cause, stderr: w.stderr.String()}
		}
		e.w = nil
		w.stop(0)
		return err
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = errWorkerTimeout
	}
	e.w = nil
	w.stop(0)
	<-done
	return err
}

// worker is one running worker process and what it holds.
type worker struct {
	cmd       *exec.Cmd
	in        *bufio.Writer
	inPipe    io.Closer
	out       *bufio.Reader
	outPipe   io.Closer
	stderr    *tailBuffer
	waited    chan struct{}
	hello     wire.Hello
	modules   map[string]bool // "digest/flags"
	workspace string          // snapshotKey of the loaded workspace view
	reference *task.Dir       // the reference whose view is loaded
	task      string          // graderFilesKey of the loaded task view
	pylib     bool            // pytest's packages are loaded
	// pylibCompiled: a pytest run was answered, so the worker has compiled (or tried to
	// compile) pytest's packages, which it does once.
	pylibCompiled bool
	pkgs          string // python_packages loaded, comma-joined
}

// workerSysProcAttr isolates the worker: its own process group (a terminal's signals go to
// ceval, which decides), killed if ceval dies, and, when ceval is root, the unprivileged
// uid:gid with no supplementary groups. The kernel clears every capability on that switch;
// the worker sets no_new_privs itself before reading any input and refuses to run while
// holding a capability.
func workerSysProcAttr(uid, gid int, asRoot bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if asRoot {
		a.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	return a
}

// startWithNoNewPrivs starts cmd from an OS thread of its own that has no_new_privs set, so
// the worker has it from its first instruction in every thread: set by the worker itself it
// would hold only on the thread that happened to call prctl. The thread stays alive until
// the worker has exited, because Pdeathsig fires when the thread that started the child
// exits; then it exits with its goroutine, still locked, taking its no_new_privs with it.
// readOnly: the thread also gives up every filesystem write (landlock.go) before it starts
// the worker, which inherits that too.
func startWithNoNewPrivs(cmd *exec.Cmd, exited <-chan struct{}, readOnly bool) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			started <- fmt.Errorf("set no_new_privs: %w", err)
			return
		}
		if readOnly {
			if err := denyThreadFSWrites(); err != nil {
				started <- err
				return
			}
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		<-exited
	}()
	return <-started
}

// startWorker starts a run worker (see workerCmd).
func (e *Executor) startWorker() (*worker, error) { return e.startWorkerMode(wire.ModeRun) }

// workerCmd is the command of a worker in mode (wire.ModeRun or wire.ModeCompile): this
// binary re-executed with an empty environment, "/" as its directory and the cache
// directory as its only extra descriptor. A run worker gets the cache only where it can be
// started unable to write it (e.landlock); extra is for tests.
func (e *Executor) workerCmd(mode string, extra ...string) *exec.Cmd {
	cmd := &exec.Cmd{
		// The kernel resolves /proc/self/exe without walking the path to the binary, which
		// the worker's uid may be unable to traverse.
		Path:        "/proc/self/exe",
		Args:        append([]string{"ceval-wasm-worker", wire.WorkerCommand, mode}, extra...),
		Env:         []string{},
		Dir:         "/",
		ExtraFiles:  []*os.File{e.cache},
		SysProcAttr: workerSysProcAttr(e.uid, e.gid, e.asRoot),
	}
	if mode == wire.ModeRun && !e.landlock {
		cmd.Args[2], cmd.ExtraFiles = "", nil
	}
	return cmd
}

// startWorkerMode starts a worker (workerCmd) and checks its handshake.
func (e *Executor) startWorkerMode(mode string) (*worker, error) {
	cmd := e.workerCmd(mode)
	w := &worker{cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, waited: make(chan struct{}), modules: map[string]bool{}}
	cmd.Stderr = w.stderr
	// Our own pipes rather than StdinPipe/StdoutPipe: Wait must not close the read end
	// while a reply is still being read from it.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("wasm worker: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("wasm worker: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = startWithNoNewPrivs(cmd, w.waited, mode != wire.ModeCompile && e.landlock)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("wasm worker: start: %w", err)
	}
	go func() { _ = cmd.Wait(); close(w.waited) }()
	w.in, w.inPipe, w.out, w.outPipe = bufio.NewWriterSize(inW, 256<<10), inW, bufio.NewReaderSize(outR, 64<<10), outR

	got := make(chan error, 1)
	go func() { got <- wire.ReadReply(w.out, wire.OpHello, &w.hello) }()
	select {
	case err = <-got:
	case <-time.After(helloWait):
		err = errors.New("no handshake in time")
	}
	if err == nil {
		err = e.checkHello(&w.hello)
	}
	if err != nil {
		w.stop(0)
		return nil, fmt.Errorf("wasm worker: %v (worker stderr: %q); does this binary call worker.Main (package wasm/worker) on %q?", err, w.stderr.String(), wire.WorkerCommand)
	}
	return w, nil
}

// checkHello fails closed unless the worker is who it should be and holds no privilege.
func (e *Executor) checkHello(h *wire.Hello) error {
	switch {
	case h.Err != "":
		return errors.New(h.Err)
	case e.asRoot && (h.UID != e.uid || h.GID != e.gid || len(h.Groups) != 0):
		return fmt.Errorf("runs as uid %d gid %d groups %v, want %d:%d and no groups", h.UID, h.GID, h.Groups, e.uid, e.gid)
	case h.UID == 0:
		return errors.New("runs as root")
	case !h.NoNewPrivs:
		return errors.New("no_new_privs is not set")
	case h.CapEff|h.CapPrm|h.CapInh|h.CapAmb != 0:
		return errors.New("holds capabilities")
	case h.EnvCount != 0:
		return errors.New("has an environment")
	}
	return nil
}

func (w *worker) exited() bool {
	select {
	case <-w.waited:
		return true
	default:
		return false
	}
}

// stop ends the worker: closing its stdin asks it to exit; after grace it is killed.
func (w *worker) stop(grace time.Duration) {
	w.inPipe.Close()
	if grace > 0 {
		select {
		case <-w.waited:
			return
		case <-time.After(grace):
		}
	}
	_ = w.cmd.Process.Kill()
	<-w.waited
	w.outPipe.Close()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
