// Package pipeline is what the toolbox's two shells share to run a pipeline in one process:
// the stages joined by in-process pipes, and the lock that keeps the stages' concurrent writes
// to one stream whole. The full shell (package shell) and the small toolbox
// (cmd/ceval-toolbox-lite) both use it, so a pipeline behaves the same in either.
package pipeline

import (
	"bufio"
	"fmt"
	"io"
	"sync"
)

// Locked returns w with each Write taken under mu: the stages of a pipeline write to the
// shell's stdout and stderr concurrently, and a line must not interleave with another's.
func Locked(mu *sync.Mutex, w io.Writer) io.Writer { return lockedWriter{mu, w} }

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Run runs n stages and returns each one's status. Stage i reads in and writes out: every
// stage but the last runs on its own goroutine and writes through a 64 KiB buffer into an
// io.Pipe that the next stage reads; the last runs on the caller's goroutine and writes to
// stdout. When a stage ends, its input pipe is closed, so the stage before it sees a broken
// pipe and ends too (as `yes | head -1` must). A stage that panics is reported on stderr and
// given status 2. Run returns once every stage has ended.
func Run(n int, stdin io.Reader, stdout, stderr io.Writer, stage func(i int, in io.Reader, out io.Writer) int) []int {
	statuses := make([]int, n)
	var wg sync.WaitGroup
	in := stdin
	var prev *io.PipeReader
	for i := range n {
		if i == n-1 {
			statuses[i] = stage(i, in, stdout)
			if prev != nil {
				prev.CloseWithError(io.ErrClosedPipe)
			}
			break
		}
		pr, pw := io.Pipe()
		bw := bufio.NewWriterSize(pw, 64*1024)
		wg.Add(1)
		go func(i int, myIn io.Reader, myPrev *io.PipeReader) {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					fmt.Fprintf(stderr, "toolbox: internal error: %v\n", p)
					statuses[i] = 2
				}
				bw.Flush()
				pw.Close()
				if myPrev != nil {
					myPrev.CloseWithError(io.ErrClosedPipe)
				}
			}()
			statuses[i] = stage(i, myIn, bw)
		}(i, in, prev)
		prev = pr
		in = bufio.NewReader(pr)
	}
	wg.Wait()
	return statuses
}
