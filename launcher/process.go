package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"

	"ceval.dev/ceval/internal/busy"
	"ceval.dev/ceval/internal/phasetime"
)

// killWait bounds how long Wait waits for the task to report its exit after SIGKILL to
// every process in it; past it, something is wrong with the shim, not the agent.
const killWait = 10 * time.Second

// cgroupDrain bounds how long Wait waits for the container's cgroup to empty once PID 1
// exited (the kernel kills the rest of the PID namespace asynchronously). The wait is
// event-driven, so the bound costs nothing when the cgroup empties; it is generous because
// a killed process in uninterruptible sleep (a write on a disk busy with other work) dies
// only when its I/O ends, and a cgroup not empty in time is the run's ERROR. 2 s was
// within reach of a loaded host.
const cgroupDrain = 10 * time.Second

// StartHook runs after the task exists (its namespaces are set up, PID 1 is created but has
// not run) and before it starts. pid is PID 1's host PID, e.g. to open a socket in its
// network namespace through /proc/<pid>/ns/net. An error aborts Start.
type StartHook func(ctx context.Context, pid uint32) error

// Exit is how a task ended.
type Exit struct {
	Code        int           // exit status as the shim reports it (128+N when killed by signal N)
	Signaled    bool          // Code says a signal ended PID 1
	TimedOut    bool          // the timeout passed and Wait stopped the task
	Interrupted bool          // ctx was cancelled and Wait stopped the task
	OutputCut   bool          // stdout or stderr went past the log cap; the rest was read and discarded
	Duration    time.Duration // from Start to exit
	Reap        time.Duration // from the exit (or the stop) to the task's deletion: kill, cgroup check, delete, output drained
	CgroupEmpty bool          // no process was left in the container's cgroup after the exit
	CgroupError string        // why CgroupEmpty could not be established, if it could not
}

// Task is a started container process (the init, PID 1) and its IO.
type Task struct {
	ctr         *Container
	task        client.Task
	cgroupsPath string
	started     time.Time
	goAhead     time.Time // GoAhead's; under mu
	stopWait    context.CancelFunc
	outs        []*cappedWriter

	exited   chan struct{} // closed when status is set
	status   client.ExitStatus
	exitedAt time.Time

	copyOnce sync.Once
	copyDone chan struct{} // closed when the client's copier has read the output to its end

	destroyMu sync.Mutex // held across destroy's round trips, not t.mu, so Metrics never waits on a deletion

	mu       sync.Mutex
	deleting chan struct{} // closed when the deletion Wait started in the background has ended
	delErr   error         // that deletion's error, set before deleting is closed
	deleted  bool
	reaped   bool // Wait took its final reading: Metrics returns it from then on
	exit     *Exit
	last     *Resources
	peakPids uint64
}

// Start creates the task (CreateTask) and starts it (Task.Start). If any step fails, the
// task is killed and deleted; the container stays for Delete.
func (c *Container) Start(ctx context.Context, beforeStart StartHook) (*Task, error) {
	t, err := c.CreateTask(ctx, beforeStart)
	if err != nil {
		return nil, err
	}
	if err := t.Start(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// CreateTask creates the task with stdout and stderr streamed into capped files (its
// namespaces, cgroup and root made, PID 1 created but not yet running), arms the exit wait
// (before the start: a task that exits at once would otherwise be missed) and calls
// beforeStart (may be nil); Task.Start starts it, now or later (a sandbox prepared ahead of
// its run). If any step fails, the task is killed and deleted; the container stays for
// Delete, which also deletes a task created and never started.
func (c *Container) CreateTask(ctx context.Context, beforeStart StartHook) (_ *Task, retErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted || c.ctr == nil {
		return nil, fmt.Errorf("start container %s: deleted", c.spec.ID)
	}
	if c.task != nil {
		return nil, fmt.Errorf("start container %s: already started", c.spec.ID)
	}
	t := &Task{ctr: c, exited: make(chan struct{}), cgroupsPath: c.cgroupsPath}
	stdout, err := t.output(c.spec.StdoutPath, c.spec.Stdout, "stdout", c.spec.LogCap)
	if err != nil {
		return nil, fmt.Errorf("start container %s: %w", c.spec.ID, err)
	}
	stderr, err := t.output(c.spec.StderrPath, c.spec.Stderr, "stderr", c.spec.LogCap)
	if err != nil {
		t.closeOutputs()
		return nil, fmt.Errorf("start container %s: %w", c.spec.ID, err)
	}
	// The wait (and stdin's close) must outlive ctx: a cancelled run still has to see its
	// task exit.
	wctx, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	var stdin io.Reader
	var eof *stdinEOF
	if c.spec.Stdin != nil {
		eof = &stdinEOF{r: c.spec.Stdin, ctx: wctx, ready: make(chan struct{})}
		stdin = eof
	}
	ioOpts := []cio.Opt{cio.WithStreams(stdin, stdout, stderr)}
	if c.spec.FIFODir != "" {
		ioOpts = append(ioOpts, cio.WithFIFODir(c.spec.FIFODir))
	}
	endNewTask := phasetime.Span("task create: NewTask")
	tk, err := newTaskUncancelled(ctx, c.ctr, cio.NewCreator(ioOpts...))
	endNewTask()
	if err != nil {
		stopWait()
		t.closeOutputs()
		return nil, fmt.Errorf("create task %s: %w", c.spec.ID, err)
	}
	if eof != nil {
		eof.task = tk
		close(eof.ready)
	}
	t.task = tk
	t.stopWait = stopWait
	c.task = t
	defer func() {
		if retErr != nil {
			cctx, cancel := CleanupContext(ctx)
			defer cancel()
			if err := t.destroy(cctx); err != nil {
				retErr = errors.Join(retErr, err)
			}
		}
	}()

	if err := ctx.Err(); err != nil {
		// Cancelled while containerd created the task: it goes (deferred destroy) now.
		return nil, fmt.Errorf("create task %s: %w", c.spec.ID, context.Cause(ctx))
	}
	exitCh, err := tk.Wait(wctx)
	if err != nil {
		return nil, fmt.Errorf("wait task %s: %w", c.spec.ID, err)
	}
	go func() {
		st, ok := <-exitCh
		if !ok {
			st = *client.NewExitStatus(client.UnknownExitStatus, time.Time{}, errors.New("exit channel closed"))
		}
		t.status, t.exitedAt = st, time.Now()
		close(t.exited)
	}()

	if beforeStart != nil {
		defer phasetime.Span("task create: before start")()
		if err := beforeStart(ctx, tk.Pid()); err != nil {
			return nil, fmt.Errorf("start task %s: before start: %w", c.spec.ID, err)
		}
	}
	return t, nil
}

// newTaskUncancelled creates ctr's task on a context the caller's cancellation does not
// cancel until createGrace after it: containerd 1.6 does not undo a task create whose call
// was cancelled mid-way (its shim left running, or its bundle directory left, which fails
// the next create of the same ID with "mkdir .../io.containerd.runtime.v2.task/NS/ID: file
// exists"). The caller sees its cancellation once the call returns, and destroys the task.
func newTaskUncancelled(ctx context.Context, ctr client.Container, ioc cio.Creator) (client.Task, error) {
	nctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, func() {
		bound := time.NewTimer(createGrace)
		defer bound.Stop()
		select {
		case <-bound.C:
			cancel()
		case <-nctx.Done():
		}
	})()
	return ctr.NewTask(nctx, ioc)
}

// createGrace bounds how long a task create goes on once its caller was cancelled: past it
// something is wrong with containerd, and what it left is ceval gc's.
const createGrace = time.Minute

// Start starts a task CreateTask made; once only. If it fails, the task is killed and
// deleted; the container stays for Delete.
func (t *Task) Start(ctx context.Context) (retErr error) {
	c := t.ctr
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted || c.task != t {
		return fmt.Errorf("start task %s: deleted", c.spec.ID)
	}
	if !t.started.IsZero() {
		return fmt.Errorf("start task %s: already started", c.spec.ID)
	}
	defer func() {
		if retErr != nil {
			cctx, cancel := CleanupContext(ctx)
			defer cancel()
			if err := t.destroy(cctx); err != nil {
				retErr = errors.Join(retErr, err)
			}
		}
	}()
	t.started = time.Now()
	if err := t.task.Start(ctx); err != nil {
		return fmt.Errorf("start task %s: %w", c.spec.ID, err)
	}
	return nil
}

// output returns the capped destination of one stream: the file at path, else the caller's
// writer, else nil (discarded).
func (t *Task) output(path string, w io.Writer, name string, limit int64) (io.Writer, error) {
	var cw *cappedWriter
	switch {
	case path != "":
		var err error
		if cw, err = createCapped(path, limit); err != nil {
			return nil, err
		}
	case w != nil:
		cw = newCapped(w, name, limit)
	default:
		return nil, nil
	}
	t.outs = append(t.outs, cw)
	return cw, nil
}

// GoAhead records when the task's process was let go (the init's go-ahead, given after its
// attestation, possibly long after Start for a sandbox started ahead of its turn): Wait's
// timeout and the Exit's Duration count from it, as the init's own deadline does.
func (t *Task) GoAhead(at time.Time) {
	t.mu.Lock()
	t.goAhead = at
	t.mu.Unlock()
}

// from is when the task's time counts from: its go-ahead, else its start.
func (t *Task) from() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.goAhead.IsZero() {
		return t.goAhead
	}
	return t.started
}

// Pid returns PID 1's PID on the host.
func (t *Task) Pid() uint32 { return t.task.Pid() }

// Wait waits for the task to exit, at most timeout after Start (0: no limit) or until ctx
// is cancelled. Then it stops it: SIGTERM to PID 1 (the init forwards it), grace, SIGKILL to
// every process in the container. Once PID 1 is gone it records the final metrics (see
// Metrics), checks that the container's cgroup holds no process, and returns once the
// output files are complete and closed. When the cgroup is empty, deleting the task (runc's
// delete, the rootfs unmounted, the shim gone) goes on in the background and
// Container.Delete waits for it and reports its error; else the task is deleted (killing
// what is left) before Wait returns. A second call returns the same Exit.
func (t *Task) Wait(ctx context.Context, timeout, grace time.Duration) (Exit, error) {
	t.mu.Lock()
	if t.exit != nil {
		defer t.mu.Unlock()
		return *t.exit, nil
	}
	t.mu.Unlock()

	var ex Exit
	var deadline <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(time.Until(t.from().Add(timeout)))
		defer tm.Stop()
		deadline = tm.C
	}
	select {
	case <-t.exited:
	case <-deadline:
		ex.TimedOut = true
	case <-ctx.Done():
		ex.Interrupted = true
	}
	reapStart := time.Now()
	cctx, cancel := CleanupContext(ctx)
	defer cancel()
	if ex.TimedOut || ex.Interrupted {
		if err := t.stop(cctx, grace); err != nil {
			return ex, err
		}
	}

	ex.Duration = t.exitedAt.Sub(t.from())
	code, _, err := t.status.Result()
	if err != nil {
		return ex, fmt.Errorf("wait task %s: %w", t.ctr.spec.ID, err)
	}
	ex.Code = int(code)
	ex.Signaled = code > 128 && code <= 128+64

	// Last look at the cgroup before the task's deletion removes it; a failure is not
	// fatal here, Metrics reports it again.
	_, _ = t.Metrics(cctx)
	t.mu.Lock()
	t.reaped = true
	t.mu.Unlock()
	if t.cgroupsPath == "" && t.ctr.killsByInit() {
		// No cgroup of its own (rootless, rlimit mode): PID 1 of a PID namespace is reaped
		// only after the kernel has killed and reaped every other process in it.
		ex.CgroupEmpty = true
		if err := t.finishOutputs(); err != nil {
			t.deleteInBackground(ctx)
			return ex, err
		}
		t.deleteInBackground(ctx)
	} else if err := waitCgroupEmpty(cgroupRoot, t.cgroupsPath, cgroupDrain); err != nil {
		ex.CgroupError = err.Error()
		if err := t.destroy(cctx); err != nil {
			return ex, err
		}
	} else {
		ex.CgroupEmpty = true
		// Nothing of the container's runs any more: what is left is teardown, which the
		// caller need not wait for to read the output or copy the workspace out.
		if err := t.finishOutputs(); err != nil {
			t.deleteInBackground(ctx)
			return ex, err
		}
		t.deleteInBackground(ctx)
	}
	for _, w := range t.outs {
		ex.OutputCut = ex.OutputCut || w.Cut()
	}
	ex.Reap = time.Since(reapStart)
	t.mu.Lock()
	t.exit = &ex
	t.mu.Unlock()
	return ex, nil
}

// stop sends SIGTERM to PID 1, waits grace, then SIGKILLs every process in the container
// and waits for the exit.
func (t *Task) stop(ctx context.Context, grace time.Duration) error {
	if err := t.task.Kill(ctx, syscall.SIGTERM); err != nil && !gone(err) {
		return fmt.Errorf("stop task %s: SIGTERM: %w", t.ctr.spec.ID, err)
	}
	gt := time.NewTimer(grace)
	defer gt.Stop()
	select {
	case <-t.exited:
		return nil
	case <-gt.C:
	}
	return t.killAll(ctx)
}

func (t *Task) killAll(ctx context.Context) error {
	var opts []client.KillOpts
	if !t.ctr.killsByInit() {
		opts = append(opts, client.WithKillAll)
	}
	if err := t.task.Kill(ctx, syscall.SIGKILL, opts...); err != nil && !gone(err) {
		return fmt.Errorf("kill task %s: %w", t.ctr.spec.ID, err)
	}
	kt := time.NewTimer(killWait)
	defer kt.Stop()
	select {
	case <-t.exited:
		return nil
	case <-kt.C:
		return fmt.Errorf("kill task %s: no exit %s after SIGKILL", t.ctr.spec.ID, killWait)
	case <-ctx.Done():
		return fmt.Errorf("kill task %s: %w", t.ctr.spec.ID, ctx.Err())
	}
}

// deleteInBackground starts destroy on a context of its own and returns a channel closed
// when it has ended (its error in deleteErr).
func (t *Task) deleteInBackground(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	t.mu.Lock()
	t.deleting = done
	t.mu.Unlock()
	dctx, cancel := CleanupContext(ctx)
	go func() {
		defer cancel()
		err := t.destroy(dctx)
		t.mu.Lock()
		t.delErr = err
		t.mu.Unlock()
		close(done)
	}()
	return done
}

// outputCopyLimit bounds how long the output may take to arrive once every process of the
// container is gone. Past it the output is reported incomplete: a run whose output may have
// been lost is never graded as if it were whole.
var outputCopyLimit = 60 * time.Second

// copied returns a channel closed once the client's copier has read stdout and stderr to
// their end: the shim closes its ends of the FIFOs when it has copied the last byte the
// container's processes wrote, which is after PID 1's exit is reported, not before.
func (t *Task) copied() <-chan struct{} {
	t.copyOnce.Do(func() {
		t.copyDone = make(chan struct{})
		go func() {
			if io := t.task.IO(); io != nil {
				io.Wait()
			}
			close(t.copyDone)
		}()
	})
	return t.copyDone
}

// waitCopied waits, up to outputCopyLimit, for the copier to reach the end of the output.
// The task must not be deleted before: deletion cancels the client's copier, which closes
// the FIFOs' read ends and drops whatever the shim had not yet passed on (under load a
// short-lived process's whole output was).
func (t *Task) waitCopied() error {
	tm := time.NewTimer(outputCopyLimit)
	defer tm.Stop()
	select {
	case <-t.copied():
		return nil
	case <-tm.C:
		return fmt.Errorf("output of task %s: not copied to its end %s after the last process exited; it may be incomplete", t.ctr.spec.ID, outputCopyLimit)
	}
}

// finishOutputs waits until the client has copied the last byte of stdout and stderr and
// closes the files. Called once every process of the container is gone, before the task's
// deletion starts.
func (t *Task) finishOutputs() error {
	errCopy := t.waitCopied()
	if err := t.closeOutputs(); err != nil {
		return fmt.Errorf("output of task %s: %w", t.ctr.spec.ID, err)
	}
	return errCopy
}

// waitDeletion waits for a deletion Wait started in the background and returns its error.
func (t *Task) waitDeletion(ctx context.Context) error {
	t.mu.Lock()
	done := t.deleting
	t.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.delErr
	case <-ctx.Done():
		return fmt.Errorf("delete task %s: %w", t.ctr.spec.ID, ctx.Err())
	}
}

// destroy kills the task if it still runs, deletes it (which lets IO drain) and closes the
// output files. It is idempotent.
func (t *Task) destroy(ctx context.Context) error {
	t.destroyMu.Lock()
	defer t.destroyMu.Unlock()
	t.mu.Lock()
	deleted := t.deleted
	t.mu.Unlock()
	if deleted {
		return nil
	}
	var errs []error
	// A task whose exit was seen is deleted as it is: WithProcessKill would cost a Wait and
	// a Kill round trip to the shim for nothing.
	var opts []client.ProcessDeleteOpts
	select {
	case <-t.exited:
	default:
		if t.ctr.killsByInit() {
			// No cgroup of its own: runc's kill --all (WithProcessKill) fails; SIGKILL to
			// PID 1, started or not, and its exit are all it takes.
			if err := t.killAll(ctx); err != nil {
				errs = append(errs, err)
			}
			break
		}
		opts = append(opts, client.WithProcessKill)
		if t.started.IsZero() {
			// Created, never started: Kill is refused for some runtimes; Delete with kill
			// handles it.
			break
		}
		if err := t.killAll(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	select {
	case <-t.exited:
		// Every process is gone (or killed): let the copier reach the end before the
		// deletion cancels it. An unknown status is the wait stream's end, not the task's.
		if t.status.ExitCode() != client.UnknownExitStatus {
			if err := t.waitCopied(); err != nil {
				errs = append(errs, err)
			}
		}
	default:
	}
	err := busy.Retry(ctx, func() error { // a host tool holding the rootfs for a moment
		_, err := t.task.Delete(ctx, opts...)
		if errdefs.IsFailedPrecondition(err) && len(opts) == 0 {
			// The exit seen was the wait stream's end, not the task's: kill it after all.
			_, err = t.task.Delete(ctx, client.WithProcessKill)
		}
		return err
	})
	if err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete task %s: %w", t.ctr.spec.ID, err))
	}
	if t.stopWait != nil {
		t.stopWait()
	}
	if err := t.closeOutputs(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	t.mu.Lock()
	t.deleted = true
	t.mu.Unlock()
	return nil
}

func (t *Task) closeOutputs() error {
	var errs []error
	for _, w := range t.outs {
		if err := w.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stdinEOF passes the caller's stdin through and, at its end, closes the task's stdin in
// the shim: closing the client's end of the FIFO alone never gives the process its EOF.
type stdinEOF struct {
	r     io.Reader
	ctx   context.Context
	ready chan struct{} // closed once task is set
	task  client.Task
	once  sync.Once
}

func (s *stdinEOF) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil {
		s.once.Do(func() { go s.closeIO() })
	}
	return n, err
}

func (s *stdinEOF) closeIO() {
	select {
	case <-s.ready:
		_ = s.task.CloseIO(s.ctx, client.WithStdinCloser)
	case <-s.ctx.Done():
	}
}

// gone reports a Kill error that means there is nothing left to signal.
func gone(err error) bool {
	return errdefs.IsNotFound(err) || errdefs.IsFailedPrecondition(err)
}
