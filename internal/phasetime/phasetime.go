// Package phasetime records when named stretches of one ceval process begin and end, for
// make bench's phase table (scripts/bench-phases.sh): nothing at all unless the environment
// variable CEVAL_PHASE_TIMES names a file, to which each stretch then appends one line.
package phasetime

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// Env is the variable that names the file the stretches are appended to.
const Env = "CEVAL_PHASE_TIMES"

var (
	path = os.Getenv(Env)
	mu   sync.Mutex
)

// Enabled says whether stretches are recorded.
func Enabled() bool { return path != "" }

// Span starts the stretch name and returns the function that ends it and appends
// "name\tSTART\tEND\n" (Unix nanoseconds) to the file; disabled, it costs one comparison.
func Span(name string) func() {
	if path == "" {
		return func() {}
	}
	start := time.Now()
	return func() { write(name, start, time.Now()) }
}

// Mark records the instant name (a stretch of no length).
func Mark(name string) {
	if path != "" {
		now := time.Now()
		write(name, now, now)
	}
}

func write(name string, start, end time.Time) {
	mu.Lock()
	defer mu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%d\t%d\n", name, start.UnixNano(), end.UnixNano())
}
