package main

import (
	"context"

	"github.com/containerd/containerd/v2/client"
	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
)

// session is what a command that runs containers holds: a context cancelled by Ctrl-C or
// SIGTERM and carrying the containerd namespace, the client, and the image preflight cache.
type session struct {
	ctx       context.Context
	client    *client.Client
	preflight *images.PreflightCache // nil when the cache directory is unusable: preflights then run uncached
	stop      context.CancelFunc
}

// openSession connects to containerd (connectRuns); a failure is an infrastructure error (exit 3).
func (g *globalOptions) openSession(cmd *cobra.Command) (*session, error) {
	ctx, stop := context.WithCancel(cmd.Context()) // cancelled by SIGINT and SIGTERM (interruptible)
	if g.kube != nil {
		// Runs go to the cluster: no containerd here (verifier tasks are refused there).
		return &session{ctx: ctx, stop: stop}, nil
	}
	c, cctx, err := g.connectRuns(ctx, cmd)
	if err != nil {
		stop()
		return nil, err
	}
	s := &session{ctx: cctx, client: c, stop: stop}
	if dir, err := images.DefaultCacheDir(); err == nil {
		s.preflight, _ = images.NewPreflightCache(dir)
	}
	return s, nil
}

// Close releases the client and the signal handler.
func (s *session) Close() {
	if s.client != nil {
		images.WaitTouches() // the last-used labels this session's runs started
		s.client.Close()
	}
	s.stop()
}
