package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// internal/initgc turns the collector off for the packages' init; ceval must turn it back on
// before it does any work, or every command (and the WASM worker) runs without a collector.
func TestCollectorIsBackOnWhenCevalStarts(t *testing.T) {
	if os.Getenv("GOGC") == "off" {
		t.Skip("GOGC=off in the test's environment")
	}
	got := debug.SetGCPercent(-1)
	debug.SetGCPercent(got)
	if got < 0 {
		t.Fatal("the garbage collector is still off after init: main's init must call initgc.Restore")
	}
}
