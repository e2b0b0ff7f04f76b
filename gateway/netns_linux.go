package gateway

import (
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// DefaultAddr is where the agent reaches the gateway inside its container: a port below
// 1024, which the agent (no capabilities) cannot bind first.
const DefaultAddr = "127.0.0.1:80"

// ListenInNetns opens a TCP listener on addr inside the network namespace of process pid
// (a created, not yet started container task), with no process of ours in the container.
// It needs CAP_SYS_ADMIN. The listener keeps the namespace alive: close it at teardown.
func ListenInNetns(pid uint32, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// Unlocked only once the thread is back in our namespace; otherwise it dies with
		// this goroutine instead of serving others from the container's namespace.
		back := false
		defer func() {
			if back {
				runtime.UnlockOSThread()
			}
		}()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			back = true
			ch <- result{nil, fmt.Errorf("gateway: own network namespace: %w", err)}
			return
		}
		defer self.Close()
		target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			back = true
			ch <- result{nil, fmt.Errorf("gateway: network namespace of pid %d: %w", pid, err)}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			back = true
			ch <- result{nil, fmt.Errorf("gateway: enter the container's network namespace: %w", err)}
			return
		}
		ln, lerr := net.Listen("tcp", addr)
		// Without CAP_SYS_ADMIN over our own namespace (rootless: it is the host's, owned by
		// the initial user namespace) the thread cannot go back; it then dies with this
		// goroutine, still locked, and the listener, bound already, serves from any thread.
		back = unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil
		if lerr != nil {
			lerr = fmt.Errorf("gateway: listen on %s in the container: %w", addr, lerr)
		}
		ch <- result{ln, lerr}
	}()
	r := <-ch
	return r.ln, r.err
}
