package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/containerd/containerd/v2/pkg/cio"
)

// ExecResult is how an Exec ended.
type ExecResult struct {
	Code     int  // exit status (128+N when killed by signal N); -1 when it timed out
	TimedOut bool // the timeout passed and the process was killed
}

// Exec runs args as a further process of the running task (a readiness probe), with the
// container's own process settings (user, environment, working directory, no capabilities,
// no_new_privs) and its seccomp profile and cgroup's limits, its output to out (may be
// nil), and waits for it within timeout, killing it past that. id names it among the task's
// processes. A caller cannot give the process settings of its own (an exec gets whatever
// its process spec asks for), and Exec refuses a container whose own settings hold any
// capability or lack no_new_privs.
func (t *Task) Exec(ctx context.Context, id string, args []string, timeout time.Duration, out io.Writer) (ExecResult, error) {
	base := t.ctr.process
	if base == nil {
		return ExecResult{}, fmt.Errorf("exec in %s: the container has no process spec", t.ctr.spec.ID)
	}
	if c := base.Capabilities; !base.NoNewPrivileges || c != nil && len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) > 0 {
		return ExecResult{}, fmt.Errorf("exec in %s: refused: the container's process has capabilities or lacks no_new_privs", t.ctr.spec.ID)
	}
	if len(args) == 0 {
		return ExecResult{}, fmt.Errorf("exec in %s: no command", t.ctr.spec.ID)
	}
	pspec := *base
	pspec.Args = slices.Clone(args)
	pspec.Terminal = false
	pspec.ConsoleSize = nil
	var w io.Writer = io.Discard
	if out != nil {
		w = out
	}
	ioOpts := []cio.Opt{cio.WithStreams(nil, w, w)}
	if t.ctr.spec.FIFODir != "" {
		ioOpts = append(ioOpts, cio.WithFIFODir(t.ctr.spec.FIFODir))
	}
	p, err := t.task.Exec(ctx, id, &pspec, cio.NewCreator(ioOpts...))
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %s in %s: %w", id, t.ctr.spec.ID, err)
	}
	cctx, cancel := CleanupContext(ctx)
	defer cancel()
	defer func() { _, _ = p.Delete(cctx) }()
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	exitCh, err := p.Wait(wctx)
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %s in %s: wait: %w", id, t.ctr.spec.ID, err)
	}
	if err := p.Start(ctx); err != nil {
		return ExecResult{}, fmt.Errorf("exec %s in %s: start: %w", id, t.ctr.spec.ID, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case st := <-exitCh:
		code, _, err := st.Result()
		if err != nil {
			return ExecResult{}, fmt.Errorf("exec %s in %s: %w", id, t.ctr.spec.ID, err)
		}
		return ExecResult{Code: int(code)}, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	kerr := p.Kill(cctx, 9)
	select {
	case <-exitCh:
	case <-time.After(killWait):
		kerr = errors.Join(kerr, errors.New("the process did not exit after SIGKILL"))
	}
	if kerr != nil {
		return ExecResult{}, fmt.Errorf("exec %s in %s: kill: %w", id, t.ctr.spec.ID, kerr)
	}
	if ctx.Err() != nil {
		return ExecResult{}, ctx.Err()
	}
	return ExecResult{Code: -1, TimedOut: true}, nil
}
