// Package netns runs a function inside another network namespace, on an OS thread that
// entered it and went back before any other goroutine may use it. The one copy of this for
// the model gateway's listener and the services' relay.
package netns

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn on a locked OS thread inside the network namespace ns (an open
// /proc/PID/ns/net) and returns fn's error. Sockets fn makes belong to ns and keep serving
// from any thread. The thread goes back to this process's namespace before it is unlocked;
// one that cannot go back (rootless: no CAP_SYS_ADMIN over our own namespace) dies with its
// goroutine instead of serving others from ns. Entering needs CAP_SYS_ADMIN over ns.
func Do(ns *os.File, fn func() error) error {
	ch := make(chan error, 1)
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
			ch <- fmt.Errorf("own network namespace: %w", err)
			return
		}
		defer self.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			back = true
			ch <- fmt.Errorf("enter the container's network namespace: %w", err)
			return
		}
		ferr := fn()
		back = unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil
		ch <- ferr
	}()
	return <-ch
}
