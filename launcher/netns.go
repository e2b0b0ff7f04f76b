package launcher

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"ceval.dev/ceval/internal/netns"
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
	var c net.Conn
	err := netns.Do(ns, func() error {
		// Only the socket's creation needs this thread's namespace; a Dialer makes it here,
		// synchronously, before it waits for the connection.
		var err error
		c, err = (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// Redirect sends TCP connections made inside a network namespace to Addr:Port on to
// Addr:ToPort instead (destination NAT on the namespace's own output path): a relay can
// listen on a port of its own while programs there still connect to Port, and a program
// there listening on a wildcard address at Port does not collide with the relay.
type Redirect struct {
	Addr         netip.Addr // IPv4
	Port, ToPort uint16
}

// nftTool is the host's nft (Debian's nftables), which RedirectInNetns runs through
// nsenter (util-linux).
var nftTool = "/usr/sbin/nft"

// RedirectTools lists the host programs RedirectInNetns runs, for a check before a run.
func RedirectTools() []string { return []string{nsenterTool, nftTool} }

// RedirectInNetns installs rs in the network namespace of pid (a container's init, before it
// runs) as one nftables table of its own; the namespace's processes, without CAP_NET_ADMIN
// there, can neither read nor change it.
func RedirectInNetns(pid uint32, rs []Redirect) error {
	if len(rs) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("table ip ceval_services {\n  chain out {\n    type nat hook output priority -100; policy accept;\n")
	for _, r := range rs {
		if !r.Addr.Is4() || r.Port == 0 || r.ToPort == 0 {
			return fmt.Errorf("redirect %v:%d -> %d: want an IPv4 address and two ports", r.Addr, r.Port, r.ToPort)
		}
		fmt.Fprintf(&b, "    ip daddr %s tcp dport %d dnat to %s:%d\n", r.Addr, r.Port, r.Addr, r.ToPort)
	}
	b.WriteString("  }\n}\n")
	cmd := exec.Command(nsenterTool, "--net=/proc/"+strconv.FormatUint(uint64(pid), 10)+"/ns/net", "--", nftTool, "-f", "-")
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("redirects in the network namespace of pid %d: %s: %w: %s (install nftables)", pid, nftTool, err, strings.TrimSpace(string(out)))
	}
	return nil
}
