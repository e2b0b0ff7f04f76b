package main

import (
	"errors"
	"os"
	"os/signal"
	"runtime"
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
	// The agent is traced by the thread that starts it, and every ptrace request must come
	// from that thread: this goroutine keeps it to the end.
	runtime.LockOSThread()
	started := time.Now()
	sigs, chld := notifySignals()
	k := newKiller()
	k.claimOrphans()

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
		// The deadline is the agent's: counted from the go-ahead, however long this init
		// waited for it (a warm sandbox's is started and attested ahead of its run's turn).
		started = time.Now()
	}
	a, err := start(agentSpec{argv: cfg.argv, env: os.Environ(), files: []uintptr{uintptr(stdin), 1, 2}, rlimitAS: cfg.rlimitAS})
	if err != nil {
		code := exitCannotExec
		var se *startError
		if errors.As(err, &se) {
			code = se.code
		}
		logf("start " + cfg.argv[0] + ": " + err.Error())
		return code
	}

	var deadline <-chan time.Time
	if cfg.timeout > 0 {
		deadline = time.After(cfg.timeout - time.Since(started))
	}
	killed := k.supervise(a, sigs, chld, deadline, cfg.grace, nil)
	k.finish(a, chld)
	if killed == reasonTimeout {
		logf("deadline " + cfg.timeout.String() + " reached; killed all processes")
		return exitDeadline
	}
	return a.exitCode()
}

// notifySignals starts catching the signals the init forwards (and SIGPIPE) and, on a
// channel of its own, SIGCHLD.
func notifySignals() (sigs, chld chan os.Signal) {
	// Handling SIGPIPE makes a closed stderr an error instead of a fatal signal. Handled
	// (unlike ignored) signals are reset to their defaults in the child.
	sigs = make(chan os.Signal, 16)
	signal.Notify(sigs, append(forwarded, syscall.SIGPIPE)...)
	// Every other signal is caught and dropped: the agent shares our UID, so it may signal
	// us, and PID 1 receives whatever it has a handler for; the Go runtime handles them all,
	// and one it does not relay (SIGABRT, SIGTRAP, SIGSYS, ...) would crash the init, cutting
	// the run short on the agent's say-so. Caught signals are reset in the agent's execve.
	drop := make(chan os.Signal, 1)
	signal.Notify(drop)
	go func() {
		for range drop {
		}
	}()
	// SIGCHLD gets its own channel: a full one already holds a wakeup, so a flood of other
	// signals from the agent can never make the reaper miss an exit.
	chld = make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	return sigs, chld
}

// claimOrphans makes the init their subreaper off PID 1 (tests on the host), where orphans
// would otherwise go to the host's init.
func (k *killer) claimOrphans() {
	if k.pid1 {
		return
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		logf("prctl PR_SET_CHILD_SUBREAPER: " + err.Error())
	}
}

// reasonTimeout is what supervise returns when deadline stopped the agent.
const reasonTimeout = "timeout"

// supervise runs the agent until it exits, reaping, forwarding signals, and stopping
// everything (SIGTERM, grace, SIGKILL) at deadline or at the first reason received on stop.
// It returns what stopped it: reasonTimeout, a reason from stop, or "" if nothing did.
func (k *killer) supervise(a *agent, sigs, chld <-chan os.Signal, deadline <-chan time.Time, grace time.Duration, stop <-chan string) (killed string) {
	var graceOver <-chan time.Time
	stopAll := func(reason string) {
		if killed != "" {
			return
		}
		killed = reason
		k.killAll(syscall.SIGTERM)
		graceOver = time.After(grace)
	}
	for !a.ended() {
		select {
		case <-chld:
			a.collect()
		case s := <-sigs:
			if s != syscall.SIGPIPE {
				// The agent is unreaped until collect reaps it, so its pid cannot be reused yet.
				_ = syscall.Kill(a.pid, s.(syscall.Signal))
			}
		case <-deadline:
			deadline = nil
			stopAll(reasonTimeout)
		case reason := <-stop:
			stopAll(reason)
		case <-graceOver:
			k.killAll(syscall.SIGKILL)
		}
	}
	return killed
}

// finish, once the agent has exited, kills and reaps every other process before the agent's
// held exit completes, then whatever is left.
func (k *killer) finish(a *agent, chld <-chan os.Signal) {
	k.killOthers(a, chld)
	a.release()
	k.killRest(a, chld)
}

// agent is the one child the init supervises. The init traces it (PTRACE_TRACEME before its
// execve) for one reason: PTRACE_O_TRACEEXIT stops it inside its exit, before it is a zombie,
// before its descriptors close, before anything else can see that it exited. The init then
// kills and reaps every other process and only then lets the exit complete (killOthers,
// release), so no process of the container outlives the agent's exit: whatever the agent
// left (its output, its exit status, its files) is final when that exit is reported. Every
// other stop is passed on: a signal is delivered as if untraced (a stop signal stops it only
// for that moment: the legacy tracer cannot tell a group-stop from the signal), an exec goes on.
type agent struct {
	pid      int
	exiting  bool               // held in its exit: status is the one it exits with
	released bool               // its held exit was let go on
	reaped   bool               // collected by wait
	status   syscall.WaitStatus // its exit status, from the exit stop or its reaping
	// cutShort: it was reaped while the init held its exit, before the init released it:
	// another process SIGKILLed it there, and that process may have outlived its exit.
	cutShort bool
	// unverified: the init could not confirm that every other process was dead before it
	// let the exit go on (/proc unreadable, or processes left at cleanupLimit): something
	// may have outlived the exit, so its status is not reported (fail closed, as cutShort).
	unverified bool
}

// traceOptions: stop at exit; an exec stops as an event, not as a SIGTRAP the agent would
// die of; if the init dies, the kernel kills the agent.
const traceOptions = unix.PTRACE_O_TRACEEXIT | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_EXITKILL

// traceAgent takes the child pid, just started with PTRACE_TRACEME, at the SIGTRAP stop after
// its execve, sets the trace options and lets it run. With rlimitAS > 0 it first sets the
// child's RLIMIT_AS, soft and hard, with prlimit: in force from the agent's first instruction,
// and never on a Go program. (An earlier design set it in a re-exec of this Go program just
// before its execve of the agent: that runtime had reserved more address space than an
// agent's cap, so any heap growth after the setrlimit, which a loaded host makes likely,
// killed it with "fatal error: runtime: out of memory" before the agent ran, about 1 start in
// 300 under load: an agent that never ran, graded FAILURE.)
func traceAgent(pid int, rlimitAS uint64) (*agent, error) {
	a := &agent{pid: pid}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &startError{exitCannotExec, errors.New("wait for the agent's exec: " + err.Error())}
		}
		break
	}
	if !ws.Stopped() { // killed before it ran (the supervisor's watch)
		a.reaped, a.status = true, ws
		return a, nil
	}
	if rlimitAS > 0 {
		if err := unix.Prlimit(pid, unix.RLIMIT_AS, &unix.Rlimit{Cur: rlimitAS, Max: rlimitAS}, nil); err != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return nil, &startError{exitUsage, errors.New("set the agent's RLIMIT_AS: " + err.Error() + "; the agent was not started")}
		}
	}
	if err := unix.PtraceSetOptions(pid, traceOptions); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return nil, &startError{exitCannotExec, errors.New("trace the agent's exit: " + err.Error())}
	}
	if err := unix.PtraceCont(pid, 0); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return nil, &startError{exitCannotExec, errors.New("start the agent: " + err.Error())}
	}
	return a, nil
}

// ended reports whether the agent exited: held in its exit, or already reaped (a SIGKILL
// ends a process without the exit stop).
func (a *agent) ended() bool { return a.exiting || a.reaped }

// collect reaps every child that has exited, orphans included, and handles the agent's stops.
func (a *agent) collect() {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || wpid <= 0 {
			return
		}
		if wpid != a.pid || a.reaped {
			continue
		}
		switch {
		case !ws.Stopped():
			a.reaped = true
			if a.exiting {
				a.cutShort = !a.released
			} else {
				a.status = ws
			}
		case ws.TrapCause() == unix.PTRACE_EVENT_EXIT:
			msg, err := unix.PtraceGetEventMsg(a.pid)
			a.exiting, a.status = true, syscall.WaitStatus(msg)
			if err != nil { // the stop ended under us: its status is unknown, count it killed
				a.status = syscall.WaitStatus(syscall.SIGKILL)
			}
			if a.status.Signaled() && a.status.Signal() == syscall.SIGKILL {
				// Killed (the OOM killer, the deadline): 137 is a failure whatever happens
				// next, and holding it would keep its memory charged while the rest is killed.
				a.release()
			}
		case ws.TrapCause() > 0: // an exec: go on
			_ = unix.PtraceCont(a.pid, 0)
		default: // a signal: deliver it
			_ = unix.PtraceCont(a.pid, int(ws.StopSignal()))
		}
	}
}

// release lets the agent's held exit complete.
func (a *agent) release() {
	if !a.exiting || a.released || a.reaped {
		return
	}
	a.released = true
	_ = unix.PtraceCont(a.pid, 0)
}

// exitCode maps the agent's exit to ours: its status as shells map it, or 128+SIGKILL when
// its exit was cut short (see agent.cutShort).
func (a *agent) exitCode() int {
	if a.cutShort {
		logf("the agent was killed while the init held its exit, before every other process was dead; its exit status is not reported")
		return 128 + int(syscall.SIGKILL)
	}
	if a.unverified {
		logf("the init could not confirm that every other process was dead before the agent's exit completed; its exit status is not reported")
		return 128 + int(syscall.SIGKILL)
	}
	return exitCode(a.status)
}

// exitCode maps a wait status to ours the way shells do.
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

// killOthers SIGKILLs and reaps every process but the agent, held in its exit, until no other
// is alive (or cleanupLimit passes); chld wakes it early. The agent is spared by pid (a
// SIGKILL would end the stop of an exit that is not a group exit); where /proc is not this
// PID namespace's (PID 1 in tests), kill(-1) is used, which the kernel drops for a process in
// a group exit, the usual exit.
func (k *killer) killOthers(a *agent, chld <-chan os.Signal) {
	if !a.exiting || a.released || a.reaped {
		return
	}
	self, agentPid, err := procPIDs(a.pid)
	if err != nil {
		logf(err.Error() + "; killing without being able to check that every other process is gone")
	}
	own := err == nil && self == os.Getpid()
	limit := time.NewTimer(cleanupLimit)
	defer limit.Stop()
	for {
		switch {
		case own && k.pid1: // from 0: processes entered from outside the namespace too
			killDescendants(0, syscall.SIGKILL, k.self, agentPid)
		case own:
			killDescendants(k.self, syscall.SIGKILL, agentPid)
		}
		if k.pid1 || !own {
			// Needs no /proc and no descriptor, so a process that starved ours (RLIMIT_NOFILE)
			// dies too; the kernel drops it for the agent in its group exit, and one that is
			// not is cut short (137).
			k.killAll(syscall.SIGKILL)
		}
		a.collect()
		if err != nil {
			a.unverified = true
			return
		}
		if a.reaped {
			return
		}
		n, lerr := liveOthers(self, agentPid)
		if lerr == nil && n == 0 {
			return
		}
		select {
		case <-chld:
		case <-time.After(10 * time.Millisecond):
		case <-limit.C:
			why := "processes still running"
			if lerr != nil {
				why = "/proc unreadable (" + lerr.Error() + ")"
			}
			logf(why + " " + strconv.Itoa(int(cleanupLimit/time.Millisecond)) +
				"ms after SIGKILL while the agent's exit was held; letting it go on, its status unreported")
			a.unverified = true
			return
		}
	}
}

// killRest SIGKILLs and reaps everything left after the agent exited, until no child is
// left or cleanupLimit passes; chld wakes it early. Forwarded signals now go to no one.
func (k *killer) killRest(a *agent, chld <-chan os.Signal) {
	limit := time.NewTimer(cleanupLimit)
	defer limit.Stop()
	for {
		k.killAll(syscall.SIGKILL)
		a.collect()
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil); err == unix.ECHILD {
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
	k.abandon("the supervisor is gone (" + f.Name() + " closed)")
}

// abandon ends the init with exitOrphaned once nobody is left to stop, reap or grade the
// agent: every process is killed at once, and the init exits.
func (k *killer) abandon(why string) {
	exiting.Lock() // never released: this goroutine ends the process
	logf(why + "; killing all processes")
	k.killAll(syscall.SIGKILL)
	if !k.pid1 {
		// As PID 1 our exit kills the rest of the namespace; elsewhere nothing would.
		for end := time.Now().Add(cleanupLimit); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if _, live, err := descendants(k.self); err == nil && len(live) == 0 {
				break
			}
			k.killAll(syscall.SIGKILL)
		}
	}
	os.Exit(exitOrphaned)
}
