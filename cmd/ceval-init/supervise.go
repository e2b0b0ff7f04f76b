package main

import (
	"errors"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// forwarded are passed on to the agent. PID 1 of a PID namespace ignores every signal it has
// no handler for, so without this the agent would never see a polite stop.
var forwarded = []os.Signal{
	syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// cleanupLimit bounds the final kill-and-reap once the agent has exited. Only processes we
// may not signal (another UID) or that are stuck in the kernel can outlive it; exiting as
// PID 1 then makes the kernel kill them.
const cleanupLimit = 2 * time.Second

// spareThreads is how many idle OS threads the init keeps for the Go runtime.
const spareThreads = 3

// prewarmThreads makes the Go runtime create n OS threads now, while forks still succeed,
// and keep them idle for later. Under a pids limit the agent can exhaust, a runtime that
// had to create a thread later would crash the init ("failed to create new OS thread").
// Each goroutine blocks in a read: with GOMAXPROCS 1 the runtime must give every one of them
// a thread of its own before this goroutine runs again and sees them all entered.
func prewarmThreads(n int) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	var entered atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b [1]byte
			entered.Add(1)
			_, _ = syscall.Read(fds[0], b[:])
		}()
	}
	for deadline := time.Now().Add(50 * time.Millisecond); entered.Load() < int32(n) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Microsecond)
	}
	_, _ = syscall.Write(fds[1], make([]byte, n))
	wg.Wait()
}

// run supervises cfg.argv to the end and returns the init's exit code.
func run(cfg config) int {
	started := time.Now()
	// Handling SIGPIPE makes a closed stderr an error instead of a fatal signal. Handled
	// (unlike ignored) signals are reset to their defaults in the child.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append(forwarded, syscall.SIGPIPE)...)
	// SIGCHLD gets its own channel: a full one already holds a wakeup, so a flood of other
	// signals from the agent can never make the reaper miss an exit.
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)

	k := newKiller()
	if !k.pid1 {
		// Off PID 1 (tests on the host) orphans would go to the host's init; claim them.
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			logf("prctl PR_SET_CHILD_SUBREAPER: " + err.Error())
		}
	}

	if cfg.supervisorFIFO != "" {
		// Before anything else: a supervisor that died already must not get an agent started.
		f, err := openSupervisorFIFO(cfg.supervisorFIFO)
		if err != nil {
			logf(err.Error() + "; the agent was not started")
			if errors.Is(err, errSupervisorGone) {
				return exitOrphaned
			}
			return exitUsage
		}
		go watchSupervisor(f, k)
	}
	prewarmThreads(spareThreads)
	stdin := 0
	if cfg.waitGo {
		fd, err := waitForGo()
		if err != nil {
			logf(err.Error())
			return exitNoGo
		}
		stdin = fd
	}
	pid, err := start(cfg.argv, stdin, cfg.rlimitAS)
	if err != nil {
		code := exitCannotExec
		var se *startError
		if errors.As(err, &se) {
			code = se.code
		}
		logf("start " + cfg.argv[0] + ": " + err.Error())
		return code
	}

	var deadline, graceOver <-chan time.Time
	if cfg.timeout > 0 {
		deadline = time.After(cfg.timeout - time.Since(started))
	}
	timedOut := false
	var status syscall.WaitStatus
	for exited := false; !exited; {
		select {
		case <-chld:
			status, exited = reap(pid)
		case s := <-sigs:
			if s != syscall.SIGPIPE {
				// The agent is unreaped until reap returns it, so pid cannot be reused yet.
				_ = syscall.Kill(pid, s.(syscall.Signal))
			}
		case <-deadline:
			timedOut = true
			k.killAll(syscall.SIGTERM)
			graceOver = time.After(cfg.grace)
		case <-graceOver:
			k.killAll(syscall.SIGKILL)
		}
	}

	k.killRest(chld)
	if timedOut {
		logf("deadline " + cfg.timeout.String() + " reached; killed all processes")
		return exitDeadline
	}
	return exitCode(status)
}

// reap collects every child that has exited, orphans included, and reports whether the
// agent (pid) was among them and with which status.
func reap(pid int) (syscall.WaitStatus, bool) {
	var agent syscall.WaitStatus
	found := false
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || wpid <= 0 {
			return agent, found
		}
		if wpid == pid {
			agent, found = ws, true
		}
	}
}

// exitCode maps the agent's wait status to ours the way shells do.
func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// killer signals every process the init is responsible for.
type killer struct {
	pid1 bool // PID 1 of a PID namespace: kill(-1) reaches exactly the container
	self int
}

func newKiller() *killer {
	self := os.Getpid()
	return &killer{pid1: self == 1, self: self}
}

// killAll sends sig to every process we supervise. kill(-1) is used only as PID 1: anywhere
// else (tests on the host, maybe as root) it would signal every process on the machine.
func (k *killer) killAll(sig syscall.Signal) {
	if k.pid1 {
		_ = syscall.Kill(-1, sig)
		return
	}
	killDescendants(k.self, sig)
}

// killRest SIGKILLs and reaps everything left after the agent exited, until no child is
// left or cleanupLimit passes; chld wakes it early. Forwarded signals now go to no one.
func (k *killer) killRest(chld <-chan os.Signal) {
	limit := time.NewTimer(cleanupLimit)
	defer limit.Stop()
	for {
		k.killAll(syscall.SIGKILL)
		reap(0)
		if _, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); err == syscall.ECHILD {
			return
		}
		select {
		case <-chld:
		case <-time.After(10 * time.Millisecond):
		case <-limit.C:
			logf("processes still running " + strconv.Itoa(int(cleanupLimit/time.Millisecond)) +
				"ms after SIGKILL; leaving them")
			return
		}
	}
}

// errSupervisorGone is the supervisor's FIFO with no writer left.
var errSupervisorGone = errors.New("the supervisor is gone (its FIFO has no writer)")

// openSupervisorFIFO opens the supervisor's FIFO for reading without blocking (the open
// succeeds whether or not a writer is there) and fails if no writer is left: a supervisor
// that died before we got here gets no agent started. The descriptor is close-on-exec, and
// this process is not dumpable, so the agent can reach it neither by inheritance nor
// through /proc/1/fd.
func openSupervisorFIFO(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open supervisor FIFO", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		syscall.Close(fd)
		return nil, errors.New("supervisor FIFO " + path + ": not a FIFO")
	}
	var buf [1]byte
	for {
		n, err := syscall.Read(fd, buf[:])
		if err == syscall.EINTR || (err == nil && n > 0) {
			continue
		}
		if err == syscall.EAGAIN { // empty, and a writer holds it open
			break
		}
		syscall.Close(fd)
		if err != nil {
			return nil, &os.PathError{Op: "read supervisor FIFO", Path: path, Err: err}
		}
		return nil, errSupervisorGone
	}
	// A non-blocking descriptor: reads wait in the runtime's poller, not on an OS thread.
	return os.NewFile(uintptr(fd), path), nil
}

// watchSupervisor waits for f, the read end of the supervisor's FIFO, to reach EOF: the
// kernel closes the supervisor's write end however it dies (kill -9 included), and the agent
// cannot hold one open instead (the FIFO is read-only to it). Then nobody is left to stop,
// reap or grade the agent, so every process is killed at once and the init exits.
func watchSupervisor(f *os.File, k *killer) {
	var buf [512]byte
	for {
		// Nothing is ever written; data would not count as liveness either.
		if _, err := f.Read(buf[:]); err != nil {
			break
		}
	}
	exiting.Lock() // never released: this goroutine ends the process
	logf("the supervisor is gone (" + f.Name() + " closed); killing all processes")
	k.killAll(syscall.SIGKILL)
	if !k.pid1 {
		// As PID 1 our exit kills the rest of the namespace; elsewhere nothing would.
		for end := time.Now().Add(cleanupLimit); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if _, live := descendants(k.self); len(live) == 0 {
				break
			}
			k.killAll(syscall.SIGKILL)
		}
	}
	os.Exit(exitOrphaned)
}
