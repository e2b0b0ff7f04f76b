package kube

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ceval.dev/ceval/internal/kubeproto"
	"ceval.dev/ceval/snapshot"
)

// These tests run the real ceval-init in control mode as a local process (not PID 1, except
// where said) and drive it with Session over plain TCP: everything but the cluster.

var (
	initOnce sync.Once
	initBin  string
	initErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if initBin != "" {
		os.RemoveAll(filepath.Dir(initBin))
	}
	os.Exit(code)
}

// buildInit builds ./cmd/ceval-init once for the package's tests.
func buildInit(t *testing.T) string {
	t.Helper()
	initOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ceval-kube-init-")
		if err != nil {
			initErr = err
			return
		}
		os.Chmod(dir, 0o755) // an init running as another user executes it too
		initBin = filepath.Join(dir, "ceval-init")
		cmd := exec.Command("go", "build", "-trimpath", "-o", initBin, "ceval.dev/ceval/cmd/ceval-init")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			initErr = errors.New("build ceval-init: " + err.Error() + "\n" + string(out))
		}
	})
	if initErr != nil {
		t.Fatal(initErr)
	}
	return initBin
}

// localInit is one ceval-init --control running on the host.
type localInit struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
}

func startLocalInit(t *testing.T, pidns bool) *localInit {
	t.Helper()
	return startLocalInitAs(t, pidns, nil)
}

// startLocalInitAs starts the init, as cred's user when cred is not nil.
func startLocalInitAs(t *testing.T, pidns bool, cred *syscall.Credential) *localInit {
	t.Helper()
	li := &localInit{t: t, cmd: exec.Command(buildInit(t), "--control", "127.0.0.1:0"), exited: make(chan struct{})}
	li.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if pidns {
		li.cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWPID
	}
	errPipe, err := li.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := li.cmd.Start(); err != nil {
		if pidns {
			t.Skipf("cannot start a process in a new PID namespace: %v", err)
		}
		t.Fatal(err)
	}
	r := bufio.NewReader(errPipe)
	line, err := r.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ceval-init: listening ")
	if err != nil || !ok {
		li.cmd.Process.Kill()
		li.cmd.Wait()
		t.Fatalf("init's first line %q (%v), want its listening address", line, err)
	}
	li.addr = addr
	go func() {
		b, _ := io.ReadAll(r)
		li.mu.Lock()
		li.stderr.Write(b)
		li.mu.Unlock()
		li.cmd.Wait()
		close(li.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-li.exited:
		default:
			li.cmd.Process.Kill()
			<-li.exited
		}
	})
	return li
}

func (li *localInit) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", li.addr)
}

// exitCode waits for the init to end and returns its exit code.
func (li *localInit) exitCode() int {
	li.t.Helper()
	select {
	case <-li.exited:
	case <-time.After(30 * time.Second):
		li.t.Fatal("the init did not exit within 30s")
	}
	ws := li.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		li.t.Fatalf("the init died of %v; stderr: %s", ws.Signal(), li.log())
	}
	return ws.ExitStatus()
}

func (li *localInit) log() string {
	li.mu.Lock()
	defer li.mu.Unlock()
	return li.stderr.String()
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// signalWriter collects bytes and closes seen once want has appeared in them.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func newSignalWriter(want string) *signalWriter {
	return &signalWriter{want: want, seen: make(chan struct{})}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.want != "" && strings.Contains(w.buf.String(), w.want) {
		w.want = ""
		close(w.seen)
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *signalWriter) wait(t *testing.T) {
	t.Helper()
	select {
	case <-w.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("%q never appeared in the output %q", w.want, w.String())
	}
}

// uniqueArg is a sleep argument no other process has, to find the process in /proc.
func uniqueArg(seconds int) string {
	return strconv.Itoa(seconds) + "." + strconv.Itoa(100000+rand.IntN(900000))
}

// pidsWithArg lists the live processes having arg as a command-line argument.
func pidsWithArg(arg string) []int {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(data, []byte{0}) {
			if string(a) == arg {
				pid, _ := strconv.Atoi(strings.Split(name, "/")[2])
				if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
					if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
						continue
					}
				}
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func baseStart(argv ...string) kubeproto.Start {
	return kubeproto.Start{Argv: argv, Env: []string{"PATH=/usr/bin:/bin"}, Grace: 2 * time.Second}
}

// newSession starts a local init and opens a session on it.
func newSession(t *testing.T, li *localInit, start kubeproto.Start) (*Session, *kubeproto.Attest) {
	t.Helper()
	s, a, err := NewSession(testCtx(t), li.dial, start)
	if err != nil {
		t.Fatalf("NewSession: %v; init log: %s", err, li.log())
	}
	t.Cleanup(func() { s.Close() })
	return s, a
}

// freePort is a loopback address nobody listens on at the time of the call (for a relay
// to listen on).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// refusingPort is a loopback address that refuses connections for the whole test: a
// socket bound to it that never listens keeps a parallel test from taking the port.
func refusingPort(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

func TestSessionRunsTheAgentFromStartToQuit(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	ws := t.TempDir()
	start := baseStart("sh", "-c", `cat sub/f.txt; readlink link; ./run.sh; echo "$FOO" >&2; pwd >&2; exit 7`)
	start.Env = append(start.Env, "FOO=bar")
	start.Dir = ws
	start.Probes = []string{open.Addr().String(), refusingPort(t)}
	s, a := newSession(t, li, start)

	for _, f := range []string{"status", "uid_map", "gid_map", "limits", "cgroup", "net/dev"} {
		if a.Files[f] == "" {
			t.Errorf("attestation lacks %s", f)
		}
	}
	if a.PID != li.cmd.Process.Pid || len(a.Interfaces) == 0 {
		t.Errorf("attested pid %d interfaces %v, want pid %d and the host's interfaces", a.PID, a.Interfaces, li.cmd.Process.Pid)
	}
	if len(a.Probes) != 2 || a.Probes[0].Err != "" || a.Probes[1].Err == "" {
		t.Errorf("probes %+v: want the open port reported as reached (Err \"\") and the closed one as failed", a.Probes)
	}
	rec, err := ParseAttest(a)
	if err != nil {
		t.Fatalf("ParseAttest: %v", err)
	}
	if rec.UID != os.Getuid() || rec.PidsMax == "" || len(rec.Interfaces) == 0 {
		t.Errorf("parsed attestation %+v", rec)
	}

	in := tarOf(t,
		tarEntry{name: "sub/", typ: tar.TypeDir, mode: 0o750},
		tarEntry{name: "sub/f.txt", typ: tar.TypeReg, body: "hello\n"},
		tarEntry{name: "run.sh", typ: tar.TypeReg, body: "#!/bin/sh\necho ran\n", mode: 0o755},
		tarEntry{name: "link", typ: tar.TypeSymlink, link: "sub/f.txt"},
	)
	if err := s.CopyIn(testCtx(t), ws, in); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(ws, "sub")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("sub: %v %v, want a 0750 directory", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(ws, "link")); err != nil || target != "sub/f.txt" {
		t.Errorf("link: %q %v", target, err)
	}

	var stdout, stderr bytes.Buffer
	if err := s.Go(testCtx(t), &stdout, &stderr, nil); err != nil {
		t.Fatal(err)
	}
	exit, err := s.Wait(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if exit.Code != 7 || exit.Killed != "" || exit.TimedOut || exit.Remaining != 0 {
		t.Errorf("exit %+v, want code 7, not killed, nothing remaining", exit)
	}
	if stdout.String() != "hello\nsub/f.txt\nran\n" || stderr.String() != "bar\n"+ws+"\n" {
		t.Errorf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
	snap, err := s.CopyOut(testCtx(t), ws, filepath.Join(t.TempDir(), "snap"), snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(snap.Dir, "sub", "f.txt")); err != nil || string(got) != "hello\n" || snap.RootOmitted != "" {
		t.Errorf("snapshot sub/f.txt %q %v, root omitted %q", got, err, snap.RootOmitted)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if code := li.exitCode(); code != 0 {
		t.Errorf("init exit %d after Quit, want 0; log: %s", code, li.log())
	}
}

func tarOf(t *testing.T, entries ...tarEntry) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.mode != 0 {
			h.Mode = e.mode
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &b
}

func TestCopyInStaysInsideTheDirectory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entries func(outside string) []tarEntry
	}{
		{"dot-dot name", func(string) []tarEntry { return []tarEntry{{name: "../escaped", typ: tar.TypeReg, body: "x"}} }},
		{"absolute name", func(outside string) []tarEntry {
			return []tarEntry{{name: filepath.Join(outside, "escaped"), typ: tar.TypeReg, body: "x"}}
		}},
		{"file through a symlink out", func(outside string) []tarEntry {
			return []tarEntry{{name: "out", typ: tar.TypeSymlink, link: outside}, {name: "out/escaped", typ: tar.TypeReg, body: "x"}}
		}},
		{"hard link out", func(outside string) []tarEntry {
			return []tarEntry{{name: "h", typ: tar.TypeLink, link: "../outside/secret"}}
		}},
		{"device node", func(string) []tarEntry { return []tarEntry{{name: "null", typ: tar.TypeChar}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			li := startLocalInit(t, false)
			base := t.TempDir()
			ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
			os.Mkdir(ws, 0o755)
			os.Mkdir(outside, 0o755)
			os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
			s, _ := newSession(t, li, baseStart("true"))
			err := s.CopyIn(testCtx(t), ws, tarOf(t, tt.entries(outside)...))
			var ie *InitError
			if !errors.As(err, &ie) {
				t.Errorf("CopyIn: %v, want the init's refusal", err)
			}
			if names, _ := os.ReadDir(outside); len(names) != 1 {
				t.Errorf("written outside the directory: %v", names)
			}
			if _, err := os.Lstat(filepath.Join(base, "escaped")); err == nil {
				t.Error("written beside the directory")
			}
			if _, err := os.Lstat(filepath.Join(ws, "h")); err == nil {
				t.Error("a hard link to a file outside was made")
			}
			if _, err := os.Lstat(filepath.Join(ws, "null")); err == nil {
				t.Error("a device node was made")
			}
			// The channel is still in step: the session goes on.
			if err := s.CopyIn(testCtx(t), ws, tarOf(t, tarEntry{name: "ok", typ: tar.TypeReg, body: "y"})); err != nil {
				t.Errorf("CopyIn after a refused one: %v", err)
			}
		})
	}
}

func TestTimeoutKillsTheAgent(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	arg := uniqueArg(100)
	start := baseStart("sleep", arg)
	start.Timeout = 200 * time.Millisecond
	s, _ := newSession(t, li, start)
	if err := s.Go(testCtx(t), io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	exit, err := s.Wait(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !exit.TimedOut || exit.Killed != kubeproto.KillTimeout || exit.Code != 128+int(syscall.SIGTERM) || exit.Remaining != 0 {
		t.Errorf("exit %+v, want timed out by SIGTERM with nothing remaining", exit)
	}
	if pids := pidsWithArg(arg); len(pids) != 0 {
		t.Errorf("the agent is still alive: %v", pids)
	}
}

func TestKillKillsTheAgentThatIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	arg := uniqueArg(100)
	start := baseStart("sh", "-c", `trap '' TERM; echo ready; sleep `+arg+`; sleep `+arg)
	start.Grace = 100 * time.Millisecond
	s, _ := newSession(t, li, start)
	out := newSignalWriter("ready")
	if err := s.Go(testCtx(t), out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	out.wait(t)
	if err := s.Kill(kubeproto.KillStop); err != nil {
		t.Fatal(err)
	}
	exit, err := s.Wait(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if exit.Killed != kubeproto.KillStop || exit.TimedOut || exit.Code != 128+int(syscall.SIGKILL) || exit.Remaining != 0 {
		t.Errorf("exit %+v, want stopped by SIGKILL after the grace, nothing remaining", exit)
	}
	if pids := pidsWithArg(arg); len(pids) != 0 {
		t.Errorf("still alive: %v", pids)
	}
}

func TestWaitInterruptedStillWaitsForTheExit(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	s, _ := newSession(t, li, baseStart("sh", "-c", "echo ready; exec sleep 100"))
	out := newSignalWriter("ready")
	if err := s.Go(testCtx(t), out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	out.wait(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	exit, err := s.Wait(ctx)
	if err != nil || exit.Killed != kubeproto.KillInterrupt || exit.Remaining != 0 {
		t.Errorf("Wait on a done context: %+v, %v; want the interrupted agent's exit", exit, err)
	}
}

func TestBackgroundProcessesTheAgentLeftAreKilled(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	bg, daemon := uniqueArg(100), uniqueArg(100)
	// One in the background of the agent's session, one double-forked into a session of its own.
	start := baseStart("sh", "-c", `sleep `+bg+` & (setsid sh -c 'touch up; exec sleep `+daemon+`' &); while [ ! -e up ]; do sleep 0.01; done; exit 0`)
	start.Dir = t.TempDir()
	s, _ := newSession(t, li, start)
	if err := s.Go(testCtx(t), io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	exit, err := s.Wait(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if exit.Code != 0 || exit.Killed != "" || exit.Remaining != 0 {
		t.Errorf("exit %+v, want 0 with nothing remaining", exit)
	}
	if pids := append(pidsWithArg(bg), pidsWithArg(daemon)...); len(pids) != 0 {
		t.Errorf("left alive after the exit was reported: %v", pids)
	}
}

func TestStartFailureIsReportedAsTheShellsExitCode(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	s, _ := newSession(t, li, baseStart("no-such-agent"))
	var stderr bytes.Buffer
	if err := s.Go(testCtx(t), io.Discard, &stderr, nil); err != nil {
		t.Fatal(err)
	}
	exit, err := s.Wait(testCtx(t))
	if err != nil || exit.Code != 127 || !strings.Contains(stderr.String(), "no-such-agent") {
		t.Errorf("exit %+v, %v, stderr %q; want 127 and the reason on stderr", exit, err, stderr.String())
	}
}

func TestCopyOutRecordsASymlinkWithoutFollowingIt(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	ws := t.TempDir()
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil || len(passwd) == 0 {
		t.Skip("no /etc/passwd to plant a link to")
	}
	start := baseStart("sh", "-c", `ln -s /etc/passwd leak && ln -s /etc leakdir && mkfifo fifo && echo out > result.txt`)
	start.Dir = ws
	s, _ := newSession(t, li, start)
	if err := s.Go(testCtx(t), io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if exit, err := s.Wait(testCtx(t)); err != nil || exit.Code != 0 {
		t.Fatalf("agent: %+v %v", exit, err)
	}
	// Entries tar has no plain header for: a socket, a name over 100 bytes, one not UTF-8.
	sock, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	long, odd := strings.Repeat("n", 200), "odd\xff\xfename"
	for _, name := range []string{long, odd} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := s.CopyOut(testCtx(t), ws, filepath.Join(t.TempDir(), "snap"), snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(snap.Dir, long)); err != nil || string(got) != long {
		t.Errorf("the 200-byte name: %q %v", got, err)
	}
	// The snapshot's own rules skip the socket and the non-UTF-8 name, each with a note: the
	// stream carried both.
	notes := fmt.Sprint(snap.Notes)
	if !strings.Contains(notes, "sock") || !strings.Contains(notes, `odd\xff\xfename`) || snap.RootOmitted == "" {
		t.Errorf("the socket and the odd name are not noted: notes %v, root omitted %q", snap.Notes, snap.RootOmitted)
	}
	kinds := map[string]snapshot.Entry{}
	for _, e := range snap.Entries {
		kinds[e.Path] = e
	}
	if e := kinds["leak"]; e.Kind != snapshot.KindSymlink || e.Target != "/etc/passwd" {
		t.Errorf("leak: %+v, want a symlink to /etc/passwd", e)
	}
	if e := kinds["leakdir"]; e.Kind != snapshot.KindSymlink {
		t.Errorf("leakdir: %+v, want a symlink", e)
	}
	if _, ok := kinds["leakdir/passwd"]; ok {
		t.Error("the walk went through a symlinked directory")
	}
	filepath.WalkDir(snap.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Equal(b, passwd) {
				t.Errorf("%s holds /etc/passwd: the writer followed a link", p)
			}
		}
		return nil
	})
	if got, err := os.ReadFile(filepath.Join(snap.Dir, "result.txt")); err != nil || string(got) != "out\n" {
		t.Errorf("result.txt %q %v", got, err)
	}
}

// relayServices are controller-side echo services, one per relay name.
func relayServices(t *testing.T) func(name string) (net.Conn, error) {
	t.Helper()
	serve := func(network, addr, prefix string) string {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					req, _ := io.ReadAll(c)
					c.Write(append([]byte(prefix), req...))
				}()
			}
		}()
		return ln.Addr().String()
	}
	gw := serve("tcp", "127.0.0.1:0", "gateway:")
	mocks := serve("unix", filepath.Join(t.TempDir(), "mocks.sock"), "mocks:")
	return func(name string) (net.Conn, error) {
		switch name {
		case "gateway":
			return net.Dial("tcp", gw)
		case "mocks":
			return net.Dial("unix", mocks)
		}
		return nil, errors.New("no service " + name)
	}
}

// relayStart is a run with a TCP and a unix relay whose agent waits to be killed.
func relayStart(t *testing.T) (kubeproto.Start, string, string) {
	gw := freePort(t)
	sock := filepath.Join(t.TempDir(), "mock.sock")
	start := baseStart("sh", "-c", "echo ready; exec sleep 100")
	start.Relays = []kubeproto.Relay{{Name: "gateway", Network: "tcp", Address: gw}, {Name: "mocks", Network: "unix", Address: sock}}
	return start, gw, sock
}

// roundTrip sends req on a new connection to network/addr, half-closes and reads the reply.
func roundTrip(t *testing.T, network, addr, req string) string {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	c.Write([]byte(req))
	c.(interface{ CloseWrite() error }).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

func TestRelaysReachTheControllersServices(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	start, gw, sock := relayStart(t)
	s, _ := newSession(t, li, start)
	out := newSignalWriter("ready")
	if err := s.Go(testCtx(t), out, io.Discard, relayServices(t)); err != nil {
		t.Fatal(err)
	}
	out.wait(t) // the relay listeners open before the agent starts
	if got := roundTrip(t, "tcp", gw, "ping"); got != "gateway:ping" {
		t.Errorf("through the tcp relay: %q", got)
	}
	if got := roundTrip(t, "unix", sock, "pong"); got != "mocks:pong" {
		t.Errorf("through the unix relay: %q", got)
	}
	s.Kill(kubeproto.KillStop)
	if exit, err := s.Wait(testCtx(t)); err != nil || exit.Remaining != 0 {
		t.Errorf("exit %+v %v", exit, err)
	}
	if _, err := net.Dial("tcp", gw); err == nil {
		t.Error("the relay listener is still open after the exit")
	}
}

// TestControlPortDropsConnectionsWithoutTheNonce: the agent shares the Pod's loopback and can
// connect to the control port too; while a relayed connection waits for the controller's
// channel, connections that do not open with its nonce must never be spliced to it.
func TestControlPortDropsConnectionsWithoutTheNonce(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	start, gw, _ := relayStart(t)
	services := relayServices(t)
	opened := make(chan struct{}, 1)
	release := make(chan struct{})
	first := true
	dial := func(ctx context.Context) (net.Conn, error) {
		if first { // the control connection
			first = false
			return li.dial(ctx)
		}
		opened <- struct{}{}
		<-release
		return li.dial(ctx)
	}
	s, _, err := NewSession(testCtx(t), dial, start)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := newSignalWriter("ready")
	if err := s.Go(testCtx(t), out, io.Discard, services); err != nil {
		t.Fatal(err)
	}
	out.wait(t)
	victim, err := net.Dial("tcp", gw)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	<-opened // the init announced the victim's nonce; the controller has not connected yet

	for name, line := range map[string]string{
		"no nonce":    "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: agent\r\nAccept: */*\r\n\r\n",
		"wrong nonce": strings.Repeat("0", kubeproto.NonceLen) + "\n",
	} {
		c, err := net.Dial("tcp", li.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		c.Write([]byte(line + "from the attacker"))
		got, err := io.ReadAll(c)
		c.Close()
		if (err != nil && !errors.Is(err, syscall.ECONNRESET)) || len(got) != 0 {
			t.Errorf("%s: read %q, %v; want the connection closed with nothing", name, got, err)
		}
	}
	close(release)
	victim.SetDeadline(time.Now().Add(30 * time.Second))
	victim.Write([]byte("mine"))
	victim.(*net.TCPConn).CloseWrite()
	if got, _ := io.ReadAll(victim); string(got) != "gateway:mine" {
		t.Errorf("the agent's relayed connection got %q, want only its own reply", got)
	}
}

func TestLostControlConnectionKillsEverythingAndExits123(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	arg := uniqueArg(100)
	s, _ := newSession(t, li, baseStart("sh", "-c", "sleep "+arg+"; exit 0"))
	if err := s.Go(testCtx(t), io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); len(pidsWithArg(arg)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the agent's sleep never ran")
		}
	}
	s.conn.Close() // the port-forward is gone
	if code := li.exitCode(); code != 123 {
		t.Errorf("init exit %d, want 123; log: %s", code, li.log())
	}
	if pids := pidsWithArg(arg); len(pids) != 0 {
		t.Errorf("the agent outlived its init: %v", pids)
	}
}

func TestAsPID1TheInitKillsADoubleForkedDaemon(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, true)
	daemon := uniqueArg(100)
	start := baseStart("sh", "-c", `(setsid sh -c 'trap "" TERM; touch up; exec sleep `+daemon+`' &); while [ ! -e up ]; do sleep 0.01; done; exit 0`)
	start.Dir = t.TempDir()
	s, a := newSession(t, li, start)
	if a.PID != 1 {
		t.Fatalf("attested pid %d, want 1", a.PID)
	}
	if err := s.Go(testCtx(t), io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	exit, err := s.Wait(testCtx(t))
	if err != nil || exit.Code != 0 || exit.Remaining != 0 {
		t.Errorf("exit %+v %v, want 0 with nothing remaining", exit, err)
	}
	if pids := pidsWithArg(daemon); len(pids) != 0 {
		t.Errorf("the daemon outlived the exit: %v", pids)
	}
}

// fakeInit serves one scripted init on the far end of a pipe: it answers Start with an
// empty attestation, waits for Go, then sends frames.
func fakeInit(t *testing.T, frames func(c net.Conn)) (dial func(context.Context) (net.Conn, error), dials *int) {
	t.Helper()
	n := 0
	var mu sync.Mutex
	return func(ctx context.Context) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n > 1 {
			return nil, errors.New("a relay was dialled")
		}
		ours, theirs := net.Pipe()
		go func() {
			defer theirs.Close()
			if typ, _, err := kubeproto.ReadFrame(theirs); err != nil || typ != kubeproto.FrameStart {
				return
			}
			kubeproto.WriteJSON(theirs, kubeproto.FrameAttest, kubeproto.Attest{})
			if typ, _, err := kubeproto.ReadFrame(theirs); err != nil || typ != kubeproto.FrameGo {
				return
			}
			frames(theirs)
			io.Copy(io.Discard, theirs)
		}()
		return ours, nil
	}, &n
}

// TestSessionOpensNoRelayTheRunDidNotDeclare: the init shares its UID with the agent, so
// what it sends is hostile: a FrameOpen for a relay the run has not, or with a nonce that
// is not 64 hex digits, must not make the controller dial or call any service.
func TestSessionOpensNoRelayTheRunDidNotDeclare(t *testing.T) {
	t.Parallel()
	good := strings.Repeat("ab", kubeproto.NonceLen/2)
	dial, dials := fakeInit(t, func(c net.Conn) {
		kubeproto.WriteJSON(c, kubeproto.FrameOpen, kubeproto.Open{Relay: "kubelet", Nonce: good})
		kubeproto.WriteJSON(c, kubeproto.FrameOpen, kubeproto.Open{Relay: "gateway", Nonce: "../../x\n" + good[8:]})
		kubeproto.WriteJSON(c, kubeproto.FrameOpen, kubeproto.Open{Relay: "gateway", Nonce: strings.ToUpper(good)})
		kubeproto.WriteJSON(c, kubeproto.FrameExit, kubeproto.Exit{Code: 3})
	})
	start := baseStart("agent")
	start.Relays = []kubeproto.Relay{{Name: "gateway", Network: "tcp", Address: "127.0.0.1:80"}}
	s, _, err := NewSession(testCtx(t), dial, start)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var called []string
	relay := func(name string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		called = append(called, name)
		return nil, errors.New("no")
	}
	if err := s.Go(testCtx(t), io.Discard, io.Discard, relay); err != nil {
		t.Fatal(err)
	}
	if exit, err := s.Wait(testCtx(t)); err != nil || exit.Code != 3 {
		t.Fatalf("exit %+v %v", exit, err)
	}
	s.relayWG.Wait()
	mu.Lock()
	defer mu.Unlock()
	if *dials != 1 || len(called) != 0 {
		t.Errorf("%d dials (want only the control connection), services called %v", *dials, called)
	}
}

func TestSessionFailsOnAFrameOutOfProtocol(t *testing.T) {
	t.Parallel()
	dial, _ := fakeInit(t, func(c net.Conn) {
		kubeproto.WriteFrame(c, kubeproto.FrameStdout, []byte("out"))
		kubeproto.WriteFrame(c, kubeproto.FrameAttest, []byte("{}")) // not while the agent runs
	})
	s, _, err := NewSession(testCtx(t), dial, baseStart("agent"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out bytes.Buffer
	s.Go(testCtx(t), &out, io.Discard, nil)
	if exit, err := s.Wait(testCtx(t)); err == nil || exit != nil || out.String() != "out" {
		t.Errorf("Wait: %+v, %v, stdout %q; want an error after the output", exit, err, out.String())
	}
}

func TestParseAttestFindsTheCgroupFilesByPath(t *testing.T) {
	status := "Uid:\t2000\t2000\t2000\t2000\nGid:\t2000\t2000\t2000\t2000\nGroups:\t\nCapInh:\t0000000000000000\n" +
		"CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n" +
		"NoNewPrivs:\t1\nSeccomp:\t2\n"
	a := &kubeproto.Attest{Files: map[string]string{
		"status": status, "uid_map": "0 0 4294967295\n", "gid_map": "0 0 4294967295\n",
		"limits":  "Limit Soft Hard Units\nMax processes 64 64 processes\n",
		"net/dev": "Inter-|   Receive\n face |bytes\n    lo: 0 0\n",
		"cgroup":  "12:pids:/kubepods/pod1/c1\n11:memory:/kubepods/pod1/c1\n",
		"cgroup:/sys/fs/cgroup/pids/kubepods/pod1/c1/pids.max": "64\n",
	}}
	rec, err := ParseAttest(a)
	if err != nil {
		t.Fatal(err)
	}
	if rec.UID != 2000 || rec.PidsMax != "64" || rec.NoNewPrivs != 1 || rec.Seccomp != 2 ||
		len(rec.Interfaces) != 1 || rec.Interfaces[0] != "lo" || len(rec.Rlimits) != 1 {
		t.Errorf("parsed %+v", rec)
	}
	delete(a.Files, "cgroup:/sys/fs/cgroup/pids/kubepods/pod1/c1/pids.max")
	if _, err := ParseAttest(a); err == nil || !strings.Contains(err.Error(), "pids.max") {
		t.Errorf("without its pids.max: %v, want an error naming it", err)
	}
}

// TestCopyOutNotesWhatTheAgentMadeUnreadable: the agent runs as the init's user and can take
// the read permission off a file or directory; the stream must still carry every other
// entry and name the unreadable ones, so they never look absent.
func TestCopyOutNotesWhatTheAgentMadeUnreadable(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to run the init as another user")
	}
	const uid = 2000
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(base), base} {
		os.Chmod(d, 0o755)
	}
	os.Chown(ws, uid, uid)
	li := startLocalInitAs(t, false, &syscall.Credential{Uid: uid, Gid: uid})
	start := baseStart("sh", "-c", `echo s > hidden && chmod 000 hidden && mkdir d && echo x > d/f && chmod 000 d && echo out > result.txt &&
		truncate -s 20000000 hidden-big && chmod 000 hidden-big`)
	start.Dir = ws
	s, _ := newSession(t, li, start)
	if err := s.Go(testCtx(t), io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if exit, err := s.Wait(testCtx(t)); err != nil || exit.Code != 0 {
		t.Fatalf("agent: %+v %v", exit, err)
	}
	snap, err := s.CopyOut(testCtx(t), ws, filepath.Join(t.TempDir(), "snap"), snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(snap.Dir, "result.txt")); err != nil || string(got) != "out\n" {
		t.Errorf("result.txt %q %v: the rest of the workspace was lost", got, err)
	}
	// recorded as the local snapshot records what it may not open: visible, omitted
	if e, ok := snap.Lookup("hidden"); !ok || e.Kind != snapshot.KindFile || e.Size != 2 || e.Omitted != "permission denied; left out" {
		t.Errorf("hidden: %+v %v, want an omitted file of its size", e, ok)
	}
	if e, ok := snap.Lookup("hidden-big"); !ok || e.Size != 20000000 || e.Omitted != "permission denied; left out" {
		t.Errorf("hidden-big: %+v %v, want omitted as unreadable (the local walk opens before it sizes)", e, ok)
	}
	if e, ok := snap.Lookup("d"); !ok || e.Kind != snapshot.KindDir || e.Omitted == "" {
		t.Errorf("d: %+v %v, want a directory whose listing is omitted", e, ok)
	}
	if _, ok := snap.Unvouched("d/f"); !ok {
		t.Error("d/f looks absent below an unreadable directory")
	}
	if snap.RootOmitted != "" {
		t.Errorf("root omitted %q: the root's listing is complete", snap.RootOmitted)
	}
}

// manifestOf is what a snapshot's manifest says, without where it lives.
func manifestOf(s *snapshot.Snapshot) string {
	return fmt.Sprintf("entries %v\nnotes %v\ntruncated %v bytes %d root omitted %q\nlimits hit %q",
		s.Entries, s.Notes, s.Truncated, s.Bytes, s.RootOmitted, s.LimitsHit)
}

// TestCopyOutGivesTheLocalManifestForTheSameTree: whatever the agent leaves (a FIFO, a
// socket, a name not UTF-8, a file over a cap, a tree past the depth, entry or path cap),
// the Kubernetes copy-out records it as the local snapshot does, so no negative check reads
// the transport's gaps as "does not exist".
func TestCopyOutGivesTheLocalManifestForTheSameTree(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	ws := t.TempDir()
	start := baseStart("sh", "-c", `mkdir -p src/hidden deep/1/2/3/4 && echo x > src/hack.py && echo y > src/hidden/h &&
		echo z > deep/1/2/3/4/leaf && echo w > deep/1/2/3/w && mkfifo fifo && truncate -s 5000 big &&
		head -c 700 /dev/zero > t1 && head -c 700 /dev/zero > t2 && echo ok > t3 && touch "$(printf 'odd\377')" &&
		for i in 1 2 3 4 5 6 7 8; do echo $i > many$i; done`)
	start.Dir = ws
	s, _ := newSession(t, li, start)
	if err := s.Go(testCtx(t), io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if exit, err := s.Wait(testCtx(t)); err != nil || exit.Code != 0 {
		t.Fatalf("agent: %+v %v", exit, err)
	}
	sock, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	for _, lim := range []snapshot.Limits{
		{},
		{MaxFileBytes: 1024, MaxTotalBytes: 1000},
		{MaxDepth: 3},
		{MaxEntries: 7},
		{MaxEntries: 25},
		{MaxPathBytes: 40},
	} {
		local, err := snapshot.Take(ws, filepath.Join(t.TempDir(), "local"), lim)
		if err != nil {
			t.Fatal(err)
		}
		remote, err := s.CopyOut(testCtx(t), ws, filepath.Join(t.TempDir(), "remote"), lim)
		if err != nil {
			t.Fatalf("%+v: %v", lim, err)
		}
		if l, r := manifestOf(local), manifestOf(remote); l != r {
			t.Errorf("limits %+v:\nlocal  %s\nremote %s", lim, l, r)
		}
	}
}

// noDeadlineConn refuses deadlines, as a port-forward stream does.
type noDeadlineConn struct{ net.Conn }

func (noDeadlineConn) SetDeadline(time.Time) error      { return errors.New("no deadlines") }
func (noDeadlineConn) SetReadDeadline(time.Time) error  { return errors.New("no deadlines") }
func (noDeadlineConn) SetWriteDeadline(time.Time) error { return errors.New("no deadlines") }

// exitedSession is a session on a fake init (over a connection without deadlines) whose
// agent has exited; copyOut is the fake init's side once FrameCopyOut arrived.
func exitedSession(t *testing.T, copyOut func(c net.Conn, req kubeproto.Dir)) *Session {
	t.Helper()
	dial, _ := fakeInit(t, func(c net.Conn) {
		kubeproto.WriteJSON(c, kubeproto.FrameExit, kubeproto.Exit{})
		typ, payload, err := kubeproto.ReadFrame(c)
		if err != nil || typ != kubeproto.FrameCopyOut {
			return
		}
		var req kubeproto.Dir
		kubeproto.DecodeJSON(typ, payload, &req)
		copyOut(c, req)
	})
	s, _, err := NewSession(testCtx(t), func(ctx context.Context) (net.Conn, error) {
		c, err := dial(ctx)
		return noDeadlineConn{c}, err
	}, baseStart("agent"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Go(testCtx(t), io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Wait(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestInterruptBreaksACopyOutOverAConnWithoutDeadlines: Ctrl-C during a copy-out whose init
// has gone quiet must end it, though the port-forward stream refuses deadlines.
func TestInterruptBreaksACopyOutOverAConnWithoutDeadlines(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{})
	s := exitedSession(t, func(c net.Conn, _ kubeproto.Dir) {
		close(asked)
		io.Copy(io.Discard, c) // never answers
	})
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() { <-asked; cancel() }()
	res := make(chan error, 1)
	go func() {
		_, err := s.CopyOut(ctx, "/workspace", filepath.Join(t.TempDir(), "snap"), snapshot.Limits{})
		res <- err
	}()
	select {
	case err := <-res:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("CopyOut = %v, want it interrupted", err)
		}
	case <-testCtx(t).Done():
		t.Fatal("CopyOut still blocked after its context was cancelled")
	}
}

// TestCopyOutEndsAStreamThatGoesOnPastTheCaps: the init is ceval's, but what it sends is
// read as hostile: a stream that goes on after SnapshotTar stopped (here a file declared
// far over the caps followed by endless data) is ended by the controller, not drained.
func TestCopyOutEndsAStreamThatGoesOnPastTheCaps(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	var limits *kubeproto.CopyLimits
	s := exitedSession(t, func(c net.Conn, req kubeproto.Dir) {
		limits = req.Limits
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		tw.WriteHeader(&tar.Header{Name: "huge", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1 << 50})
		kubeproto.WriteFrame(c, kubeproto.FrameData, b.Bytes())
		zeros := make([]byte, kubeproto.DataChunk)
		for kubeproto.WriteFrame(c, kubeproto.FrameData, zeros) == nil {
			sent.Add(int64(len(zeros)))
		}
	})
	lim := snapshot.Limits{MaxTotalBytes: 1 << 20, MaxEntries: 10, MaxPathBytes: 1000}
	snap, err := s.CopyOut(testCtx(t), "/workspace", filepath.Join(t.TempDir(), "snap"), lim)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := snap.Lookup("huge"); !ok || e.Omitted == "" || !snap.Truncated {
		t.Errorf("huge: %+v %v truncated %v", e, ok, snap.Truncated)
	}
	if limits == nil || limits.MaxTotalBytes != 1<<20 || limits.MaxFileBytes != snapshot.DefaultLimits().MaxFileBytes {
		t.Errorf("FrameCopyOut carried limits %+v, want the snapshot's", limits)
	}
	if n := sent.Load(); n > 16<<20 {
		t.Errorf("the controller read %d bytes of a stream capped near 3 MiB", n)
	}
}

// TestCopyOutOfASparseHugeFileSendsAHeaderNotItsZeros: the agent's sparse 1 TiB file costs
// the port-forward a header: the init applies the caps the request carries.
func TestCopyOutOfASparseHugeFileSendsAHeaderNotItsZeros(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	ws := t.TempDir()
	start := baseStart("sh", "-c", `truncate -s 1099511627776 big && echo ok > small`)
	start.Dir = ws
	var read atomic.Int64
	s, _, err := NewSession(testCtx(t), func(ctx context.Context) (net.Conn, error) {
		c, err := li.dial(ctx)
		return &countingConn{Conn: c, read: &read}, err
	}, start)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Go(testCtx(t), io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if exit, err := s.Wait(testCtx(t)); err != nil || exit.Code != 0 {
		t.Skipf("this filesystem holds no sparse 1 TiB file: %+v %v", exit, err)
	}
	before := read.Load()
	snap, err := s.CopyOut(testCtx(t), ws, filepath.Join(t.TempDir(), "snap"), snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := snap.Lookup("big"); !ok || e.Size != 1<<40 || !strings.Contains(e.Omitted, "per-file cap") {
		t.Errorf("big: %+v %v", e, ok)
	}
	if n := read.Load() - before; n > 64<<10 {
		t.Errorf("the copy-out moved %d bytes for a sparse file and a 3-byte one", n)
	}
}

// countingConn counts the bytes read, and fails once past 64 MiB (a stream of zeros).
type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	if c.read.Load() > 64<<20 {
		return 0, errors.New("over 64 MiB read")
	}
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// TestRelaysDialInTheRelayLane: the session dials its control stream in the default lane
// and every relay with WithRelayLane, so a stalled relay never shares the control stream's
// port-forward connection.
func TestRelaysDialInTheRelayLane(t *testing.T) {
	t.Parallel()
	li := startLocalInit(t, false)
	start, gw, _ := relayStart(t)
	var mu sync.Mutex
	var lanes []bool
	s, _, err := NewSession(testCtx(t), func(ctx context.Context) (net.Conn, error) {
		mu.Lock()
		lanes = append(lanes, ctx.Value(relayLane{}) != nil)
		mu.Unlock()
		return li.dial(ctx)
	}, start)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := newSignalWriter("ready")
	if err := s.Go(testCtx(t), out, io.Discard, relayServices(t)); err != nil {
		t.Fatal(err)
	}
	out.wait(t)
	if got := roundTrip(t, "tcp", gw, "ping"); got != "gateway:ping" {
		t.Errorf("through the relay: %q", got)
	}
	s.Kill(kubeproto.KillStop)
	s.Wait(testCtx(t))
	mu.Lock()
	defer mu.Unlock()
	if len(lanes) != 2 || lanes[0] || !lanes[1] {
		t.Errorf("lanes of the dials (relay?) %v, want [false true]", lanes)
	}
}

// TestRelayWhoseServiceStopsReadingIsClosed: the agent pipelines bytes into a relay whose
// controller-side service never reads them; the relay is closed once a write stalls past
// relayStallLimit, and the control stream still brings the exit.
func TestRelayWhoseServiceStopsReadingIsClosed(t *testing.T) {
	// not parallel: it shortens relayStallLimit (parallel tests start after it ends)
	defer func(d time.Duration) { relayStallLimit = d }(relayStallLimit)
	relayStallLimit = 200 * time.Millisecond
	li := startLocalInit(t, false)
	start, gw, _ := relayStart(t)
	s, _ := newSession(t, li, start)
	stuck := make(chan net.Conn, 1)
	relay := func(string) (net.Conn, error) {
		ours, theirs := net.Pipe() // theirs is never read
		stuck <- theirs
		return ours, nil
	}
	out := newSignalWriter("ready")
	if err := s.Go(testCtx(t), out, io.Discard, relay); err != nil {
		t.Fatal(err)
	}
	out.wait(t)
	c, err := net.Dial("tcp", gw)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(10 * time.Second)) // bounds a failure, not the close
	chunk := make([]byte, 64<<10)
	for {
		// ends once the controller closed the relay (the init then closes the agent's end)
		if _, err := c.Write(chunk); err != nil {
			break
		}
	}
	theirs := <-stuck
	theirs.SetReadDeadline(time.Now().Add(10 * time.Second)) // bounds a failure, not the close
	if _, err := theirs.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the stalled service's connection: %v, want it closed", err)
	}
	s.Kill(kubeproto.KillStop)
	if exit, err := s.Wait(testCtx(t)); err != nil || exit.Remaining != 0 {
		t.Errorf("exit %+v %v after the stalled relay", exit, err)
	}
}
