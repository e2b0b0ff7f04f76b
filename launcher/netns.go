package launcher

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// OpenNetns opens the network namespace of pid (a container's init): held open, the
// namespace outlives its processes, and DialInNetns connects inside it.
func OpenNetns(pid uint32) (*os.File, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, fmt.Errorf("network namespace of pid %d: %w", pid, err)
	}
	return f, nil
}

// DialInNetns connects to addr (TCP) from inside the network namespace ns, within timeout:
// the socket is made on a thread that entered ns, so the connection is that namespace's
// (its loopback is the container's own). The thread goes back to this process's namespace
// before others use it; one that cannot go back dies with its goroutine.
func DialInNetns(ctx context.Context, ns *os.File, addr string, timeout time.Duration) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		back := false
		defer func() {
			if back {
				runtime.UnlockOSThread()
			}
		}()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			back = true
			ch <- result{nil, fmt.Errorf("own network namespace: %w", err)}
			return
		}
		defer self.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			back = true
			ch <- result{nil, fmt.Errorf("enter the container's network namespace: %w", err)}
			return
		}
		// Only the socket's creation needs this thread's namespace; a Dialer makes it here,
		// synchronously, before it waits for the connection.
		c, derr := (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
		back = unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil
		ch <- result{c, derr}
	}()
	r := <-ch
	return r.c, r.err
}
