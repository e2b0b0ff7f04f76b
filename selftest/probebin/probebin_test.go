package probebin

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"ceval.dev/ceval/internal/embedbin"
)

// The committed binary is what it must be: a built, static executable (the probe image has no
// libc) whose digest SHA256 reports.
func TestEmbeddedBinaryIsStaticAndMatchesItsDigest(t *testing.T) {
	sum := sha256.Sum256(Bytes())
	if got := hex.EncodeToString(sum[:]); got != SHA256() {
		t.Fatalf("sha256 of Bytes() = %s, SHA256() = %s", got, SHA256())
	}
	if len(Bytes()) < 100_000 {
		t.Fatalf("embedded probe is %d bytes: not a built binary", len(Bytes()))
	}
	if err := embedbin.CheckStatic(Bytes()); err != nil {
		t.Fatalf("embedded probe: %v", err)
	}
}
