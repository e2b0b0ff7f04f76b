package initgc

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// restore turns the collector back on, first with a wider goal and, once the first
// collection has run, with the environment's setting.
func TestRestoreTurnsTheCollectorBackOnAfterAWiderFirstGoal(t *testing.T) {
	prev := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	settled := make(chan struct{})
	restore(100, settled)
	if got := debug.SetGCPercent(100 * startFactor); got != 100*startFactor {
		t.Fatalf("right after restore the GC percent is %d, want %d", got, 100*startFactor)
	}
	runtime.GC()
	select {
	case <-settled:
	case <-time.After(time.Minute): // a hang guard, not a timing window: settled is an event
		t.Fatal("the first collection ran but the GC percent was never set back")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after the first collection the GC percent is %d, want 100", got)
	}
}

// GOGC=off stays off.
func TestRestoreLeavesGOGCOffOff(t *testing.T) {
	prev := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	restore(-1, nil)
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GOGC=off: restore set the GC percent to %d", got)
	}
}
