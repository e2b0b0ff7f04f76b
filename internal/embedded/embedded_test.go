package embedded

import (
	"bytes"
	"testing"
)

// The committed binaries are built, static executables (images may have no libc); Install's
// attacks (planted links, tampering, races) are tested in package embedbin.
func TestEmbeddedBinariesAreBuiltStaticExecutables(t *testing.T) {
	for _, b := range []interface{ Check() error }{Init, Mock, Probe} {
		if err := b.Check(); err != nil {
			t.Error(err)
		}
	}
}

// The committed toolbox is a WebAssembly module, not a placeholder.
func TestToolboxIsAWebAssemblyModule(t *testing.T) {
	if !bytes.HasPrefix(Toolbox(), []byte("\x00asm")) {
		t.Fatalf("toolbox.wasm starts %q, not a WebAssembly module: run make toolbox", Toolbox()[:min(4, len(Toolbox()))])
	}
}
