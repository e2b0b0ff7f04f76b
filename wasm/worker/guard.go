package worker

import (
	"context"
	"sync/atomic"

	"ceval.dev/ceval/wasm/wire"
)

// runGuard stops a run whose guest cannot be stopped in place. wazero stops a module at its
// next loop or call when its run's context ends only if the module was compiled with
// context checks (WithCloseOnContextDone), and those checks leave native code on every
// loop iteration: CPython ran 3x slower with them. CPython is compiled without them, so
// when a limit (the timeout, an output cap) ends a run while CPython runs, nothing inside
// the worker can stop that instance: the guard answers the run's request itself, from what
// the run produced so far, marks the reply WorkerExits and ends the worker process. ceval
// starts a new worker for the next criterion. A run that ends by itself answers as before
// and keeps its worker.
type runGuard struct {
	ctx context.Context
	// unstoppable counts the instances of this run that run without context checks.
	unstoppable atomic.Int32
	// answered is set by whoever writes the run's reply first: the run or the guard.
	answered atomic.Bool
}

// newRunGuard guards a run whose context is ctx; mainUnchecked says its main module is
// compiled without context checks (a pytest run is CPython itself).
func newRunGuard(ctx context.Context, mainUnchecked bool) *runGuard {
	g := &runGuard{ctx: ctx}
	if mainUnchecked {
		g.unstoppable.Add(1)
	}
	return g
}

// watch waits for the run's context to end; if an unchecked instance is running then, and
// the run has not answered, it sends partial() through answer, which must not return (it
// ends the process). The run's own end cancels ctx too, after it has answered.
func (g *runGuard) watch(partial func() wire.RunReply, answer func(wire.RunReply)) {
	<-g.ctx.Done()
	if g.unstoppable.Load() == 0 {
		return // a checked module stops itself at its next check
	}
	if !g.answered.CompareAndSwap(false, true) {
		return
	}
	r := partial()
	r.WorkerExits = true
	answer(r)
}

// enter marks the start of an unchecked instance; false means the run is already over and
// the instance must not start (it could not be stopped).
func (g *runGuard) enter() bool {
	g.unstoppable.Add(1)
	if g.ctx.Err() != nil {
		g.unstoppable.Add(-1)
		return false
	}
	return true
}

// leave marks the end of an unchecked instance.
func (g *runGuard) leave() { g.unstoppable.Add(-1) }

// claim is the run's own answer: false when the guard has answered, and is ending the
// process, so the run must write nothing more.
func (g *runGuard) claim() bool { return g.answered.CompareAndSwap(false, true) }
