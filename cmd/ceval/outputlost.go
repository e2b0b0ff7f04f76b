package main

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// exitOutputLost is the exit code of a command whose stdout was closed under it
// (ceval run ... | head): 128 + SIGPIPE, as a shell shows a writer whose pipe was cut off.
// The command itself finished: its runs, clean-up and result files are as without the pipe.
const exitOutputLost = 128 + int(syscall.SIGPIPE)

// lossWriter writes to stdout and, once the reader has gone (EPIPE), drops what follows and
// remembers it: a closed stdout must not stop a run half-way.
type lossWriter struct {
	w    io.Writer
	lost *atomic.Bool
}

func (l lossWriter) Write(p []byte) (int, error) {
	if l.lost.Load() {
		return len(p), nil
	}
	n, err := l.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		l.lost.Store(true)
		return len(p), nil
	}
	return n, err
}

// keepWritingPastClosedPipes makes a write to a closed stdout or stderr an EPIPE error
// instead of the SIGPIPE that would kill ceval mid-run (Go's default for those two
// descriptors); a signal handled here, unlike an ignored one, is not inherited by the
// programs ceval starts. It returns the stdout commands write to and whether it was lost.
// stderr stays the *os.File it is (progress redraws only on a terminal): a message to a
// closed stderr is dropped as its EPIPE is.
func keepWritingPastClosedPipes() (stdout io.Writer, lost func() bool, stop func()) {
	sigs := make(chan os.Signal, 1) // never read: a handled SIGPIPE is all that is wanted
	signal.Notify(sigs, syscall.SIGPIPE)
	var gone atomic.Bool
	return lossWriter{os.Stdout, &gone}, gone.Load, func() { signal.Stop(sigs) }
}
