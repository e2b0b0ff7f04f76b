package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/record"
)

// scratchSubdir is the run directory's scratch space (the agent's workspace and home
// filesystems) while the run lasts.
const scratchSubdir = ".scratch"

// Events appends lifecycle events to events.jsonl, one JSON object a line. Each line is
// written at once (a crash of ceval loses nothing already emitted); the file is synced when
// closed, not per event, which would cost milliseconds on every run's path.
type Events struct {
	mu     sync.Mutex
	f      *os.File
	redact func(string) string
}

// SyncFS flushes the filesystem of the events file and reports any writeback error on it
// that this descriptor has not yet reported and that happened since the file was opened
// (or that no descriptor had yet seen then): syncfs checks the filesystem's error sequence
// against the one its descriptor sampled at open. A closed Events is an error, never
// another file that reused its descriptor number.
func (e *Events) SyncFS() error {
	if e == nil {
		return errors.New("events: not open")
	}
	rc, err := e.f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Syncfs(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// OpenEvents opens (appending) the events file of a run directory.
func OpenEvents(runDir string, redact func(string) string) (*Events, error) {
	f, err := os.OpenFile(filepath.Join(runDir, record.EventsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &Events{f: f, redact: redact}, nil
}

// Emit records one event with its time and fields.
func (e *Events) Emit(event string, fields map[string]any) {
	if e == nil {
		return
	}
	rec := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "event": event}
	for k, v := range fields {
		rec[k] = v
	}
	data, err := json.Marshal(rec)
	if err != nil {
		data = []byte(fmt.Sprintf(`{"event":%q,"error":%q}`, event, err.Error()))
	}
	line := e.redact(string(data)) + "\n"
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.f.WriteString(line)
}

// Close closes the events file.
func (e *Events) Close() error {
	if e == nil {
		return nil
	}
	_ = e.f.Sync()
	return e.f.Close()
}
