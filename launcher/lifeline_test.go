package launcher_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/launcher"
)

// exitOrphaned is ceval-init's exit code once the supervisor's FIFO has closed.
const exitOrphaned = 123

// The agent tries every way it has to keep the supervisor's FIFO open for writing (which
// would fake a live ceval) or to stop the init watching it; then the FIFO closes as it does
// when ceval is killed, and every process in the container must be gone within 5 s.
func TestAgentCannotKeepItsContainerAliveAfterTheSupervisorDies(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	script := `f=/.ceval/supervisor
( exec 3>"$f" ) 2>/dev/null && echo "BREACH opened $f for writing"
( exec 3<>"$f" ) 2>/dev/null && echo "BREACH opened $f read-write"
( exec 3>"$f" && exec sleep 1003 ) 2>/dev/null &
chmod 666 "$f" 2>/dev/null && echo "BREACH chmod $f"
ls /proc/1/fd >/dev/null 2>&1 && echo "BREACH listed the init's descriptors"
for d in /proc/1/fd/*; do ( exec 3<>"$d" ) 2>/dev/null && echo "BREACH reopened $d"; done
for sig in STOP TSTP TTIN TTOU KILL; do kill -$sig 1 2>/dev/null; done
grep -q '^State:.*T' /proc/1/status && echo "BREACH stopped the init"
setsid sleep 1001 &
(trap "" TERM; sleep 1002 &)
touch /workspace/ready
exec sleep 1000`
	s := newSandbox(t, "sh", "-c", script)
	s.timeout = 15 * time.Second
	var closed time.Time
	r := s.run(t, c, ctx, func(*launcher.Task) {
		waitHostFile(t, filepath.Join(s.dir, "workspace", "ready"), 20*time.Second)
		closed = time.Now()
		if err := s.lifeline.Close(); err != nil {
			t.Fatal(err)
		}
	})
	took := time.Since(closed)
	if strings.Contains(r.stdout, "BREACH") {
		t.Errorf("the agent got at the watch:\n%s", r.stdout)
	}
	if r.exit.TimedOut || r.exit.Code != exitOrphaned || !strings.Contains(r.stderr, "supervisor is gone") {
		t.Errorf("exit %+v stderr %q, want the init's %d once the supervisor is gone", r.exit, r.stderr, exitOrphaned)
	}
	if !r.exit.CgroupEmpty {
		t.Errorf("processes left in the container: %s", r.exit.CgroupError)
	}
	t.Logf("supervisor FIFO closed -> container empty and deleted: %v", took)
	if took > 5*time.Second {
		t.Errorf("the container took %v to empty after its supervisor died", took)
	}
}

// The FIFO's write end is held by this process only, close-on-exec, and the FIFO is mode
// 0444, so no other process without CAP_DAC_OVERRIDE can become a writer.
func TestLifelineIsAReadOnlyFIFOHeldCloseOnExec(t *testing.T) {
	path := filepath.Join(t.TempDir(), "supervisor")
	if err := os.WriteFile(path, []byte("leftover"), 0o666); err != nil {
		t.Fatal(err)
	}
	l, err := launcher.NewLifeline(path)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO || st.Mode&0o7777 != 0o444 {
		t.Errorf("mode %o, want a FIFO of mode 0444", st.Mode)
	}
	// A reader sees no EOF while the lifeline is held, and EOF once it is closed.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 1)
	if _, err := unix.Read(fd, buf); !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("read while held: %v, want EAGAIN", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Read(fd, buf); n != 0 || err != nil {
		t.Fatalf("read after Close: %d, %v, want EOF", n, err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FIFO left after Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// waitHostFile polls for path to exist, as a handshake with the agent script.
func waitHostFile(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear within %v", path, timeout)
}

// With the container's pids all but used up (a spawner forks until refused and, being
// ash, exits on the refusal: one pid comes free), the FIFO's close still ends everything:
// the watch needs no new thread or process.
func TestSupervisorDeathEndsAContainerAtItsPidsLimit(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	s := newSandbox(t, "sh", "-c", `( while :; do sleep 1000 & done ) 2>/dev/null; : >/workspace/ready; exec sleep 1000`)
	s.cfg.Pids = 64
	s.timeout = 15 * time.Second
	var closed time.Time
	var pids uint64
	r := s.run(t, c, ctx, func(tk *launcher.Task) {
		waitHostFile(t, filepath.Join(s.dir, "workspace", "ready"), 20*time.Second)
		res, err := tk.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pids = res.Pids
		closed = time.Now()
		if err := s.lifeline.Close(); err != nil {
			t.Fatal(err)
		}
	})
	took := time.Since(closed)
	if pids < 63 {
		t.Errorf("%d pids in the container when the FIFO closed, want the limit 64 or one less", pids)
	}
	if r.exit.TimedOut || r.exit.Code != exitOrphaned || !r.exit.CgroupEmpty {
		t.Errorf("exit %+v stderr %q, want the init's %d and an empty cgroup", r.exit, r.stderr, exitOrphaned)
	}
	t.Logf("%d pids of 64; FIFO closed -> container empty and deleted: %v", pids, took)
	if took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}
