// Package testtree builds file trees for tests: the one helper that the packages' tests
// share instead of each writing its own loop of MkdirAll and WriteFile.
package testtree

import (
	"os"
	"path/filepath"
	"testing"
)

// Write creates files (slash-separated path below root -> content) with mode 0644, making
// parent directories (0755) as needed; any failure fails the test.
func Write(tb testing.TB, root string, files map[string]string) {
	tb.Helper()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// New writes files under a fresh temporary directory and returns it.
func New(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	Write(tb, dir, files)
	return dir
}
