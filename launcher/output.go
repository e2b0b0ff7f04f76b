package launcher

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// cappedWriter keeps the first cap bytes written to it in a file and discards the rest,
// always reporting success: the IO copy that feeds it must never stop reading, or the
// agent's writes would block on a full pipe.
type cappedWriter struct {
	mu     sync.Mutex
	out    io.Writer
	f      *os.File // nil when out is the caller's writer, which is not closed
	name   string
	cap    int64
	n      int64
	cut    bool
	err    error // first write error; later writes are discarded
	closed bool
}

func createCapped(path string, limit int64) (*cappedWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, fmt.Errorf("create output file: %w", err)
	}
	return &cappedWriter{out: f, f: f, name: path, cap: limit}, nil
}

// newCapped caps a caller's writer; Close notes the cut but does not close it.
func newCapped(w io.Writer, name string, limit int64) *cappedWriter {
	return &cappedWriter{out: w, name: name, cap: limit}
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := int64(len(p))
	if room := w.cap - w.n; keep > room {
		keep = max(room, 0)
		w.cut = true
	}
	if keep > 0 && w.err == nil && !w.closed {
		if _, err := w.out.Write(p[:keep]); err != nil {
			w.err = err
		}
	}
	w.n += keep
	return len(p), nil
}

// Cut reports whether anything was discarded.
func (w *cappedWriter) Cut() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cut
}

// Close notes the cut at the end of the file, if there was one, and closes it. It reports
// the first write error, if any.
func (w *cappedWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.cut && w.err == nil {
		_, w.err = fmt.Fprintf(w.out, "\n[ceval: output cut at %s]\n", sizeString(w.cap))
	}
	var err error
	if w.f != nil {
		err = w.f.Close()
	}
	if w.err != nil {
		return fmt.Errorf("write %s: %w", w.name, w.err)
	}
	if err != nil {
		return fmt.Errorf("close %s: %w", w.name, err)
	}
	return nil
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// CappedFile is a file that keeps the first limit bytes written to it, discards the rest
// and notes the cut at its end on Close: an agent's output log, as a container's logs are
// kept, for a backend that receives the output itself (package kube's).
type CappedFile struct{ w *cappedWriter }

// CreateCappedFile creates (or truncates) path, keeping limit bytes; 0 is DefaultLogCap.
func CreateCappedFile(path string, limit int64) (*CappedFile, error) {
	if limit == 0 {
		limit = DefaultLogCap
	}
	w, err := createCapped(path, limit)
	if err != nil {
		return nil, err
	}
	return &CappedFile{w}, nil
}

// Write never fails: the rest of an over-long output is read and discarded.
func (f *CappedFile) Write(p []byte) (int, error) { return f.w.Write(p) }

// Cut reports whether anything was discarded.
func (f *CappedFile) Cut() bool { return f.w.Cut() }

// Close notes a cut, closes the file and reports the first write error.
func (f *CappedFile) Close() error { return f.w.Close() }
