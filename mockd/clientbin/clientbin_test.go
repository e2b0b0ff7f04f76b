package clientbin

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"testing"

	"ceval.dev/ceval/internal/embedbin"
)

// Install's attacks (planted links, tampering, races) are tested in package embedbin; here,
// that the committed binary is what it must be.
func TestEmbeddedBinaryIsStaticAndMatchesItsDigest(t *testing.T) {
	sum := sha256.Sum256(Bytes())
	if got := hex.EncodeToString(sum[:]); got != SHA256() {
		t.Fatalf("sha256 of Bytes() = %s, SHA256() = %s", got, SHA256())
	}
	if len(Bytes()) < 100_000 {
		t.Fatalf("embedded mock client is %d bytes: not a built binary", len(Bytes()))
	}
	if err := embedbin.CheckStatic(Bytes()); err != nil {
		t.Fatalf("embedded mock client: %v", err)
	}
}

func TestInstallNamesTheFileByItsDigest(t *testing.T) {
	dir := t.TempDir()
	path, err := Install(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "ceval-mock-"+SHA256()[:12]); path != want {
		t.Errorf("installed at %s, want %s", path, want)
	}
}
