package testtree

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteMakesParentsAndContent(t *testing.T) {
	dir := New(t, map[string]string{"a/b/c.txt": "hello", "top": ""})
	got, err := os.ReadFile(filepath.Join(dir, "a", "b", "c.txt"))
	if err != nil || string(got) != "hello" {
		t.Fatalf("a/b/c.txt = %q, %v", got, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "top")); err != nil || st.Size() != 0 || st.Mode().Perm() != 0o644 {
		t.Fatalf("top: %v, %v", st, err)
	}
}
