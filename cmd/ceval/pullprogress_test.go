package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/content"
)

// On a terminal a pull shows each blob's bytes so far, redrawn in place, with the finished
// layers' lines above the block, and leaves only those lines when it ends.
func TestPullProgressRedrawsBytesPerBlobInPlace(t *testing.T) {
	var out lockedBuffer
	ref := "layer-sha256:" + strings.Repeat("a", 64)
	var mu sync.Mutex
	offset := int64(12 << 20)
	statuses := func(context.Context) ([]content.Status, error) {
		mu.Lock()
		defer mu.Unlock()
		return []content.Status{{Ref: ref, Offset: offset, Total: 50 << 20}}, nil
	}
	p := startPullProgress(context.Background(), &out, statuses, 5*time.Millisecond)
	waitFor := func(s string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), s); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("progress never showed %q: %q", s, out.String())
			}
		}
	}
	waitFor("  layer-sha256:aaaaaaaaaaaa    12.0 MiB / 50.0 MiB\n")
	mu.Lock()
	offset = 30 << 20
	mu.Unlock()
	waitFor("30.0 MiB / 50.0 MiB\n")
	p.Write([]byte("fetched layer sha256:aaaa (52428800 bytes)\n"))
	p.Stop()
	got := out.String()
	if !strings.Contains(got, "\x1b[1A\x1b[2Kfetched layer sha256:aaaa") {
		t.Errorf("the finished layer's line was not written over the erased block: %q", got)
	}
	if !strings.HasSuffix(got, "\x1b[1A\x1b[2K") && !strings.HasSuffix(got, "bytes)\n") {
		t.Errorf("the block was not erased at the end: %q", got[max(0, len(got)-80):])
	}
}
