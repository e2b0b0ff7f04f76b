package local

import (
	"context"
	"os"

	"github.com/containerd/containerd/v2/client"
)

// WithImageRoot calls f with a read-only view of image name's unpacked rootfs (its
// snapshot, mounted for the call only): for a caller that must know what the image holds
// before a container of it starts (the verifier's Python start guard).
func WithImageRoot(ctx context.Context, c *client.Client, name string, f func(*os.Root) error) error {
	return withImageRoot(ctx, c, name, f)
}
