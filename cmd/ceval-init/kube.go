package main

import (
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/internal/kubeproto"
)

// Control mode (--control ADDR): the init of a Kubernetes Pod, driven by ceval over one
// connection to ADDR (see internal/kubeproto for the frames). The first connection is the
// controller's: nothing else runs in the container before the agent starts. Every later one
// must open with a nonce the init announced in a FrameOpen, or it is closed at once: the
// agent shares the loopback.

const (
	// relayWait bounds how long an agent's relayed connection waits for the controller's.
	relayWait = 10 * time.Second
	// maxPendingRelays bounds the agent's relayed connections waiting for the controller's,
	// and maxUnmatched the connections to the control port that have not sent a nonce yet;
	// beyond either, a new one is closed at once (the agent only starves itself).
	maxPendingRelays = 64
	maxUnmatched     = 64
	// probeTimeout bounds each probe's connection attempt.
	probeTimeout = 2 * time.Second
)

// control is the init's side of the control channel.
type control struct {
	conn   net.Conn
	wmu    sync.Mutex // one frame at a time on conn
	frames chan frame // read from conn by readFrames
	k      *killer

	// opening is held (read) from a relay's check of relaysClosed to its FrameOpen sent, and
	// (write) by closeRelays: after it, no FrameOpen can follow the agent's Exit.
	opening      sync.RWMutex
	relaysClosed bool

	mu        sync.Mutex
	pending   map[string]chan net.Conn // by nonce: relayed connections awaiting the controller's
	unmatched int                      // connections to the control port without their nonce yet
	relayed   map[net.Conn]bool        // open relayed connections, both sides, closed at the end
	quitting  bool                     // Quit received: the connection's end is no loss
}

type frame struct {
	typ     byte
	payload []byte
}

// runControl serves the controller on addr and returns the init's exit code: 0 after Quit;
// if the control connection is lost, abandon ends the process with exitOrphaned.
func runControl(addr string) int {
	runtime.LockOSThread() // the agent is traced by this thread (see run)
	sigs, chld := notifySignals()
	k := newKiller()
	k.claimOrphans()
	prewarmThreads(spareThreads)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logf("listen for the controller: " + err.Error())
		return exitUsage
	}
	logf("listening " + ln.Addr().String())
	conn, err := ln.Accept()
	if err != nil {
		logf("accept the controller: " + err.Error())
		return exitUsage
	}
	c := &control{conn: conn, frames: make(chan frame), k: k,
		pending: map[string]chan net.Conn{}, relayed: map[net.Conn]bool{}}
	go c.readFrames()
	go c.acceptRelayed(ln)

	f := <-c.frames
	var st kubeproto.Start
	if f.typ != kubeproto.FrameStart {
		c.fail("the first frame is " + strconv.QuoteRune(rune(f.typ)) + ", want Start")
		return exitUsage
	}
	if err := kubeproto.DecodeJSON(f.typ, f.payload, &st); err != nil {
		c.fail(err.Error())
		return exitUsage
	}
	if len(st.Argv) == 0 || st.Argv[0] == "" {
		c.fail("Start has no Argv")
		return exitUsage
	}
	if err := c.sendJSON(kubeproto.FrameAttest, collectAttest(st.Probes)); err != nil {
		return exitUsage // the reader sees the connection's end and abandons
	}
	for ready := false; !ready; {
		f := <-c.frames
		switch f.typ {
		case kubeproto.FrameCopyIn:
			c.copyIn(f)
		case kubeproto.FrameGo:
			ready = true
		case kubeproto.FrameQuit:
			return c.quit()
		default:
			c.unexpected(f, "before Go")
		}
	}
	exit := c.runAgent(st, sigs, chld)
	exit.OOMKills, exit.MemoryPeak = memoryCounts()
	if err := c.sendJSON(kubeproto.FrameExit, exit); err != nil {
		return exitUsage
	}
	for {
		f := <-c.frames
		switch f.typ {
		case kubeproto.FrameCopyOut:
			c.copyOut(f)
		case kubeproto.FrameKill: // raced the agent's own end: nothing left to kill
		case kubeproto.FrameQuit:
			return c.quit()
		default:
			c.unexpected(f, "after Exit")
		}
	}
}

// readFrames passes the controller's frames on to c.frames; when the connection ends before
// Quit (the controller or its port-forward is gone), nobody is left to stop, reap or collect
// the agent: everything is killed and the init exits.
func (c *control) readFrames() {
	for {
		typ, payload, err := kubeproto.ReadFrame(c.conn)
		if err != nil {
			c.mu.Lock()
			quitting := c.quitting
			c.mu.Unlock()
			if !quitting {
				c.k.abandon("the control connection ended (" + err.Error() + ")")
			}
			return
		}
		c.frames <- frame{typ, payload}
	}
}

// quit ends the init on the controller's Quit.
func (c *control) quit() int {
	c.mu.Lock()
	c.quitting = true
	c.mu.Unlock()
	return 0
}

func (c *control) send(typ byte, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return kubeproto.WriteFrame(c.conn, typ, payload)
}

func (c *control) sendJSON(typ byte, v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return kubeproto.WriteJSON(c.conn, typ, v)
}

// fail reports a failed request to the controller (and the container's log).
func (c *control) fail(msg string) {
	logf(msg)
	_ = c.send(kubeproto.FrameError, []byte(msg))
}

// failed reports the failure of the request what with err; the controller names the request
// itself, so only the log gets what.
func (c *control) failed(what string, err error) {
	logf(what + ": " + err.Error())
	_ = c.send(kubeproto.FrameError, []byte(err.Error()))
}

func (c *control) unexpected(f frame, when string) {
	c.fail("unexpected frame " + strconv.QuoteRune(rune(f.typ)) + " " + when + "; ignored")
}

// acceptRelayed serves every connection to the control port after the controller's: each
// must send, within relayWait, a nonce line matching a pending relay, or it is closed.
func (c *control) acceptRelayed(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				time.Sleep(10 * time.Millisecond) // the agent may hold our descriptors' limit
				continue
			}
			return
		}
		c.mu.Lock()
		full := c.unmatched >= maxUnmatched
		if !full {
			c.unmatched++
		}
		c.mu.Unlock()
		if full {
			conn.Close()
			continue
		}
		go c.matchNonce(conn)
	}
}

// matchNonce reads conn's nonce line and hands conn to the relay waiting for it, or closes it.
func (c *control) matchNonce(conn net.Conn) {
	defer func() {
		c.mu.Lock()
		c.unmatched--
		c.mu.Unlock()
	}()
	var line [kubeproto.NonceLen + 1]byte
	_ = conn.SetReadDeadline(time.Now().Add(relayWait))
	if _, err := io.ReadFull(conn, line[:]); err != nil || line[kubeproto.NonceLen] != '\n' {
		conn.Close()
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	c.mu.Lock()
	ch, ok := c.pending[string(line[:kubeproto.NonceLen])]
	if ok {
		delete(c.pending, string(line[:kubeproto.NonceLen]))
		ch <- conn // buffered: the waiting relay takes it or, timed out, closes it
	}
	c.mu.Unlock()
	if !ok {
		conn.Close()
	}
}

// relayListener is one of Start.Relays, open while the agent runs.
type relayListener struct {
	name string
	ln   net.Listener
}

// openRelays opens Start.Relays' listeners and serves them.
func (c *control) openRelays(relays []kubeproto.Relay) ([]relayListener, error) {
	var out []relayListener
	for _, r := range relays {
		ln, err := net.Listen(r.Network, r.Address)
		if err != nil {
			for _, l := range out {
				l.ln.Close()
			}
			return nil, errors.New("relay " + strconv.Quote(r.Name) + ": " + err.Error())
		}
		out = append(out, relayListener{r.Name, ln})
		go c.serveRelay(r.Name, ln)
	}
	return out, nil
}

func (c *control) serveRelay(name string, ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return
		}
		go c.relay(name, conn)
	}
}

// relay asks the controller for a connection to its service name (FrameOpen with a fresh
// nonce), waits relayWait for it on the control port, and splices it with the agent's conn.
func (c *control) relay(name string, conn net.Conn) {
	var raw [kubeproto.NonceLen / 2]byte
	if err := randomBytes(raw[:]); err != nil {
		conn.Close()
		return
	}
	nonce := hex.EncodeToString(raw[:])
	ch := make(chan net.Conn, 1)
	c.opening.RLock()
	c.mu.Lock()
	if c.relaysClosed || len(c.pending) >= maxPendingRelays {
		c.mu.Unlock()
		c.opening.RUnlock()
		conn.Close()
		return
	}
	c.pending[nonce] = ch
	c.relayed[conn] = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.relayed, conn)
		c.mu.Unlock()
	}()
	err := c.sendJSON(kubeproto.FrameOpen, kubeproto.Open{Relay: name, Nonce: nonce})
	c.opening.RUnlock()
	if err != nil {
		c.mu.Lock()
		delete(c.pending, nonce)
		c.mu.Unlock()
		conn.Close()
		return
	}
	timer := time.NewTimer(relayWait)
	defer timer.Stop()
	var peer net.Conn
	select {
	case peer = <-ch:
	case <-timer.C:
		c.mu.Lock()
		delete(c.pending, nonce)
		c.mu.Unlock()
		select { // delivered while we timed out
		case late := <-ch:
			late.Close()
		default:
		}
		conn.Close()
		return
	}
	c.mu.Lock()
	c.relayed[peer] = true
	c.mu.Unlock()
	kubeproto.Splice(conn, peer)
	c.mu.Lock()
	delete(c.relayed, peer)
	c.mu.Unlock()
}

// closeRelays closes the relay listeners and every relayed connection once the agent is dead.
func (c *control) closeRelays(ls []relayListener) {
	for _, l := range ls {
		l.ln.Close()
	}
	c.opening.Lock() // waits for a FrameOpen being sent
	defer c.opening.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.relaysClosed = true
	for conn := range c.relayed {
		conn.Close()
	}
	for nonce, ch := range c.pending {
		delete(c.pending, nonce)
		select {
		case late := <-ch:
			late.Close()
		default:
		}
	}
}

// runAgent starts the agent on Go and supervises it to the end: Start.Timeout or a FrameKill
// stops everything; when it exits, every other process is killed and reaped.
func (c *control) runAgent(st kubeproto.Start, sigs, chld chan os.Signal) kubeproto.Exit {
	goAt := time.Now()
	relays, err := c.openRelays(st.Relays)
	if err != nil {
		c.startFailed(err, exitUsage)
		return kubeproto.Exit{Code: exitUsage}
	}
	defer c.closeRelays(relays)
	devnull, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		c.startFailed(err, exitUsage)
		return kubeproto.Exit{Code: exitUsage}
	}
	defer syscall.Close(devnull)
	outR, outW, err := os.Pipe()
	if err != nil {
		c.startFailed(err, exitUsage)
		return kubeproto.Exit{Code: exitUsage}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		c.startFailed(err, exitUsage)
		return kubeproto.Exit{Code: exitUsage}
	}
	if st.FileSizeLimit > 0 {
		// Ours from here on, and the agent's: the init writes no file after Go.
		lim := &unix.Rlimit{Cur: st.FileSizeLimit, Max: st.FileSizeLimit}
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, lim); err != nil {
			for _, f := range []*os.File{outR, outW, errR, errW} {
				f.Close()
			}
			c.startFailed(errors.New("setrlimit RLIMIT_FSIZE: "+err.Error()), exitUsage)
			return kubeproto.Exit{Code: exitUsage}
		}
	}
	a, err := start(agentSpec{argv: st.Argv, env: st.Env, dir: st.Dir, setsid: true, rlimitAS: st.RlimitAS,
		files: []uintptr{uintptr(devnull), outW.Fd(), errW.Fd()}})
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		code := exitCannotExec
		var se *startError
		if errors.As(err, &se) {
			code = se.code
		}
		c.startFailed(errors.New("start "+st.Argv[0]+": "+err.Error()), code)
		return kubeproto.Exit{Code: code}
	}
	var output sync.WaitGroup
	for _, p := range []struct {
		typ byte
		r   *os.File
	}{{kubeproto.FrameStdout, outR}, {kubeproto.FrameStderr, errR}} {
		output.Add(1)
		go func() {
			defer output.Done()
			_ = kubeproto.SendStream(c.conn, &c.wmu, p.typ, p.r)
		}()
	}

	var deadline <-chan time.Time
	if st.Timeout > 0 {
		deadline = time.After(st.Timeout - time.Since(goAt))
	}
	stop := make(chan string, 1)
	stopped := make(chan struct{})
	kills := make(chan struct{})
	go c.takeKills(stop, stopped, kills)
	killed := c.k.supervise(a, sigs, chld, deadline, st.Grace, stop)
	ended := time.Now()
	c.k.finish(a, chld)
	close(stopped)
	<-kills
	remaining := c.k.remaining()
	reaped := time.Now()
	// Everything is dead: the pipes' write ends are closed, so the output ends; something
	// that survived holding them (Remaining > 0) must not keep Exit from being sent.
	done := make(chan struct{})
	go func() { output.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(cleanupLimit):
		outR.Close()
		errR.Close()
		<-done
	}
	outR.Close()
	errR.Close()
	return kubeproto.Exit{
		Code:      a.exitCode(),
		TimedOut:  killed == kubeproto.KillTimeout,
		Killed:    killed,
		Duration:  ended.Sub(goAt),
		Reap:      reaped.Sub(ended),
		Remaining: remaining,
	}
}

// takeKills turns the controller's FrameKill into reasons on stop while the agent runs,
// until stopped is closed; it answers any other frame with FrameError.
func (c *control) takeKills(stop chan<- string, stopped <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stopped:
			return
		case f := <-c.frames:
			if f.typ != kubeproto.FrameKill {
				c.unexpected(f, "while the agent runs")
				continue
			}
			var k kubeproto.KillRequest
			if err := kubeproto.DecodeJSON(f.typ, f.payload, &k); err != nil || k.Reason == "" {
				k.Reason = kubeproto.KillStop
			}
			select {
			case stop <- k.Reason:
			default: // a reason is already waiting: the first one counts
			}
		}
	}
}

// startFailed tells the run's stderr why the agent was not started.
func (c *control) startFailed(err error, code int) {
	msg := "ceval-init: " + err.Error() + " (exit " + strconv.Itoa(code) + "); the agent was not started\n"
	logf(strings.TrimPrefix(strings.TrimSuffix(msg, "\n"), "ceval-init: "))
	_ = c.send(kubeproto.FrameStderr, []byte(msg))
}

// remaining counts the processes alive besides the init once everything was killed: as PID
// 1 with its namespace's /proc, every process there; elsewhere, its descendants. A count
// that cannot be made is 1: unknown is never "none".
func (k *killer) remaining() int {
	link, err := os.Readlink("/proc/self")
	if err != nil {
		logf("count the remaining processes: " + err.Error())
		return 1
	}
	self, err := strconv.Atoi(link)
	if err != nil {
		return 1
	}
	if k.pid1 && self == 1 {
		names, err := readDirNames("/proc")
		if err != nil {
			logf("count the remaining processes: " + err.Error())
			return 1
		}
		n := 0
		for _, name := range names {
			pid, err := strconv.Atoi(name)
			if err != nil || pid == 1 {
				continue
			}
			if e, ok := readStat(pid); ok && e.state != 'Z' && e.state != 'X' {
				n++
			}
		}
		return n
	}
	_, live, err := descendants(self)
	if err != nil {
		logf("count the remaining processes: " + err.Error())
		return 1
	}
	return len(live)
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// randomBytes fills b from the kernel's CSPRNG (getrandom, blocking until it is seeded):
// crypto/rand would add its FIPS module's ~1 MB to the init for the same bytes.
func randomBytes(b []byte) error {
	for len(b) > 0 {
		n, err := unix.Getrandom(b, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.SyscallError{Syscall: "getrandom", Err: err}
		}
		b = b[n:]
	}
	return nil
}
