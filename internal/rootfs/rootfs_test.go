package rootfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A FIFO where a walk expects a directory (or reads a file) must fail the walk, not hang it:
// a plain os.Root FS blocks in open until a writer comes.
func TestWalkOverFIFOFailsInsteadOfBlocking(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "d", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fsys := NonBlocking(r)
	if _, err := fs.ReadDir(fsys, "d/pipe"); err == nil {
		t.Error("read a FIFO as a directory")
	}
	if data, err := fs.ReadFile(fsys, "d/pipe"); err == nil && len(data) != 0 {
		t.Errorf("read %q from a FIFO with no writer", data)
	}
	var seen []string
	if err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		seen = append(seen, p)
		return err
	}); err != nil || len(seen) != 3 {
		t.Errorf("walk saw %v (%v)", seen, err)
	}
	if _, err := fsys.Open("../x"); err == nil {
		t.Error("opened a path outside the root")
	}
}
