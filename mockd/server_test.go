package mockd

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/mockd/fixture"
)

// startServer serves ghFixture for tool gh to this process's own UID.
func startServer(t *testing.T, mod func(*Config)) (*Server, Config) {
	t.Helper()
	dir, err := os.MkdirTemp("", "mockd-test-")
	if err != nil {
		t.Fatal(err)
	}
	// Traversable by the other UIDs the attack tests run as.
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := Config{
		Socket:   filepath.Join(dir, SocketName),
		Tools:    map[string]Tool{"gh": {Fixture: mustFixture(t, ghFixture), MaxRequests: 5}},
		AllowUID: uint32(os.Getuid()),
		LogPath:  filepath.Join(t.TempDir(), "mock_calls.jsonl"),
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, cfg
}

func call(t *testing.T, cfg Config, tool string, argv ...string) Response {
	t.Helper()
	r, err := Do(cfg.Socket, Request{Tool: tool, Argv: argv, Cwd: "/workspace"}, 5*time.Second)
	if err != nil {
		t.Fatalf("call %s %q: %v", tool, argv, err)
	}
	return r
}

func TestServerAnswersAndLogsEveryCall(t *testing.T) {
	s, cfg := startServer(t, nil)
	for _, tt := range []struct {
		tool string
		argv []string
		code int
		out  string
	}{
		{"gh", []string{"pr", "list"}, 0, "#1 fix the bug\n"},
		{"gh", []string{"nothing", "like", "it"}, 1, ""},
		{"kubectl", []string{"get", "pods"}, ExitUnknownTool, ""},
	} {
		r := call(t, cfg, tt.tool, tt.argv...)
		if r.ExitCode != tt.code || r.Stdout != tt.out {
			t.Errorf("%s %q: exit %d stdout %q, want %d %q", tt.tool, tt.argv, r.ExitCode, r.Stdout, tt.code, tt.out)
		}
	}
	st, err := s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Calls != 2 || st.UnknownTool != 1 {
		t.Errorf("stats %+v", st)
	}
	calls, err := ReadCalls(cfg.LogPath)
	if err != nil || len(calls) != 3 {
		t.Fatalf("log: %d calls, %v", len(calls), err)
	}
	c := calls[0]
	if c.Tool != "gh" || strings.Join(c.Argv, " ") != "pr list" || c.Cwd != "/workspace" || c.Rule == nil || *c.Rule != 0 || c.Match != fixture.MatchExact ||
		c.StdinSHA256 != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("logged %+v", c)
	}
	if calls[1].Match != fixture.MatchDefault || calls[1].Rule != nil || calls[2].ExitCode != ExitUnknownTool {
		t.Errorf("logged %+v %+v", calls[1], calls[2])
	}
}

func TestUnmatchedCallWithoutDefaultFailsLoudly(t *testing.T) {
	_, cfg := startServer(t, func(c *Config) {
		c.Tools["gh"] = Tool{Fixture: mustFixture(t, "version: 1\nresponses: [{argv: [a]}]\n")}
	})
	r := call(t, cfg, "gh", "pr", "merge")
	if r.ExitCode != ExitNoMatch || !strings.Contains(r.Stderr, "gh") || !strings.Contains(r.Stderr, "no fixture matched") {
		t.Errorf("exit %d stderr %q", r.ExitCode, r.Stderr)
	}
}

func TestEnumeratingArgvBeyondMaxRequestsIsCutOff(t *testing.T) {
	s, cfg := startServer(t, nil) // gh allows 5 calls
	for i := range 5 {
		if r := call(t, cfg, "gh", "guess", string(rune('a'+i))); r.ExitCode == ExitBudget {
			t.Fatalf("call %d refused within budget", i)
		}
	}
	for i := range 3 {
		// Even the call that matched before is refused now: no further fixture bytes leak.
		r := call(t, cfg, "gh", "pr", "list")
		if r.ExitCode != ExitBudget || r.Stdout != "" || !strings.Contains(r.Stderr, "5 calls") {
			t.Fatalf("call %d over budget: exit %d stdout %q stderr %q", 6+i, r.ExitCode, r.Stdout, r.Stderr)
		}
	}
	if st := s.Stats(); st.OverBudget != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestOversizedRequestIsRefusedBeforeItIsRead(t *testing.T) {
	_, cfg := startServer(t, nil)
	conn, err := net.Dial("unix", cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 1<<31)
	conn.Write(hdr[:])
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	body, err := ReadFrame(conn, MaxResponseBytes)
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeResponse(body)
	if err != nil || r.ExitCode != ExitUnavailable || !strings.Contains(r.Stderr, "too large") {
		t.Errorf("reply %+v %v", r, err)
	}
	// And the client never sends one.
	if _, err := Do(cfg.Socket, Request{Tool: "gh", Stdin: bytes.Repeat([]byte{'x'}, MaxRequestBytes)}, time.Second); err == nil {
		t.Error("client sent a request over MaxRequestBytes")
	}
	if r := call(t, cfg, "gh", "pr", "list"); r.ExitCode != 0 {
		t.Errorf("server hurt by the oversized request: %+v", r)
	}
}

func TestSlowRequestsAreCutAndDoNotStallOtherCalls(t *testing.T) {
	s, cfg := startServer(t, func(c *Config) { c.RequestTimeout = 300 * time.Millisecond; c.MaxConns = 4 })
	// Fill every connection slot with a peer that sends half a header and stalls.
	var stalled []net.Conn
	for range 4 {
		conn, err := net.Dial("unix", cfg.Socket)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte{0, 0})
		stalled = append(stalled, conn)
	}
	defer func() {
		for _, c := range stalled {
			c.Close()
		}
	}()
	start := time.Now()
	deadline := start.Add(10 * time.Second) // a stall lasts as long as the slow peers
	for {
		r, err := Do(cfg.Socket, Request{Tool: "gh", Argv: []string{"pr", "list"}}, time.Second)
		if err == nil && r.ExitCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a good call never got through the slow peers: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Loose: the cut's 300 ms, the retries' sleeps and a loaded host's timer lateness.
	if waited := time.Since(start); waited > 4*time.Second {
		t.Errorf("a good call waited %s behind slow peers (timeout 300ms)", waited)
	}
	for _, c := range stalled {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("the slow peer got a reply instead of being cut")
		}
	}
	if st := s.Stats(); st.Malformed+st.Refused == 0 {
		t.Errorf("stats %+v: slow peers not counted", st)
	}
}

func TestMalformedRequestsGetAnErrorAndTheServerKeepsServing(t *testing.T) {
	_, cfg := startServer(t, nil)
	good, _ := EncodeRequest(Request{Tool: "gh", Argv: []string{"pr", "list"}})
	for _, body := range []string{
		"",
		`{"v":1,"tool":"gh","argv":["pr","list"]}`,                                 // version 1 (JSON): a version mismatch
		"\x03" + string(good[1:]),                                                  // a later version
		string(good[:len(good)-1]),                                                 // truncated
		string(good) + "\x00",                                                      // trailing bytes
		string(good[:1]) + "\x80" + string(good[2:]),                               // unknown flags
		"\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", // no tool
		"\x02\x00\x00\x00\x00\x01x\x00\x00\x00\x00\xff\xff\xff\xff",                // more arguments than bytes
	} {
		conn, err := net.Dial("unix", cfg.Socket)
		if err != nil {
			t.Fatal(err)
		}
		WriteFrame(conn, []byte(body))
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		rb, err := ReadFrame(conn, MaxResponseBytes)
		conn.Close()
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if r, err := DecodeResponse(rb); err != nil || r.ExitCode != ExitUnavailable || !strings.Contains(r.Stderr, "bad request") {
			t.Errorf("%q: reply %+v %v", body, r, err)
		}
	}
	if r := call(t, cfg, "gh", "pr", "list"); r.ExitCode != 0 {
		t.Errorf("after malformed requests: %+v", r)
	}
}

// runClient runs the committed static client as gh under uid, against cfg's socket.
func runClient(t *testing.T, cfg Config, uid uint32, args ...string) (string, string, int) {
	t.Helper()
	return runClientAs(t, cfg, uid, nil, args...)
}

func runClientStdin(t *testing.T, cfg Config, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	return runClientAs(t, cfg, 2000, stdin, args...)
}

func runClientAs(t *testing.T, cfg Config, uid uint32, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	return runClientWith(t, cfg, &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}, stdin, args...)
}

// runClientWith runs the committed static client as gh with attr (its credentials and
// namespaces), against cfg's socket.
func runClientWith(t *testing.T, cfg Config, attr *syscall.SysProcAttr, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	binDir, err := os.MkdirTemp("", "mockd-client-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	os.Chmod(binDir, 0o755)
	path, err := embedded.Mock.Install(binDir)
	if err != nil {
		t.Fatal(err)
	}
	gh := filepath.Join(binDir, "gh")
	os.Symlink(path, gh)
	cmd := exec.Command(gh, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"CEVAL_MOCK_SOCKET=" + cfg.Socket}
	cmd.SysProcAttr = attr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestPeerOfAnotherUIDIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running a client as other UIDs needs root")
	}
	const agent, other = 2000, 2001
	s, cfg := startServer(t, func(c *Config) { c.AllowUID = agent })
	out, _, code := runClient(t, cfg, agent, "pr", "list")
	if code != 0 || out != "#1 fix the bug\n" {
		t.Fatalf("the agent's UID was not served: exit %d stdout %q", code, out)
	}
	out, stderr, code := runClient(t, cfg, other, "pr", "list")
	if code != ExitUnavailable || out != "" || strings.Contains(stderr, "fix the bug") {
		t.Errorf("UID %d: exit %d stdout %q stderr %q, want refused", other, code, out, stderr)
	}
	if st := s.Stats(); st.Refused != 1 || st.Calls != 1 {
		t.Errorf("stats %+v", st)
	}
	s.Close()
	calls, _ := ReadCalls(cfg.LogPath)
	if len(calls) != 2 || calls[1].PeerUID == nil || *calls[1].PeerUID != other || !strings.Contains(calls[1].Error, "refused") {
		t.Errorf("log %+v", calls)
	}
}

func TestClientSendsPipedStdinAndDoesNotHangOnASilentPipe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the client as the agent's UID")
	}
	_, cfg := startServer(t, func(c *Config) { c.AllowUID = 2000 })
	// stdin "body\n" selects rule 3. Written into the pipe before the client starts: fed
	// by exec's copying goroutine it could come after the client's first-byte wait.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pw.WriteString("body\n")
	pw.Close()
	out, _, code := runClientStdin(t, cfg, pr, "pr", "create")
	pr.Close()
	if code != 0 || out != "created\n" {
		t.Errorf("piped stdin: exit %d stdout %q", code, out)
	}
	r, w, _ := os.Pipe()
	defer w.Close()
	start := time.Now()
	out, _, code = runClientStdin(t, cfg, r, "pr", "list")
	r.Close()
	if code != 0 || out != "#1 fix the bug\n" || time.Since(start) > 3*time.Second {
		t.Errorf("silent pipe: exit %d stdout %q after %s", code, out, time.Since(start))
	}
}

// A producer that is slow to write (a loaded host: the shell's printf scheduled late) is
// waited for as long as it holds the pipe, however long past the first-byte wait: its input
// is the call's (issue 33). Red with a fixed first-byte wait, which sends the call without it.
func TestClientWaitsForASlowProducerInAPipeline(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the client and its producer as the agent's UID")
	}
	_, cfg := startServer(t, func(c *Config) { c.AllowUID = 2000 })
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// The producer is the client's sibling, as in `sleep 1; printf body | gh pr create`'s
	// pipeline, running as the agent's UID like every process in the container.
	producer := exec.Command("/bin/sh", "-c", "sleep 1.5; printf 'body\\n'")
	producer.Stdout = pw
	producer.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 2000, Gid: 2000}}
	if err := producer.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	out, stderr, code := runClientStdin(t, cfg, pr, "pr", "create")
	pr.Close()
	producer.Wait()
	if code != 0 || out != "created\n" {
		t.Errorf("a slow producer's stdin was not waited for: exit %d stdout %q stderr %q", code, out, stderr)
	}
}
