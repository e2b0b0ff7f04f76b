package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path"
	"strings"
	"sync"
	"time"

	"ceval.dev/ceval/internal/attest"
	"ceval.dev/ceval/internal/kubeproto"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
)

const (
	// maxRelays bounds the relayed connections a session holds at once; the init's further
	// FrameOpen get no connection (the agent's connection is closed after the init's wait).
	maxRelays = 64
	// relayDialLimit bounds the dial of one relayed connection's channel to the init.
	relayDialLimit = 10 * time.Second
	// exitAfterInterrupt is how long Wait waits, past the grace, for the exit after an
	// interrupt.
	exitAfterInterrupt = 10 * time.Second
	// quitLimit bounds Close's wait for the init to end after Quit.
	quitLimit = 2 * time.Second
)

// Session drives one Pod's init (ceval-init --control) over its control channel: NewSession
// sends the start parameters and takes the attestation, CopyIn streams files in, Go starts
// the agent, Wait takes its exit, CopyOut snapshots a directory streamed out, Close ends
// the init. Everything the init sends is treated as hostile: frames are capped, relay
// requests are checked against the run's relays and bounded, the workspace goes through
// SnapshotTar. The methods are sequential, except Kill, which may be called at any time.
type Session struct {
	dial   func(ctx context.Context) (net.Conn, error)
	conn   net.Conn
	grace  time.Duration
	relays map[string]bool // the names of Start.Relays
	wmu    sync.Mutex      // one frame at a time on conn

	ran  bool          // Go was sent: the reader owns conn's reads until it ends
	done chan struct{} // closed when the reader ends
	exit *kubeproto.Exit
	err  error // why the reader ended without an exit

	mu        sync.Mutex
	relaySlot chan struct{}
	relayed   map[net.Conn]bool
	relayWG   sync.WaitGroup
	closed    bool
}

// NewSession opens the control connection with dial, sends start and returns the init's
// attestation; it fails if the init refuses start or the channel fails. dial opens one new
// connection to the init's control port each call (a port-forward stream in a cluster).
func NewSession(ctx context.Context, dial func(ctx context.Context) (net.Conn, error), start kubeproto.Start) (*Session, *kubeproto.Attest, error) {
	conn, err := dial(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("control channel: dial the init: %w", err)
	}
	s := &Session{dial: dial, conn: conn, grace: start.Grace, relays: map[string]bool{},
		done: make(chan struct{}), relaySlot: make(chan struct{}, maxRelays), relayed: map[net.Conn]bool{}}
	for _, r := range start.Relays {
		s.relays[r.Name] = true
	}
	var a kubeproto.Attest
	err = s.request(ctx, "start", func() error { return s.writeJSON(kubeproto.FrameStart, start) },
		kubeproto.FrameAttest, &a)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return s, &a, nil
}

// CopyIn streams tarStream into dir in the Pod (before Go); the init unpacks it confined to
// dir. A failure to read tarStream breaks the channel (the init then kills everything and
// exits): a cut stream must not pass for a whole one.
func (s *Session) CopyIn(ctx context.Context, dir string, tarStream io.Reader) error {
	if s.ran {
		return errors.New("control channel: CopyIn after Go")
	}
	return s.request(ctx, "copy in to "+dir, func() error {
		if err := s.writeJSON(kubeproto.FrameCopyIn, kubeproto.Dir{Dir: dir}); err != nil {
			return err
		}
		if err := kubeproto.SendStream(s.conn, &s.wmu, kubeproto.FrameData, tarStream); err != nil {
			s.conn.Close()
			return err
		}
		return s.writeFrame(kubeproto.FrameEnd, nil)
	}, kubeproto.FrameOK, nil)
}

// request sends with send, then reads one reply of type want (decoded into v unless nil);
// FrameError is the init's refusal. ctx cancels it by breaking the connection.
func (s *Session) request(ctx context.Context, what string, send func() error, want byte, v any) error {
	stop := s.bind(ctx)
	defer stop()
	err := send()
	if err == nil {
		var typ byte
		var payload []byte
		typ, payload, err = kubeproto.ReadFrame(s.conn)
		switch {
		case err != nil:
		case typ == want && v != nil:
			err = kubeproto.DecodeJSON(typ, payload, v)
		case typ == want:
		case typ == kubeproto.FrameError:
			return &InitError{What: what, Msg: string(payload)}
		default:
			err = fmt.Errorf("unexpected frame %q, want %q", typ, want)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("control channel: %s: %w", what, err)
	}
	return nil
}

// InitError is a request the init refused or failed, with its message.
type InitError struct {
	What string // the request
	Msg  string // the init's message (its text, not ours)
}

func (e *InitError) Error() string { return fmt.Sprintf("ceval-init: %s: %q", e.What, e.Msg) }

// bind closes the connection when ctx is done, until the returned stop is called: a
// port-forward stream has no deadlines, and a closed one breaks a blocked read or write (the
// init then kills everything and exits, as on any lost control connection).
func (s *Session) bind(ctx context.Context) (stop func()) {
	cancel := context.AfterFunc(ctx, func() { _ = s.conn.Close() })
	return func() { cancel() }
}

func (s *Session) writeFrame(typ byte, payload []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return kubeproto.WriteFrame(s.conn, typ, payload)
}

func (s *Session) writeJSON(typ byte, v any) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return kubeproto.WriteJSON(s.conn, typ, v)
}

// Go starts the agent. Its stdout and stderr frames are written to stdout and stderr (the
// caller caps them; a writer's error is ignored so the agent is never blocked by it). Each
// connection the agent makes to a relay listener gets a new channel to the init (dial, then
// the init's nonce) spliced with relay(name), the controller-side service; a failing
// relay(name) closes that channel. ctx bounds the relays' dials.
func (s *Session) Go(ctx context.Context, stdout, stderr io.Writer, relay func(name string) (net.Conn, error)) error {
	if s.ran {
		return errors.New("control channel: Go twice")
	}
	if err := s.writeFrame(kubeproto.FrameGo, nil); err != nil {
		return fmt.Errorf("control channel: go: %w", err)
	}
	s.ran = true
	go s.read(ctx, stdout, stderr, relay)
	return nil
}

// read takes the init's frames while the agent runs, until its Exit.
func (s *Session) read(ctx context.Context, stdout, stderr io.Writer, relay func(string) (net.Conn, error)) {
	defer close(s.done)
	for {
		typ, payload, err := kubeproto.ReadFrame(s.conn)
		if err != nil {
			s.err = fmt.Errorf("control channel: %w", err)
			return
		}
		switch typ {
		case kubeproto.FrameStdout:
			_, _ = stdout.Write(payload)
		case kubeproto.FrameStderr:
			_, _ = stderr.Write(payload)
		case kubeproto.FrameOpen:
			var o kubeproto.Open
			if err := kubeproto.DecodeJSON(typ, payload, &o); err != nil {
				s.err = fmt.Errorf("control channel: %w", err)
				return
			}
			s.openRelay(ctx, o, relay)
		case kubeproto.FrameExit:
			var e kubeproto.Exit
			if err := kubeproto.DecodeJSON(typ, payload, &e); err != nil {
				s.err = fmt.Errorf("control channel: %w", err)
				return
			}
			s.exit = &e
			return
		case kubeproto.FrameError:
			s.err = &InitError{What: "while the agent ran", Msg: string(payload)}
			return
		default:
			s.err = fmt.Errorf("control channel: unexpected frame %q while the agent ran", typ)
			return
		}
	}
}

// openRelay serves one FrameOpen: a relay the run has, a well-formed nonce and a free slot,
// or nothing is dialled (the init closes the agent's connection after its wait).
func (s *Session) openRelay(ctx context.Context, o kubeproto.Open, relay func(string) (net.Conn, error)) {
	if relay == nil || !s.relays[o.Relay] || !isNonce(o.Nonce) {
		return
	}
	select {
	case s.relaySlot <- struct{}{}:
	default:
		return
	}
	s.relayWG.Add(1)
	go func() {
		defer s.relayWG.Done()
		defer func() { <-s.relaySlot }()
		dctx, cancel := context.WithTimeout(WithRelayLane(ctx), relayDialLimit)
		conn, err := s.dial(dctx)
		cancel()
		if err != nil {
			return
		}
		if !s.track(conn) {
			return
		}
		defer s.untrack(conn)
		if _, err := conn.Write([]byte(o.Nonce + "\n")); err != nil {
			conn.Close()
			return
		}
		svc, err := relay(o.Relay)
		if err != nil {
			conn.Close()
			return
		}
		if !s.track(svc) {
			conn.Close()
			return
		}
		defer s.untrack(svc)
		kubeproto.Splice(conn, stallLimited{svc})
	}()
}

// relayStallLimit is how long a controller-side service may take one write of a relayed
// connection: one that stops taking the agent's bytes is closed, so its unread stream does
// not hold up the relays' port-forward connection.
var relayStallLimit = 30 * time.Second

// stallLimited is a service's connection whose every write must finish within
// relayStallLimit.
type stallLimited struct{ net.Conn }

func (c stallLimited) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(relayStallLimit)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// CloseWrite half-closes the service's connection where it can (Splice's half-close).
func (c stallLimited) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("cannot half-close")
}

// track records conn to be closed by Close; false (conn closed) when Close has run.
func (s *Session) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		conn.Close()
		return false
	}
	s.relayed[conn] = true
	return true
}

func (s *Session) untrack(conn net.Conn) {
	s.mu.Lock()
	delete(s.relayed, conn)
	s.mu.Unlock()
}

func isNonce(n string) bool {
	if len(n) != kubeproto.NonceLen {
		return false
	}
	for _, c := range n {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Kill asks the init to stop everything (SIGTERM, grace, SIGKILL) for reason
// (kubeproto.KillTimeout, KillStop or KillInterrupt); the exit still comes through Wait.
func (s *Session) Kill(reason string) error {
	if err := s.writeJSON(kubeproto.FrameKill, kubeproto.KillRequest{Reason: reason}); err != nil {
		return fmt.Errorf("control channel: kill: %w", err)
	}
	return nil
}

// Wait returns the agent's exit, sent by the init once every process is dead and reaped.
// When ctx is done first, it sends Kill(KillInterrupt) and still waits for the exit, for the
// grace plus 10 s at most.
func (s *Session) Wait(ctx context.Context) (*kubeproto.Exit, error) {
	if !s.ran {
		return nil, errors.New("control channel: Wait before Go")
	}
	select {
	case <-s.done:
		return s.result()
	case <-ctx.Done():
	}
	kerr := s.Kill(kubeproto.KillInterrupt)
	limit := time.NewTimer(s.grace + exitAfterInterrupt)
	defer limit.Stop()
	select {
	case <-s.done:
		return s.result()
	case <-limit.C:
		return nil, fmt.Errorf("control channel: no exit from the init %v after the interrupt (%v; kill sent: %v)",
			s.grace+exitAfterInterrupt, ctx.Err(), kerr)
	}
}

// exited reports whether the reader ended with the agent's exit.
func (s *Session) exited() bool {
	if !s.ran {
		return false
	}
	select {
	case <-s.done:
		return s.exit != nil
	default:
		return false
	}
}

func (s *Session) result() (*kubeproto.Exit, error) {
	if s.exit == nil {
		return nil, s.err
	}
	return s.exit, nil
}

// CopyOutTimeout bounds a whole CopyOut: the init stops at lim's caps (a 1 GiB default
// total), which the port-forward carries in seconds; past it the workspace is not worth a
// stalled run.
var CopyOutTimeout = 5 * time.Minute

// maxDrain is what CopyOut still reads of a stream SnapshotTar stopped taking (the tar's
// trailer after a cap) before it ends the stream by closing the channel.
const maxDrain = 1 << 20

// errAbandoned is a stream SnapshotTar stopped taking that went on past maxDrain.
var errAbandoned = errors.New("the stream went on after the snapshot stopped taking it")

// CopyOut snapshots dir of the Pod into dst after the agent's exit: the init streams it as
// tar under lim's caps, and SnapshotTar makes the snapshot under lim with the local
// snapshot's rules. A stream the init could not finish (its FrameError) is recorded in the
// snapshot as a cut stream; one that goes on after SnapshotTar stopped taking it is ended by
// closing the channel (the session then only closes). The copy takes CopyOutTimeout at most;
// an error means the channel, the time or dst failed.
func (s *Session) CopyOut(ctx context.Context, dir, dst string, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	if !s.exited() {
		return nil, errors.New("control channel: CopyOut before the agent's exit")
	}
	cl, err := CopyLimits(lim)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, CopyOutTimeout,
		fmt.Errorf("copy-out of %s took over %v: check the port-forward's throughput, or lower the snapshot caps", dir, CopyOutTimeout))
	defer cancel()
	stop := s.bind(ctx)
	defer stop()
	if err := s.writeJSON(kubeproto.FrameCopyOut, kubeproto.Dir{Dir: dir, Limits: cl}); err != nil {
		return nil, s.copyOutErr(ctx, dir, err)
	}
	pr, pw := io.Pipe()
	fed := make(chan error, 1)
	go func() { fed <- s.feedStream(pw, dir) }()
	snap, err := SnapshotTar(pr, dst, lim)
	pr.CloseWithError(errors.New("the snapshot was made"))
	ferr := <-fed
	if errors.Is(ferr, errAbandoned) {
		_ = s.conn.Close()
		ferr = nil
	}
	if ferr != nil {
		return nil, s.copyOutErr(ctx, dir, ferr)
	}
	return snap, err
}

func (s *Session) copyOutErr(ctx context.Context, dir string, err error) error {
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return fmt.Errorf("control channel: copy out %s: %w", dir, err)
}

// feedStream writes the FrameData of a CopyOut stream to pw up to its FrameEnd (pw is then
// closed) or FrameError (pw closed with the init's message). What pw no longer takes is
// read on for maxDrain bytes at most (errAbandoned past it). Only a failure of the channel
// itself, or errAbandoned, is returned.
func (s *Session) feedStream(pw *io.PipeWriter, dir string) error {
	drained := 0
	for {
		typ, payload, err := kubeproto.ReadFrame(s.conn)
		if err != nil {
			pw.CloseWithError(err)
			return err
		}
		switch typ {
		case kubeproto.FrameData:
			if _, err := pw.Write(payload); err != nil {
				if drained += len(payload); drained > maxDrain {
					return errAbandoned
				}
			}
		case kubeproto.FrameEnd:
			pw.Close()
			return nil
		case kubeproto.FrameError:
			pw.CloseWithError(&InitError{What: "copy out " + dir, Msg: string(payload)})
			return nil
		default:
			err := fmt.Errorf("unexpected frame %q in a CopyOut stream", typ)
			pw.CloseWithError(err)
			return err
		}
	}
}

// Close ends the session: after the agent's exit (or before Go) it sends Quit and waits
// briefly for the init to end; while the agent runs it only closes the channel, which makes
// the init kill everything and exit. Relayed connections are closed and waited for.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for conn := range s.relayed {
		conn.Close()
	}
	s.mu.Unlock()
	var err error
	if !s.ran || s.exited() {
		if err = s.writeFrame(kubeproto.FrameQuit, nil); err == nil {
			// until the init's end closes it, or quitLimit (a port-forward stream has no
			// deadline: the timer closes it)
			limit := time.AfterFunc(quitLimit, func() { _ = s.conn.Close() })
			_, _ = io.Copy(io.Discard, s.conn)
			limit.Stop()
		}
	}
	if cerr := s.conn.Close(); err == nil {
		err = cerr
	}
	if s.ran {
		<-s.done
	}
	s.relayWG.Wait()
	if err != nil {
		return fmt.Errorf("control channel: close: %w", err)
	}
	return nil
}

// ParseAttest checks an init's reported files with the same parser as a local run's
// /proc (package attest): "status", "uid_map", "gid_map", "limits", "net/dev", "cgroup",
// and its cgroup files under "cgroup:<path>" below /sys/fs/cgroup.
func ParseAttest(a *kubeproto.Attest) (*record.Attestation, error) {
	return attest.Parse(func(name string) ([]byte, error) {
		key := name
		if len(name) > 0 && name[0] == '/' {
			key = "cgroup:" + name
		}
		v, ok := a.Files[key]
		if !ok && len(name) > 0 && name[0] == '/' {
			// cgroup v1 in a container: its own cgroup is mounted at each hierarchy's root
			// (the init reports both views).
			if rel, found := strings.CutPrefix(name, "/sys/fs/cgroup/"); found {
				ctl, _, _ := strings.Cut(rel, "/")
				v, ok = a.Files["cgroup:/sys/fs/cgroup/"+ctl+"/"+path.Base(name)]
			}
		}
		if !ok {
			return nil, fmt.Errorf("the init reported no %s: %w", key, fs.ErrNotExist)
		}
		return []byte(v), nil
	}, "/sys/fs/cgroup", "the init's /proc/self")
}
