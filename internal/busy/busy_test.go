package busy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestIsTakesTheErrnoAndContainerdsText(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{unix.EBUSY, true},
		{fmt.Errorf("unmount /x: %w", unix.EBUSY), true},
		// containerd's gRPC error: the errno is gone, its text is left
		{errors.New("rpc error: code = Unknown desc = failed to unmount /var/lib/containerd/tmpmounts/containerd-mount1: device or resource busy"), true},
		{unix.EINVAL, false},
		{errors.New("rpc error: code = NotFound desc = no such task"), false},
	} {
		if got := Is(c.err); got != c.want {
			t.Errorf("Is(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestRetryRidesOutABusySpellAndNothingElse(t *testing.T) {
	calls := 0
	err := retry(context.Background(), 10*time.Second, func() error {
		calls++
		if calls < 4 {
			return fmt.Errorf("delete task: %w", unix.EBUSY)
		}
		return nil
	})
	if err != nil || calls != 4 {
		t.Fatalf("busy three times then free: err %v after %d calls, want nil after 4", err, calls)
	}

	calls = 0
	other := errors.New("permission denied")
	if err := retry(context.Background(), 10*time.Second, func() error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("another error: %v after %d calls, want it after 1 (no retry)", err, calls)
	}
}

func TestRetryStopsAtItsBoundAndAtTheContextsEnd(t *testing.T) {
	start := time.Now()
	err := retry(context.Background(), 300*time.Millisecond, func() error { return unix.EBUSY })
	if !errors.Is(err, unix.EBUSY) {
		t.Fatalf("busy forever: %v, want EBUSY once the bound passed", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("busy forever under a 300 ms bound: gave up after %s", took)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if err := retry(ctx, time.Hour, func() error { return unix.EBUSY }); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("cancelled: %v, want the last EBUSY", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cancelled after 200 ms: returned after %s", took)
	}
}

// TestUnmountWaitsForAHolderToLetGo holds a tmpfs busy with an fd on its root (the kernel
// refuses a plain umount with EBUSY) and lets go after 2 s: Unmount succeeds and the mount is
// gone, not detached while still held.
func TestUnmountWaitsForAHolderToLetGo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("ceval-busy-test", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	release := func() { f.Close() }
	if err := unix.Unmount(dir, 0); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("held mount unmounted with %v: the test holds nothing", err)
	}
	go func() { time.Sleep(2 * time.Second); release() }()
	start := time.Now()
	if err := Unmount(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Fatalf("Unmount returned after %s, before the holder let go: detached, not waited for", took)
	}
	if mounted(t, dir) {
		t.Fatalf("%s still mounted", dir)
	}
}

func mounted(t *testing.T, dir string) bool {
	t.Helper()
	var st, parent unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(filepath.Dir(dir), &parent); err != nil {
		t.Fatal(err)
	}
	return st.Dev != parent.Dev
}
