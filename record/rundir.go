package record

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
	ResultFile   = "result.json"
	EventsFile   = "events.jsonl"
	StdoutFile   = "agent.stdout.log"
	StderrFile   = "agent.stderr.log"
	WorkspaceDir = "workspace"
	SnapshotFile = "snapshot.json"
	// OutputsDir holds the copies of the task's sandbox.outputs: output i's manifest at
	// OutputsDir/i.json and its files at OutputsDir/fs/<its path> (/output's x.txt at
	// outputs/fs/output/x.txt).
	OutputsDir = "outputs"
	PromptFile = "prompt.md"
)

// WriteFileAtomic writes data to path through a temporary file in the same directory,
// fsyncs it and renames it into place, so a crash leaves the old file or the new, never half.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// WriteAtomic is WriteFileAtomic of what write writes, streamed to the temporary file
// (never held in memory whole: a 1,000-run report page is megabytes); an error from write
// leaves path as it was.
func WriteAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	return writeAtomic(path, perm, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 64<<10)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

func writeAtomic(path string, perm os.FileMode, write func(*os.File) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := write(f); err != nil {
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
	data, err := Marshal(v)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data, 0o600)
}

// Marshal is how the run record's JSON files are written: indented, ending in a newline.
func Marshal(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	return append(data, '\n'), err
}
