package wasm

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"sync"

	"ceval.dev/ceval/internal/embedded"
)

// embeddedToolbox is the WASI shell and coreutils that run_command criteria run, built from
// cmd/ceval-toolbox and committed in package internal/embedded.
var embeddedToolbox = embedded.Toolbox()

// wasmMagic starts every WebAssembly binary.
var wasmMagic = []byte("\x00asm")

// HasToolbox reports whether this build embeds the toolbox, without which run_command
// criteria are errors.
func HasToolbox() bool { return bytes.HasPrefix(embeddedToolbox, wasmMagic) }

// defaultToolbox is the embedded toolbox with its digest, hashed once per process.
var defaultToolbox = sync.OnceValue(func() *taskModule { return newTaskModule(embeddedToolbox) })

func newTaskModule(data []byte) *taskModule {
	sum := sha256.Sum256(data)
	return &taskModule{data: data, digest: hex.EncodeToString(sum[:])}
}

var errNoToolbox = errors.New("wasm: this ceval was built without the WASI toolbox (internal/embedded/toolbox.wasm is not a WebAssembly module; run make toolbox), so it cannot run run_command criteria")
