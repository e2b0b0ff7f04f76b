package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestTakeAtCopiesTheSubtree(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".claude/projects/-workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".claude/projects/-workspace/s.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "sessions", "claude")
	s, err := TakeAt(root, ".claude/projects", dst, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "-workspace/s.jsonl")); err != nil || string(b) != "{}\n" {
		t.Fatalf("copied file: %q, %v", b, err)
	}
	if _, ok := s.Lookup("-workspace/s.jsonl"); !ok {
		t.Fatal("the snapshot does not list the copied file")
	}
}

// An agent owns its home: a symlink planted at any component of the path must not lead the
// copy out of it (to the host's /etc here).
func TestTakeAtRefusesSymlinkInAnyComponent(t *testing.T) {
	for _, plant := range []string{".claude", ".claude/projects"} {
		t.Run(plant, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(plant)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/etc", filepath.Join(root, plant)); err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "out")
			_, err := TakeAt(root, ".claude/projects", dst, Limits{})
			if !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("TakeAt through a symlink at %s: err = %v, want fs.ErrNotExist", plant, err)
			}
			if _, err := os.Stat(dst); !os.IsNotExist(err) {
				t.Fatalf("dst was created: %v", err)
			}
		})
	}
}

func TestTakeAtRefusesEscapingPaths(t *testing.T) {
	root := t.TempDir()
	for _, rel := range []string{"../x", "/etc", "a/../../b"} {
		_, err := TakeAt(root, rel, filepath.Join(t.TempDir(), "out"), Limits{})
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("TakeAt(%q) = %v, want a refusal of the path", rel, err)
		}
	}
}
