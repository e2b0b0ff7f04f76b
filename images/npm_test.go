package images

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A registry (or a proxy) that sends more than the pinned size is cut off at the size, and
// nothing is cached: it cannot fill the cache's disk before the sha256 check.
func TestDownloadStopsPastThePinnedSize(t *testing.T) {
	want := []byte("the pinned tarball")
	sum := sha256.Sum256(want)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(want)
		chunk := make([]byte, 64<<10)
		for i := 0; i < 1024; i++ { // 64 MiB more, unless the client hangs up
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "dl")
	pin := Pin{Package: "@fake/big", Version: "1.0.0", URL: srv.URL + "/big-1.0.0.tgz", SHA256: hex.EncodeToString(sum[:]), Size: int64(len(want))}
	_, err := (&Fetcher{Dir: dir}).Fetch(t.Context(), pin)
	if !errors.Is(err, ErrDownload) || !strings.Contains(err.Error(), "more than the 18 bytes pinned") {
		t.Fatalf("err = %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if fi, _ := e.Info(); fi != nil && fi.Size() > 0 {
			t.Errorf("left in the cache: %s (%d bytes)", e.Name(), fi.Size())
		}
	}
}
