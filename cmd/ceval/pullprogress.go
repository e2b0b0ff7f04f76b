package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	"golang.org/x/sys/unix"
)

// pullProgress shows, on a terminal, the bytes of each blob a pull is fetching (what
// containerd's content store says of its ingests), redrawn in place; the pull's finished-layer
// lines pass through it (Write) above that block. Off a terminal it is never made: the pull
// prints its plain lines alone.
type pullProgress struct {
	mu    sync.Mutex
	w     io.Writer
	lines int // lines of the block drawn last
	stop  chan struct{}
	done  chan struct{}
}

// isTerminal reports whether w is a terminal (and TERM is not dumb).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// startPullProgress polls statuses every interval and redraws until Stop.
func startPullProgress(ctx context.Context, w io.Writer, statuses func(context.Context) ([]content.Status, error), interval time.Duration) *pullProgress {
	p := &pullProgress{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if st, err := statuses(ctx); err == nil {
					p.draw(st)
				}
			}
		}
	}()
	return p
}

// draw replaces the block with one line per ingest: its kind, digest and bytes so far.
func (p *pullProgress) draw(st []content.Status) {
	slices.SortFunc(st, func(a, b content.Status) int { return strings.Compare(a.Ref, b.Ref) })
	var b strings.Builder
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear(&b)
	for _, s := range st {
		total := "?"
		if s.Total > 0 {
			total = humanBytes(s.Total)
		}
		fmt.Fprintf(&b, "  %-26s %10s / %s\n", shortRef(s.Ref), humanBytes(s.Offset), total)
	}
	p.lines = len(st)
	io.WriteString(p.w, b.String())
}

// clear erases the block drawn last (the cursor is below it).
func (p *pullProgress) clear(b *strings.Builder) {
	for range p.lines {
		b.WriteString("\x1b[1A\x1b[2K")
	}
	p.lines = 0
}

// Write prints a finished-layer line above the block (redrawn at the next tick).
func (p *pullProgress) Write(line []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	p.clear(&b)
	b.Write(line)
	_, err := io.WriteString(p.w, b.String())
	return len(line), err
}

// Stop ends the redraws and erases the block.
func (p *pullProgress) Stop() {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	p.clear(&b)
	io.WriteString(p.w, b.String())
}

// shortRef shortens an ingest ref ("layer-sha256:<64 hex>") to its kind and 12 hex.
func shortRef(ref string) string {
	if i := strings.Index(ref, "sha256:"); i >= 0 && len(ref) >= i+7+12 {
		return ref[:i+7+12]
	}
	return ref
}
