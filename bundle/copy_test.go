package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A task's prebuilt bundle is copied into the run directory through the directory opened
// when the task was loaded: swapping its path for a symlink to another bundle afterwards
// changes nothing that is copied.
func TestCopyFromCopiesTheHeldBundleNotWhatItsPathNamesNow(t *testing.T) {
	dir := t.TempDir()
	for name, word := range map[string]string{"src": "validated", "host-src": "HOST-CANARY"} {
		p := filepath.Join(dir, name, "skills", "s", "SKILL.md")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(word), 0o644)
	}
	if _, err := Build(filepath.Join(dir, "src"), filepath.Join(dir, "b"), Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(filepath.Join(dir, "host-src"), filepath.Join(dir, "host"), Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range []string{"b", "host", "copy"} {
			removeReadOnly(filepath.Join(dir, d))
		}
	})
	held, err := os.OpenRoot(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if !IsBundleRoot(held) {
		t.Fatal("a built bundle is not recognised through its handle")
	}
	os.Rename(filepath.Join(dir, "b"), filepath.Join(dir, "b.validated"))
	os.Symlink(filepath.Join(dir, "host"), filepath.Join(dir, "b"))
	out := filepath.Join(dir, "copy")
	if _, err := CopyFrom(held, "b", out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, TreeDir, "skills", "s", "SKILL.md"))
	if err != nil || string(got) != "validated" {
		t.Fatalf("copied %q (%v), want the held bundle's file", got, err)
	}
	if _, err := Verify(out); err != nil {
		t.Errorf("the copy does not verify: %v", err)
	}
}

// A bundle whose tree no longer matches its manifest is refused, not copied.
func TestCopyFromRefusesADriftedBundle(t *testing.T) {
	out := built(t)
	p := filepath.Join(out, TreeDir, "skills/fix/SKILL.md")
	writable(t, p, func() error { return os.WriteFile(p, []byte("changed"), 0o444) })
	held, err := os.OpenRoot(out)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	dst := filepath.Join(t.TempDir(), "copy")
	_, err = CopyFrom(held, out, dst)
	var de *DriftError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "content changed") {
		t.Fatalf("err = %v, want a drift", err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Error("a drifted bundle left a copy")
	}
}
