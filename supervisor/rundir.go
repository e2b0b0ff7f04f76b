package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// NewRunID returns a time-sortable run ID: UTC time to the millisecond, then random hex so
// two runs started in the same millisecond differ.
func NewRunID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

// RunDir returns RUNS/<run_id>/<variant>/<task_id>/<repeat>.
func RunDir(runsDir, runID, variant, taskID string, repeat int) string {
	return filepath.Join(runsDir, runID, variant, taskID, strconv.Itoa(repeat))
}

// Files inside a run directory. The workspace snapshot is a subdirectory, so nothing the
// agent names can collide with these.
const (
	ResultFile    = "result.json"
	EventsFile    = "events.jsonl"
	StdoutFile    = "agent.stdout.log"
	StderrFile    = "agent.stderr.log"
	WorkspaceDir  = "workspace"
	SnapshotFile  = "snapshot.json"
	PromptFile    = "prompt.md"
	scratchSubdir = ".scratch"
)

// WriteFileAtomic writes data to path through a temporary file in the same directory,
// fsyncs it and renames it into place, so a crash leaves the old file or the new, never half.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// WriteJSONAtomic writes v as indented JSON with WriteFileAtomic.
func WriteJSONAtomic(path string, v any) error {
	data, err := marshalIndent(v)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data, 0o600)
}

func marshalIndent(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	return append(data, '\n'), err
}

// Events appends lifecycle events to events.jsonl, one JSON object a line. Each line is
// written at once (a crash of ceval loses nothing already emitted); the file is synced when
// closed, not per event, which would cost milliseconds on every run's path.
type Events struct {
	mu     sync.Mutex
	f      *os.File
	redact func(string) string
}

// OpenEvents opens (appending) the events file of a run directory.
func OpenEvents(runDir string, redact func(string) string) (*Events, error) {
	f, err := os.OpenFile(filepath.Join(runDir, EventsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
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
