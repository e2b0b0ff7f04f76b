package wasm

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"sync"

	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/internal/toolbox/shell"
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

// embeddedToolboxLite is the small toolbox (cmd/ceval-toolbox-lite): the common commands
// without the shell's parser, a sixth of the full toolbox's code for wazero to validate and
// compile on a cold grade. It runs the scripts shell.LiteProgram accepts, the full one the rest.
var embeddedToolboxLite = embedded.ToolboxLite()

// defaultToolboxLite is the embedded small toolbox with its digest, or nil when this build
// lacks it (every script then runs in the full toolbox).
var defaultToolboxLite = sync.OnceValue(func() *taskModule {
	if !bytes.HasPrefix(embeddedToolboxLite, wasmMagic) {
		return nil
	}
	return newTaskModule(embeddedToolboxLite)
})

// liteProgram is the small toolbox's argv for script, or ok false when the script needs the
// full toolbox.
func liteProgram(script string) ([]string, bool) {
	prog, ok := shell.LiteProgram(script)
	if !ok {
		return nil, false
	}
	return append([]string{"toolbox-lite"}, prog...), true
}

var errNoToolbox = errors.New("wasm: this ceval was built without the WASI toolbox (internal/embedded/toolbox.wasm is not a WebAssembly module; run make toolbox), so it cannot run run_command criteria")
