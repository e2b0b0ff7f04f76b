package verifier

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkCopyHostPytest is what each container pytest criterion paid before the Executor
// kept one copy (lentPytest): ceval's pytest copied out of the host's dist-packages.
func BenchmarkCopyHostPytest(b *testing.B) {
	if _, err := os.Stat(filepath.Join(hostDistPackages, hostPytestPin)); err != nil {
		b.Skip("Debian's python3-pytest 7.2.1 is not installed")
	}
	dir := b.TempDir()
	for i := 0; i < b.N; i++ {
		dst := filepath.Join(dir, strconv.Itoa(i))
		if err := copyHostPytest(hostDistPackages, dst, maxHarborPytestBytes); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.Chmod(dst, 0o755)
		os.RemoveAll(dst)
		b.StartTimer()
	}
}
