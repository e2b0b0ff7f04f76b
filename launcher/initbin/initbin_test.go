package initbin

import "testing"

// The committed binary is a built, static executable (images may have no libc); Install's
// attacks (planted links, tampering, races) are tested in package embedbin.
func TestEmbeddedBinaryIsABuiltStaticExecutable(t *testing.T) {
	if err := bin.Check(); err != nil {
		t.Fatal(err)
	}
}
