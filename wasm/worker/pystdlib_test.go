package worker

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/images"
)

// pinnedPython is the pinned CPython module as fetched (ceval's download cache): its stdlib
// zip is the one the sandbox mounts. It fails under CI=true when it cannot be had, and
// skips elsewhere.
func pinnedPython(t *testing.T) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	path, err := images.PythonWASM(ctx, false, nil)
	if err == nil {
		var data []byte
		if data, err = os.ReadFile(path); err == nil {
			return data
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("pinned CPython: %v", err)
	}
	t.Skipf("pinned CPython: %v", err)
	return nil
}

// The stdlib mounted for CPython is the zip inside the pinned module, checked by its own
// sha256: a module whose embedded stdlib differs by one byte is refused.
func TestPythonStdlibThatDiffersFromItsPinIsRefused(t *testing.T) {
	data := pinnedPython(t)
	if _, err := pythonStdlib(data); err != nil {
		t.Fatalf("the pinned module's stdlib: %v", err)
	}
	i := bytes.Index(data, []byte("encodings/__init__.pyc"))
	if i < 0 {
		t.Fatal("no stdlib entry name in the module")
	}
	tampered := bytes.Clone(data)
	tampered[i] = 'E'
	_, err := pythonStdlib(tampered)
	if err == nil || !strings.Contains(err.Error(), pythonStdlibZipSHA256) {
		t.Fatalf("tampered stdlib: err %v, want a refusal naming the pinned sha256", err)
	}
}
