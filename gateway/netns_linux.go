package gateway

import (
	"fmt"
	"net"
	"os"

	"ceval.dev/ceval/internal/netns"
)

// DefaultAddr is where the agent reaches the gateway inside its container: a port below
// 1024, which the agent (no capabilities) cannot bind first.
const DefaultAddr = "127.0.0.1:80"

// ListenInNetns opens a TCP listener on addr inside the network namespace of process pid
// (a created, not yet started container task), with no process of ours in the container.
// It needs CAP_SYS_ADMIN. The listener keeps the namespace alive: close it at teardown.
func ListenInNetns(pid uint32, addr string) (net.Listener, error) {
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, fmt.Errorf("gateway: network namespace of pid %d: %w", pid, err)
	}
	defer target.Close()
	var ln net.Listener
	var lerr error
	if err := netns.Do(target, func() error {
		ln, lerr = net.Listen("tcp", addr)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if lerr != nil {
		return nil, fmt.Errorf("gateway: listen on %s in the container: %w", addr, lerr)
	}
	return ln, nil
}
