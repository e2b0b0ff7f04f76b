package local

import (
	"context"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// Backend is the local containerd backend, the sandbox.Backend of a run on this host: its
// images resolved in Client's containerd (pinned with Pins, preflighted, the default one
// built from Busybox), its sandboxes this package's, their user namespaces' host IDs from IDs
// (the zero value: sandbox.DefaultIDRange).
type Backend struct {
	Client    *client.Client
	Pins      *images.Pinner
	Preflight *images.PreflightCache
	Busybox   string
	IDs       sandbox.IDRange
}

// ResolveImage makes the task's image present in containerd, pinned and preflighted.
func (b *Backend) ResolveImage(ctx context.Context, sb task.Sandbox) (images.Image, error) {
	return images.ResolveSandbox(ctx, b.Client, sb, b.Pins, b.Preflight, b.Busybox, nil)
}

// Prepare starts the ID slot's /proc scan and the user namespace holder's fork and exec
// (NewSandbox takes the chain over), and the init's digest (once per process), which names
// its installed file.
func (b *Backend) Prepare() sandbox.Reservation {
	ids := b.IDs
	if ids == (sandbox.IDRange{}) {
		ids = sandbox.DefaultIDRange
	}
	go embedded.Init.SHA256()
	return StartIDs(ids)
}

// NewSandbox creates the agent's sandbox in Client's containerd.
func (b *Backend) NewSandbox(ctx context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
	cfg.Client = b.Client
	sb, err := NewSandbox(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return sb, nil
}

// Check refuses a task whose verifier needs a root overlay this host's kernel cannot mount
// (CheckRootVerifier: a plain error, the host's and not the task's).
func (b *Backend) Check(t *task.Task) error { return CheckRootVerifier(t) }
