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

// The committed toolboxes are WebAssembly modules, not placeholders.
func TestToolboxIsAWebAssemblyModule(t *testing.T) {
	for name, m := range map[string][]byte{"toolbox.wasm": Toolbox(), "toolbox-lite.wasm": ToolboxLite()} {
		if !bytes.HasPrefix(m, []byte("\x00asm")) {
			t.Errorf("%s starts %q, not a WebAssembly module: run make embedded", name, m[:min(4, len(m))])
		}
	}
}
