package record

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteAtomic streams what its function writes into place, its mode given; a function that
// fails part-way leaves the earlier file as it was and no temporary file beside it.
func TestWriteAtomicStreamsAndAFailureLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "page.html")
	if err := WriteFileAtomic(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("0123456789abcdef", 16<<10) // 256 KiB: several of its buffer's flushes
	if err := WriteAtomic(p, 0o640, func(w io.Writer) error {
		for i := 0; i < len(want); i += 1000 {
			if _, err := io.WriteString(w, want[i:min(i+1000, len(want))]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if fi, _ := os.Stat(p); string(got) != want || fi.Mode().Perm() != 0o640 {
		t.Fatalf("got %d bytes, mode %v; want %d bytes, 0640", len(got), fi.Mode().Perm(), len(want))
	}
	boom := errors.New("render failed")
	err := WriteAtomic(p, 0o600, func(w io.Writer) error {
		fmt.Fprint(w, strings.Repeat("x", 200<<10))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the function's", err)
	}
	if got, _ := os.ReadFile(p); string(got) != want {
		t.Errorf("a failed write replaced the file (%d bytes)", len(got))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left beside it: %v", ents)
	}
}
