package images

import (
	"os"
	"path/filepath"
	"testing"

	"ceval.dev/ceval/task"
)

// The wheels a package image installs (as root, with cp) are copied through the handle the
// task load opened: a wheel directory swapped for a link to a host directory after
// validation brings none of the host's files into the image.
func TestWheelDirectorySwappedForHostLinkIsNotWhatTheImageGets(t *testing.T) {
	dir := t.TempDir()
	wheels := filepath.Join(dir, "wheels")
	host := filepath.Join(dir, "host")
	for _, d := range []string{wheels, host} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(wheels, "ok-1.0-py3-none-any.whl"), []byte("validated"), 0o644)
	os.WriteFile(filepath.Join(host, "shadow"), []byte("HOST-CANARY"), 0o600)
	os.Symlink("/etc/passwd", filepath.Join(wheels, "link.whl"))
	d, err := task.OpenDir(wheels)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The task author swaps the directory after validation.
	if err := os.Rename(wheels, wheels+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, wheels); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := copyWheels(d, dst); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dst)
	if len(ents) != 1 || ents[0].Name() != "ok-1.0-py3-none-any.whl" {
		t.Fatalf("copied %v; want only the validated wheel (no link, nothing of the host)", ents)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, ents[0].Name())); string(b) != "validated" {
		t.Fatalf("copied %q", b)
	}
}
