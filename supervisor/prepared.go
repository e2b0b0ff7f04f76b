package supervisor

import (
	"context"
	"errors"
	"os"
	"time"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// aheadPhases is how many of the phase table's first phases a run may do before its turn:
// prepare and launch (see Prepare).
const aheadPhases = 2

// Prepared is a run taken ahead of its turn (a warm sandbox): Run does the rest of it,
// Discard drops it. It belongs to one run: nothing of it is shared or used again.
type Prepared struct {
	r       *run
	err     error // the preparation's failure, which Run records as Run would have
	ahead   bool
	readyAt time.Time
}

// Prepare takes a run of t as far as it may go before its turn, for an experiment that
// prepares its next runs while others execute: the run directory and events, plugins,
// mocks and model gateway, the image resolved, the sandbox created (scratch filesystems,
// workspace and home, ID slot and user namespace, container) and, when the backend's
// sandbox is a sandbox.Readier and the task has no services (which start in the run's
// turn), readied: the local backend's task created with its namespaces, the gateway
// listening in them. Nothing of the image's, the task's or the agent's runs, and the
// sandbox is attested when Run starts it, as any. A failure is kept for Run to record. nil
// and the error: the task's inputs were refused before its run directory existed.
func Prepare(ctx context.Context, t *task.Task, o Options) (*Prepared, error) {
	return prepareRun(ctx, t, o, true)
}

func prepareRun(ctx context.Context, t *task.Task, o Options, ahead bool) (*Prepared, error) {
	start := time.Now()
	o = o.WithDefaults(start)
	r, err := newRun(t, o, start)
	if err != nil {
		return nil, inPhase(PhasePrepare, err)
	}
	p := &Prepared{r: r, ahead: ahead}
	for _, ph := range r.phaseTable()[:aheadPhases] {
		if err := ph.do(ctx); err != nil {
			p.err = inPhase(ph.name, err)
			return p, nil
		}
	}
	if !ahead {
		return p, nil
	}
	r.emit("sandbox_created", nil)
	if rd, ok := r.sb.(sandbox.Readier); ok && len(t.Services) == 0 {
		if err := rd.Ready(ctx); err != nil {
			p.err = inPhase(PhaseLaunch, asRunError(err))
			return p, nil
		}
		if pr, ok := r.sb.(sandbox.Primer); ok && len(t.Setup) == 0 {
			pr.Prime(ctx) // its init started and attested, waiting for the go-ahead at the turn
		}
		r.res.Timings.Prepare = time.Since(r.start).Seconds()
		r.emit("sandbox_ready", nil)
	}
	p.readyAt = time.Now()
	return p, nil
}

// Run does the prepared run's remaining phases, from the services to the grade, and
// records it, as supervisor.Run would have: Finish(ctx, Execute(ctx, now)).
func (p *Prepared) Run(ctx context.Context) (*record.Result, error) {
	return p.Finish(ctx, p.Execute(ctx, time.Now()))
}

// Execute does the phases of the run's turn, from the services to the grade (the critical
// path: start, attest, agent, reap, snapshot, grade); Finish then deletes the sandbox and
// records the run, which an experiment does off that path. due is when its turn came (a
// worker was free for it). The run_due event says when, how long the prepared sandbox
// waited for it (waited_s) or the turn for the preparation (late_s); the run's timings
// count the preparation's work, not that wait.
func (p *Prepared) Execute(ctx context.Context, due time.Time) error {
	r := p.r
	if p.err != nil {
		return p.err
	}
	if p.ahead {
		waited := max(0, due.Sub(p.readyAt))
		r.start = r.start.Add(waited)
		r.emit("run_due", map[string]any{"due": due.UTC().Format(time.RFC3339Nano), "prepared_ahead_s": r.res.Timings.Prepare,
			"waited_s": waited.Seconds(), "late_s": max(0, p.readyAt.Sub(due)).Seconds()})
	}
	return r.runPhases(ctx, aheadPhases)
}

// Finish closes the run that Execute ended with err (nil or its failure): the sandbox
// deleted, the backend's reservation released, the servers stopped, the logs redacted,
// result.json written; it returns the result and the run's error, as supervisor.Run.
func (p *Prepared) Finish(ctx context.Context, err error) (*record.Result, error) {
	return p.r.res, p.r.close(ctx, err)
}

// Err is the preparation's failure, nil when it went through; Run records it.
func (p *Prepared) Err() error { return p.err }

// Dir is the run's directory.
func (p *Prepared) Dir() string { return p.r.dir }

// Discard drops a prepared run whose turn will not come (the experiment stopped early or
// was interrupted): its sandbox closed (the container and a task created ahead deleted, the
// scratch filesystems unmounted, the ID slot released), its servers stopped, and its run
// directory removed, as if it had never been prepared; nothing is recorded. ctx carries
// containerd's namespace; its cancellation does not stop the cleanup.
func (p *Prepared) Discard(ctx context.Context) error {
	r := p.r
	ctx = context.WithoutCancel(ctx)
	var errs []error
	r.iter.user.close()
	if r.sb != nil {
		errs = append(errs, r.sb.Close(ctx))
	}
	errs = append(errs, release(r.ids), r.stopServers(), r.stopServices())
	r.ev.Close()
	if err := errors.Join(errs...); err != nil {
		return &InfraError{err} // a mount may be left below the directory: ceval gc
	}
	return os.RemoveAll(r.dir)
}
