package procgroup

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// started runs script under sh and returns the PID of the grandchild it prints first.
func started(t *testing.T, ctx context.Context, grace time.Duration, script string) (*Cmd, int) {
	t.Helper()
	c := Command(ctx, "sh", "-c", script)
	c.Grace = grace
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return c, pid
}

// gone reports whether pid has ended (exited, or a zombie its new parent has yet to reap).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	for end := time.Now().Add(within); !gone(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("process %d still runs %s after", pid, within)
		}
	}
}

func TestCancelEndsTheGrandchildrenWithTheLeader(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, pid := started(t, ctx, time.Minute, "sleep 300 & echo $!; wait")
	cancel()
	start := time.Now()
	if err := c.Wait(); err == nil {
		t.Error("a cancelled command reported success")
	}
	waitGone(t, pid, 5*time.Second)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("SIGTERM took %s: the grace of a minute was waited", d)
	}
}

func TestCancelKillsAGroupIgnoringSIGTERMAfterTheGrace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, pid := started(t, ctx, 300*time.Millisecond, "trap '' TERM; (trap '' TERM; exec sleep 300) & echo $!; wait; wait")
	cancel()
	start := time.Now()
	c.Wait()
	waitGone(t, pid, 5*time.Second)
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("killed after %s, before the grace", d)
	}
}

func TestWaitKillsWhatOfTheGroupOutlivedItsLeader(t *testing.T) {
	c, pid := started(t, context.Background(), time.Minute, "sleep 300 & echo $!")
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, 5*time.Second)
}

// buildah stops its RUN step's container (in a session of its own) only on SIGTERM.
func TestCancelLetsTheLeaderCleanUpOnSIGTERMFirst(t *testing.T) {
	mark := t.TempDir() + "/cleaned"
	ctx, cancel := context.WithCancel(context.Background())
	c, pid := started(t, ctx, time.Minute, "trap 'touch "+mark+"; kill $child; exit 0' TERM; sleep 300 & child=$!; echo $child; wait")
	cancel()
	c.Wait()
	waitGone(t, pid, 5*time.Second)
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the leader's SIGTERM handler did not run: %v", err)
	}
}

// A second signal exits ceval at once, without waiting for its children: KillAll ends
// every group still running first (buildah and its RUN step were left as orphans).
func TestKillAllEndsEveryGroupNotWaitedFor(t *testing.T) {
	c, grandchild := started(t, context.Background(), time.Minute, "sleep 300 & echo $!; wait")
	waited, _ := started(t, context.Background(), time.Minute, "echo $$; exit 0")
	waited.Wait()
	if len(live) != 1 || !live[c.Process.Pid] {
		t.Fatalf("live groups %v, want only %d's", live, c.Process.Pid)
	}
	KillAll()
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the group's leader runs on after KillAll")
	}
	for end := time.Now().Add(5 * time.Second); !gone(grandchild); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the group's other member runs on after KillAll")
		}
	}
	if len(live) != 0 {
		t.Errorf("live groups after Wait: %v", live)
	}
}

// buildah's RUN step runs runc in a session (and so a process group) of its own: KillAll,
// before an exit that waits for nothing, ends it by PID as a descendant of the group.
func TestKillAllEndsADescendantInASessionOfItsOwn(t *testing.T) {
	c, escaped := started(t, context.Background(), time.Minute, "setsid sleep 300 & echo $!; wait")
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(escaped) + "/stat")
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(escaped) { // setsid has made it a group leader
			break
		}
		if time.Now().After(end) {
			t.Fatalf("process %d never left its group", escaped)
		}
	}
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	KillAll()
	c.Wait()
	waitGone(t, escaped, 5*time.Second)
}
