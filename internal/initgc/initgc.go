// Package initgc keeps the garbage collector off while a program's packages initialise.
// ceval's dependencies allocate megabytes in their init functions (jsonschema compiles its
// metaschemas; client-go registered its scheme until kube stopped linking it): at the
// runtime's 4 MB starting goal that cost two collections during init and a third right
// after, ~8 ms of CPU and more of wall time on every ceval start and every re-exec of it
// (the WASM worker). The spec initialises packages in import-path order as soon as their
// imports are, so this package, which imports only runtime and runtime/debug, runs before
// the costly ones (github.com/..., k8s.io/...).
// The program calls Restore from its main package's init, which runs after all others.
package initgc

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// percent is the GC percent in force before init switched the collector off: GOGC's value,
// or -1 if GOGC=off.
var percent = debug.SetGCPercent(-1)

// startFactor widens the first collection's goal: with GOGC's own goal (4 MB at GOGC=100)
// the heap left by init would start a collection at once, which every short command would
// pay for; ceval's first collection comes at four times that instead.
const startFactor = 4

var restoreOnce sync.Once

// Restore turns the collector back on: with a goal startFactor times GOGC's until the first
// collection has run, then with GOGC's (default 100); with GOGC=off it stays off. Call it
// from the main package's init; later calls do nothing.
func Restore() { restoreOnce.Do(func() { restore(percent, nil) }) }

// restore sets the start-up percent for p and arranges for p after the first collection;
// settled, if not nil, is closed then.
func restore(p int, settled chan<- struct{}) {
	if p < 0 {
		return
	}
	debug.SetGCPercent(max(p*startFactor, p)) // max: no overflow to a negative
	// A finalizer runs after the first collection that finds its object unreachable, which
	// this one is from the start: it ends the start-up allowance.
	type sentinel struct{ _ *int }
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		debug.SetGCPercent(p)
		if settled != nil {
			close(settled)
		}
	})
}
