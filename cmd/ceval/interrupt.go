package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/internal/procgroup"
	"ceval.dev/ceval/internal/tempdir"
)

// keepsExitOnInterrupt marks a command whose own exit code stands when it is interrupted:
// `run` exits 3 (its runs are not graded) as documented.
const keepsExitOnInterrupt = "ceval.dev/keeps-exit-on-interrupt"

// interruption is the cause of every command's context once ceval got SIGINT or SIGTERM.
type interruption struct{ sig syscall.Signal }

func (i interruption) Error() string { return "interrupted by " + signalName(i.sig) }

func signalName(s syscall.Signal) string {
	if s == syscall.SIGINT {
		return "SIGINT"
	}
	return "SIGTERM"
}

// interrupted is set by the first SIGINT or SIGTERM, before the commands' context is
// cancelled: closers that would do optional work at the end (the WASM compiler keeping what
// grades compiled) skip it, so ceval exits promptly.
var interrupted atomic.Bool

// interruptible returns a context cancelled, with an interruption as its cause, by the
// first SIGINT or SIGTERM, which ceval acknowledges on stderr: every command stops its
// children (procgroup), removes its containers and temporary directories, and returns. A second signal exits at once, after
// killing the child process groups still running (procgroup.KillAll) and removing the
// temporary directories still there that hold no mount (tempdir.RemoveLive): the deferred
// calls that would have done so never run.
func interruptible(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			// Said once the signal is received: Go's runtime merges a second signal that
			// arrives before its receiver took the first, so a second sent earlier is lost.
			fmt.Fprintf(os.Stderr, "ceval: %s: stopping and cleaning up (%[1]s again: exit at once)\n", signalName(s.(syscall.Signal)))
			interrupted.Store(true)
			cancel(interruption{s.(syscall.Signal)})
		case <-quit:
			return
		}
		select {
		case s := <-sigs:
			fmt.Fprintf(os.Stderr, "ceval: %s again: exiting without stopping containers (ceval gc removes them)\n", signalName(s.(syscall.Signal)))
			procgroup.KillAll() // buildah, mmdebstrap: not orphans still writing to their directories
			for _, err := range tempdir.RemoveLive() {
				fmt.Fprintf(os.Stderr, "ceval: %v\n", err)
			}
			os.Exit(128 + int(s.(syscall.Signal)))
		case <-quit:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(quit)
		cancel(nil)
	}
}

// interruptedExit is the exit code of a command that ended while ceval was interrupted:
// 128 + the signal (130 SIGINT, 143 SIGTERM) when it failed, unless the command keeps its own.
func interruptedExit(ctx context.Context, cmd *cobra.Command, code int) (int, bool) {
	var in interruption
	if code == exitOK || !errors.As(context.Cause(ctx), &in) {
		return code, false
	}
	if cmd != nil && cmd.Annotations[keepsExitOnInterrupt] != "" {
		return code, false
	}
	return 128 + int(in.sig), true
}
