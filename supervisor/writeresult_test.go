package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"ceval.dev/ceval/record"
)

// A reader holding result.json while the next one is written (an iteration's, then the
// final one) must keep reading a whole result: writeResult renames a new file into place,
// never rewrites the old one, and leaves no temporary file behind. The secret goes through
// the redactor.
func TestWriteResultNeverRewritesTheResultInPlace(t *testing.T) {
	dir := t.TempDir()
	redact := Redactor([]string{"sk-secret-123"})
	first := &record.Result{RunID: "r1", Error: "sk-secret-123 leaked"}
	if err := writeResult(dir, first, redact, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, record.ResultFile)
	held, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var before syscall.Stat_t
	if err := syscall.Fstat(int(held.Fd()), &before); err != nil {
		t.Fatal(err)
	}
	if err := writeResult(dir, &record.Result{RunID: "r1", Complete: true}, redact, nil); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(int(held.Fd())))
	if err != nil || !strings.Contains(string(old), `"run_id": "r1"`) || strings.Contains(string(old), "sk-secret-123") {
		t.Errorf("the held first result reads %q (err %v): want the whole first result, redacted", old, err)
	}
	var after syscall.Stat_t
	if err := syscall.Stat(path, &after); err != nil {
		t.Fatal(err)
	}
	if after.Ino == before.Ino {
		t.Error("the second result was written into the first one's file, not renamed into place")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("result.json mode %v (err %v), want 0600", fi.Mode(), err)
	}
	res, err := record.ReadResult(dir)
	if err != nil || !res.Complete {
		t.Errorf("ReadResult: %+v, %v; want the second, complete result", res, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("run directory holds %v, want only %s", names, record.ResultFile)
	}
}

// writeResult syncs through the run's events file, opened when the run started, because
// syncfs reports only writeback errors after its descriptor was opened: an error that
// descriptor reports (here: EBADF, a closed file) fails the write, and no result.json
// vouches for the files.
func TestWriteResultSyncsThroughTheRunsFirstDescriptor(t *testing.T) {
	dir := t.TempDir()
	ev, err := OpenEvents(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeResult(dir, &record.Result{RunID: "r1"}, Redactor(nil), ev); err != nil {
		t.Fatalf("with the events file open: %v", err)
	}
	ev.f.Close()
	err = writeResult(dir, &record.Result{RunID: "r1", Complete: true}, Redactor(nil), ev)
	if err == nil {
		t.Fatal("the events descriptor's error did not fail the write")
	}
	if res, rerr := record.ReadResult(dir); rerr != nil || res.Complete {
		t.Errorf("after the failed write result.json is %+v (%v), want the first, incomplete one", res, rerr)
	}
}
