package mockd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ceval.dev/ceval/mockd/fixture"
	"ceval.dev/ceval/record"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Server defaults; each is a cap on what the agent can make ceval spend.
const (
	DefaultMaxConns       = 16
	DefaultRequestTimeout = 5 * time.Second
	DefaultMaxRequests    = 100
	// unknownToolCalls bounds the calls (and log lines) beyond the tools' budgets: calls for
	// tools that have no fixture, and malformed requests.
	unknownToolCalls = 100
	// refusedLogged bounds the log lines written for refused peers.
	refusedLogged = 100
)

// Tool is one mocked tool: its fixture and how many calls it answers.
type Tool struct {
	Fixture     *fixture.Fixture
	MaxRequests int // 0: DefaultMaxRequests
}

// Config configures a Server.
type Config struct {
	Socket   string          // path of the Unix socket to create; its directory must exist
	Tools    map[string]Tool // by the name the agent calls
	AllowUID uint32          // the only peer UID served: the agent's UID, in the container when UIDMappings are set
	LogPath  string          // the call log, JSON lines, created 0600 (appended when it exists)
	// UIDMappings are the container's user-namespace UID mappings (the spec's
	// linux.uidMappings). When set, AllowUID is the agent's UID inside the container and the
	// server serves the UID it maps to (see HostUID); Start fails when nothing maps it.
	UIDMappings []specs.LinuxIDMapping

	MaxConns       int           // concurrent connections; 0: DefaultMaxConns
	RequestTimeout time.Duration // per connection, reading the request and writing the reply; 0: DefaultRequestTimeout
}

// Call is one line of the call log.
type Call struct {
	Time           time.Time `json:"time"`
	Tool           string    `json:"tool,omitempty"`
	Argv           []string  `json:"argv"`
	Cwd            string    `json:"cwd,omitempty"`
	StdinBytes     int       `json:"stdin_bytes"`
	StdinSHA256    string    `json:"stdin_sha256,omitempty"`
	StdinTruncated bool      `json:"stdin_truncated,omitempty"`
	Rule           *int      `json:"rule"`  // index in the fixture's responses; null for default or none
	Match          string    `json:"match"` // exact, normalized, subset, default, none, or "" when not looked up
	ExitCode       int       `json:"exit_code"`
	Error          string    `json:"error,omitempty"` // why the call was refused or failed
	PeerUID        *uint32   `json:"peer_uid,omitempty"`
}

// Stats are a server's counts: the run record's (result.json's "mocks"), which it fills.
type Stats = record.MockStats

// Server answers tool calls on a Unix socket. Its goroutines and memory are ceval's, so
// everything an agent can make it hold is capped: MaxConns connections of at most
// MaxRequestBytes each, for at most RequestTimeout, and a bounded number of calls.
type Server struct {
	cfg   Config
	peer  atomic.Uint32 // the peer UID served, as SO_PEERCRED reports it
	ln    *net.UnixListener
	log   *os.File
	slots chan struct{}
	wg    sync.WaitGroup

	mu     sync.Mutex
	used   map[string]int
	extra  int
	stats  Stats
	logErr error
	closed bool
}

// Start creates the socket (mode 0666: the container's UID may differ from ours; the peer
// check decides who is served) and serves it until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	for name, t := range cfg.Tools {
		if t.Fixture == nil {
			return nil, fmt.Errorf("mock server: tool %q has no fixture", name)
		}
		if t.MaxRequests <= 0 {
			t.MaxRequests = DefaultMaxRequests
			cfg.Tools[name] = t
		}
	}
	peer, err := HostUID(cfg.AllowUID, cfg.UIDMappings)
	if err != nil {
		return nil, fmt.Errorf("mock server: %w", err)
	}
	log, err := os.OpenFile(cfg.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("mock server: call log: %w", err)
	}
	ln, err := listen(cfg.Socket)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("mock server: %w", err)
	}
	s := &Server{cfg: cfg, ln: ln, log: log, slots: make(chan struct{}, cfg.MaxConns), used: map[string]int{}}
	s.peer.Store(peer)
	s.wg.Go(s.accept)
	return s, nil
}

// UseUIDMappings re-derives the served peer UID from the mappings of the agent's user
// namespace as read from the live container (ReadUIDMap of its init), before the agent
// starts; an unmapped agent UID is an error and leaves the server refusing everyone.
func (s *Server) UseUIDMappings(mappings []specs.LinuxIDMapping) error {
	peer, err := HostUID(s.cfg.AllowUID, mappings)
	if err != nil {
		s.peer.Store(1<<32 - 1) // (uid_t)-1: no process has it
		return fmt.Errorf("mock server: %w", err)
	}
	s.peer.Store(peer)
	return nil
}

// Close stops accepting, waits for the connections in flight (each ends by its deadline),
// closes the call log and returns the counts.
func (s *Server) Close() (Stats, error) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	err := s.ln.Close()
	if rerr := os.Remove(s.cfg.Socket); err == nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	s.wg.Wait()
	if cerr := s.log.Close(); err == nil {
		err = cerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logErr != nil {
		err = s.logErr
	}
	return s.stats, err
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Server) accept() {
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// EMFILE and the like: back off instead of spinning.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		select {
		case s.slots <- struct{}{}:
			s.wg.Go(func() {
				defer func() { <-s.slots }()
				s.serve(conn)
			})
		default:
			s.count(func(st *Stats) { st.Refused++ })
			conn.Close()
		}
	}
}

// listen creates the socket at path, mode 0666. A run directory's path can be longer than a
// socket address allows (108 bytes), so it binds through /proc/self/fd/N of the directory.
func listen(path string) (*net.UnixListener, error) {
	dir, err := os.OpenFile(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	short := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: short, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false) // the short name dies with the descriptor; Close removes path
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, err
	}
	return ln, nil
}

// Dial connects to the socket at path from this process, through /proc/self/fd/N of its
// directory as listen binds it (a run directory's path can be longer than a socket address
// allows): the kubernetes backend relays the agent's calls this way.
func Dial(path string) (net.Conn, error) {
	dir, err := os.OpenFile(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return net.Dial("unix", fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path)))
}

// PeerUID returns the UID of the process at the other end of conn (SO_PEERCRED: the
// credentials at connect time, as this process's user namespace sees them).
func PeerUID(conn *net.UnixConn) (uint32, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return cred.Uid, nil
}

func (s *Server) serve(conn *net.UnixConn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(s.cfg.RequestTimeout))
	uid, err := PeerUID(conn)
	if peer := s.peer.Load(); err != nil || uid != peer {
		msg := fmt.Sprintf("peer uid %d is not the agent's (%d)", uid, peer)
		if peer != s.cfg.AllowUID {
			msg = fmt.Sprintf("peer uid %d is not the agent's (%d, which is %d in the container)", uid, peer, s.cfg.AllowUID)
		}
		if err != nil {
			msg = "peer credentials: " + err.Error()
		}
		s.mu.Lock()
		s.stats.Refused++
		logIt := s.stats.Refused <= refusedLogged
		s.mu.Unlock()
		if logIt {
			s.append(Call{Time: time.Now().UTC(), Argv: []string{}, Error: "refused: " + msg, ExitCode: ExitUnavailable, PeerUID: &uid})
		}
		// Not a word of the fixture, not even a protocol reply: just close.
		return
	}
	body, err := ReadFrame(conn, MaxRequestBytes)
	var req Request
	if err == nil {
		req, err = DecodeRequest(body)
	}
	if err != nil {
		if !s.spendExtra() {
			return
		}
		s.count(func(st *Stats) { st.Malformed++ })
		s.append(Call{Time: time.Now().UTC(), Argv: []string{}, Error: "bad request: " + err.Error(), ExitCode: ExitUnavailable})
		s.reply(conn, fixture.Reply{ExitCode: ExitUnavailable, Stderr: "ceval-mock: bad request: " + err.Error() + "\n"})
		return
	}
	call, rep := s.answer(req)
	if call.Tool == "" && call.Error == "" {
		return // over every cap: not even logged
	}
	s.append(call)
	s.reply(conn, rep)
}

// answer looks the request up and accounts for it.
func (s *Server) answer(req Request) (Call, fixture.Reply) {
	sum := sha256.Sum256(req.Stdin)
	call := Call{Time: time.Now().UTC(), Tool: req.Tool, Argv: req.Argv, Cwd: req.Cwd, StdinBytes: len(req.Stdin),
		StdinSHA256: hex.EncodeToString(sum[:]), StdinTruncated: req.StdinTruncated}
	if call.Argv == nil {
		call.Argv = []string{}
	}
	t, ok := s.cfg.Tools[req.Tool]
	if !ok {
		if !s.spendExtra() {
			return Call{}, fixture.Reply{}
		}
		s.count(func(st *Stats) { st.UnknownTool++ })
		call.Match, call.ExitCode, call.Error = fixture.MatchNone, ExitUnknownTool, "unknown tool"
		return call, fixture.Reply{ExitCode: ExitUnknownTool, Stderr: fmt.Sprintf("ceval-mock: %s: no fixture for this tool\n", quoteTool(req.Tool))}
	}
	s.mu.Lock()
	s.used[req.Tool]++
	n := s.used[req.Tool]
	s.mu.Unlock()
	if n > t.MaxRequests {
		if n > t.MaxRequests+unknownToolCalls {
			return Call{}, fixture.Reply{}
		}
		s.count(func(st *Stats) { st.OverBudget++ })
		call.ExitCode, call.Error = ExitBudget, "max_requests spent"
		return call, fixture.Reply{ExitCode: ExitBudget, Stderr: fmt.Sprintf("ceval-mock: %s: the task allows %d calls to this tool and they are spent\n", req.Tool, t.MaxRequests)}
	}
	idx, how, rep := t.Fixture.Lookup(req.Argv, req.Stdin)
	call.Match = how
	if idx >= 0 {
		call.Rule = &idx
	}
	if rep == nil {
		s.count(func(st *Stats) { st.Unmatched++ })
		call.ExitCode = ExitNoMatch
		return call, fixture.Reply{ExitCode: ExitNoMatch, Stderr: fmt.Sprintf("ceval-mock: %s: no fixture matched %s (unknown calls fail loudly)\n", req.Tool, strings.Join(append([]string{req.Tool}, req.Argv...), " "))}
	}
	s.count(func(st *Stats) { st.Calls++ })
	call.ExitCode = rep.ExitCode
	return call, *rep
}

func quoteTool(t string) string {
	if len(t) > 64 {
		t = t[:64] + "..."
	}
	return fmt.Sprintf("%q", t)
}

// spendExtra takes one of the calls allowed beyond the tools' budgets.
func (s *Server) spendExtra() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.extra >= unknownToolCalls {
		return false
	}
	s.extra++
	return true
}

func (s *Server) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

func (s *Server) reply(conn *net.UnixConn, r fixture.Reply) {
	b, err := encodeResponse(r)
	if err != nil {
		b, _ = encodeResponse(fixture.Reply{ExitCode: ExitUnavailable, Stderr: "ceval-mock: " + err.Error() + "\n"})
	}
	_ = WriteFrame(conn, b)
}

func (s *Server) append(c Call) {
	line, err := json.Marshal(c)
	if err == nil {
		s.mu.Lock()
		_, err = s.log.Write(append(line, '\n'))
		if err != nil && s.logErr == nil {
			s.logErr = fmt.Errorf("mock call log: %w", err)
		}
		s.mu.Unlock()
	}
}

// ReadCalls reads a call log.
func ReadCalls(path string) ([]Call, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var calls []Call
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var c Call
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", filepath.Base(path), i+1, err)
		}
		calls = append(calls, c)
	}
	return calls, nil
}
