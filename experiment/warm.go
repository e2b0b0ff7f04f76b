package experiment

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// dueRun is a planned run handed to a worker when its turn comes.
type dueRun struct {
	i int
	// rec, when set, is decided already: complete in an earlier start (Resumed), or its
	// directory could not be cleared (Err).
	rec *RunRecord
	// first is its first attempt, prepared ahead (a warm sandbox); nil: it runs cold.
	first *try
	slot  chan struct{} // the ahead slot it holds until a worker takes it; nil: none
	due   time.Time     // when a worker was free for it
}

// taken frees the run's ahead slot: its turn came, the next run may be prepared.
func (d *dueRun) taken() {
	if d.slot != nil {
		<-d.slot
		d.slot = nil
	}
}

// discard drops what was prepared for a run whose turn will not come.
func (d *dueRun) discard(ctx context.Context) {
	if d.first != nil && d.first.p != nil {
		_ = d.first.p.Discard(ctx) // what it cannot remove is ceval gc's, as any leftover
	}
	d.first = nil
}

// try is one attempt of a run: prepared ahead (p), or run as it comes; started says
// whether its agent started (after that it is never retried).
type try struct {
	p       *supervisor.Prepared
	started atomic.Bool
}

// attemptOptions are a run's supervisor options for one attempt, telling a when its agent
// started.
func attemptOptions(o Options, en record.PlanEntry, pr record.PlannedRun, attempt int, a *try) supervisor.Options {
	opts := o.Run
	opts.Variant, opts.Repeat, opts.Attempt = en.Variant, pr.Repeat, attempt
	progress := o.Run.Progress
	opts.Progress = func(ev string, f map[string]any) {
		if ev == "agent_started" {
			a.started.Store(true)
		}
		if progress != nil {
			progress(ev, f)
		}
	}
	return opts
}

// newRecord is a planned run's record, Resumed when an earlier start completed it.
func newRecord(plan *record.Plan, expDir string, pr record.PlannedRun) *RunRecord {
	en := plan.Entries[pr.Entry]
	rec := &RunRecord{PlannedRun: pr, Variant: en.Variant, TaskID: en.TaskID, Dir: plan.Dir(expDir, pr)}
	if res, err := record.ReadResult(rec.Dir); err == nil && res.Complete {
		rec.Result, rec.Resumed = res, true
	}
	return rec
}

// clearDir removes what an interrupted or failed start left of a run: it is not this run's.
func clearDir(rec *RunRecord) {
	if err := os.RemoveAll(rec.Dir); err != nil {
		rec.Err = &supervisor.InfraError{Err: fmt.Errorf("clear %s (a leftover mount? run ceval gc): %w", rec.Dir, err)}
	}
}

// feedRuns hands the planned runs to the workers in plan order until ctx is cancelled or
// stopped is closed. With ahead > 0, up to ahead runs are prepared ahead of their turn
// (supervisor.Prepare, ahead at once), each holding a slot until a worker takes it; the
// workers discard those whose turn does not come. The channel is closed after the last.
func feedRuns(ctx context.Context, e *task.Experiment, plan *record.Plan, expDir string, runs []record.PlannedRun, o Options, ahead int, stopped <-chan struct{}) <-chan *dueRun {
	if ahead <= 0 {
		ch := make(chan *dueRun)
		go func() {
			defer close(ch)
			for i := range runs {
				select {
				case <-ctx.Done():
					return
				case <-stopped:
					return
				case ch <- &dueRun{i: i}:
				}
			}
		}()
		return ch
	}
	ch := make(chan *dueRun, ahead) // never full: each run in it holds one of ahead slots
	slots := make(chan struct{}, ahead)
	// Runs are prepared ahead at once, and handed over in plan order.
	prepared := make([]chan *dueRun, len(runs))
	for i := range prepared {
		prepared[i] = make(chan *dueRun, 1)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(ahead, len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-stopped:
					return
				case slots <- struct{}{}:
				}
				i := int(next.Add(1) - 1)
				if i >= len(runs) {
					<-slots
					return
				}
				prepared[i] <- prepareDue(ctx, e, plan, expDir, runs[i], o, i, slots)
			}
		}()
	}
	preparersDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(preparersDone)
	}()
	go func() {
		defer close(ch)
		for i := range runs {
			// Indices are taken in order and every one taken is delivered: once the
			// preparers are done, an index not delivered was never taken, nor any after it.
			select {
			case d := <-prepared[i]:
				ch <- d
				continue
			case <-preparersDone:
			}
			select {
			case d := <-prepared[i]:
				ch <- d
			default:
				return
			}
		}
	}()
	return ch
}

// prepareDue prepares the first attempt of planned run i ahead of its turn, unless an
// earlier start completed it.
func prepareDue(ctx context.Context, e *task.Experiment, plan *record.Plan, expDir string, pr record.PlannedRun, o Options, i int, slot chan struct{}) *dueRun {
	d := &dueRun{i: i, slot: slot, rec: newRecord(plan, expDir, pr)}
	if d.rec.Resumed {
		return d
	}
	if clearDir(d.rec); d.rec.Err != nil {
		return d
	}
	a := &try{}
	p, _ := supervisor.Prepare(ctx, e.Entries[pr.Entry].Task, attemptOptions(o, plan.Entries[pr.Entry], pr, 1, a))
	if p == nil || p.Err() != nil {
		// What failed ahead (no free ID slot while others run, a host hiccup) is tried
		// again in the run's turn, as the run's first attempt: the run starts cold.
		if p != nil {
			_ = p.Discard(ctx)
		}
		return d
	}
	a.p = p
	d.first = a
	return d
}

// aheadFor caps ahead so that the runs prepared ahead never take the ID slots the runs at
// once and those finishing need (parallel each, slots per run: the agent and each service
// takes one) out of the range of o.Run.IDs; 0: none fit.
func aheadFor(ahead, parallel int, e *task.Experiment, ids sandbox.IDRange) int {
	if ids == (sandbox.IDRange{}) {
		ids = sandbox.DefaultIDRange
	}
	perRun := 1
	for _, en := range e.Entries {
		perRun = max(perRun, 1+len(en.Task.Services))
	}
	return max(0, min(ahead, int(ids.Slots)/perRun-2*parallel))
}

// finisher deletes and records runs in the background, at most cap(slots) at once (the
// caller waits for a slot), so a worker's next run starts while the last one is cleaned up.
// A synchronous one (stop_early's: each finished run is observed before the next one
// starts, so the test decides after the same runs however fast they go) runs fn at once.
type finisher struct {
	slots chan struct{}
	wg    sync.WaitGroup
	sync  bool
}

func (f *finisher) do(fn func()) {
	if f.sync {
		fn()
		return
	}
	f.slots <- struct{}{}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer func() { <-f.slots }()
		fn()
	}()
}
