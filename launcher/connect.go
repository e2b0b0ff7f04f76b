package launcher

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
)

// DefaultAddress is containerd's usual socket; CEVAL_CONTAINERD_ADDRESS overrides it.
const DefaultAddress = "/run/containerd/containerd.sock"

// PrivateAddress is the socket of the private containerd that `make setup`
// (scripts/containerd.sh start) runs; used when the system socket is absent.
const PrivateAddress = "/tmp/ceval-containerd/containerd.sock"

// DefaultNamespace keeps ceval's containers, images and snapshots apart from anyone else's.
const DefaultNamespace = "ceval"

// AddressFromEnv returns CEVAL_CONTAINERD_ADDRESS when it is set; otherwise DefaultAddress,
// or PrivateAddress when only that socket exists (a shell that never exported the variable
// still finds the daemon `make setup` started).
func AddressFromEnv() string {
	a, _ := DiscoverAddress(os.Getenv("CEVAL_CONTAINERD_ADDRESS"), SocketExists)
	return a
}

// DiscoverAddress picks the containerd socket: env when set, else the system socket, else
// the private daemon's when only it exists. why says so when the private daemon was chosen.
func DiscoverAddress(env string, exists func(string) bool) (address, why string) {
	switch {
	case env != "":
		return env, ""
	case !exists(DefaultAddress) && exists(PrivateAddress):
		return PrivateAddress, "the private containerd started by make setup (" + DefaultAddress + " is absent)"
	}
	return DefaultAddress, ""
}

// SocketExists reports whether p is a Unix socket.
func SocketExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// NamespaceFromEnv returns CEVAL_NAMESPACE, or DefaultNamespace when it is unset.
func NamespaceFromEnv() string {
	if n := os.Getenv("CEVAL_NAMESPACE"); n != "" {
		return n
	}
	return DefaultNamespace
}

// Connect dials containerd at address and checks that it answers within a few seconds.
// The returned context carries namespace; every later call must use it (or a child of it).
func Connect(ctx context.Context, address, namespace string) (*client.Client, context.Context, error) {
	if _, err := os.Stat(address); err != nil {
		return nil, nil, fmt.Errorf("containerd socket %s: %w (is containerd running? start one with make setup or scripts/containerd.sh start, or set --containerd-address / CEVAL_CONTAINERD_ADDRESS)", address, err)
	}
	c, err := client.New(address, client.WithDefaultNamespace(namespace), client.WithTimeout(5*time.Second))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to containerd at %s: %w (is containerd running? start one with scripts/containerd.sh start, or set --containerd-address / CEVAL_CONTAINERD_ADDRESS)", address, err)
	}
	nctx := namespaces.WithNamespace(ctx, namespace)
	vctx, cancel := context.WithTimeout(nctx, 5*time.Second)
	defer cancel()
	if _, err := c.Version(vctx); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("containerd at %s does not answer: %w", address, err)
	}
	return c, nctx, nil
}
