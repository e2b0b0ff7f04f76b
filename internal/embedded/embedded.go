// Package embedded holds the five static programs ceval embeds, built from cmd/ceval-init,
// cmd/ceval-mock, cmd/ceval-probe, cmd/ceval-toolbox and cmd/ceval-toolbox-lite by one recipe with one pinned
// toolchain (`make embedded`, mk/embedded.mk) and committed beside this file, so a plain
// `go build ./cmd/ceval` works; `make check-embedded` (run by `make test`) rebuilds them and
// fails when a committed file is not what its sources build. It never runs them.
package embedded

import (
	_ "embed"

	"ceval.dev/ceval/internal/embedbin"
)

var (
	//go:embed ceval-init
	initBinary []byte
	//go:embed ceval-mock
	mockBinary []byte
	//go:embed ceval-probe
	probeBinary []byte
	//go:embed toolbox.wasm
	toolboxModule []byte
	//go:embed toolbox-lite.wasm
	toolboxLiteModule []byte
)

var (
	// Init is ceval-init, installed on the host and bind-mounted read-only as PID 1 of every
	// agent container.
	Init = embedbin.New("ceval-init", initBinary)
	// Mock is ceval-mock, the protected mocks' client, installed on the host and bind-mounted
	// read-only into agent containers, once per mocked tool.
	Mock = embedbin.New("ceval-mock", mockBinary)
	// Probe is ceval-probe, the agent of the selftest attack kernel-syscalls, which the
	// selftest adds to that attack's image.
	Probe = embedbin.New("ceval-probe", probeBinary)
)

// Toolbox returns ceval-toolbox, the WASI shell and commands that run_command criteria run
// in package wasm. Callers must not modify it.
func Toolbox() []byte { return toolboxModule }

// ToolboxLite returns ceval-toolbox-lite, the small toolbox (the common commands without the
// shell's parser) that package wasm runs the scripts it can hold. Callers must not modify it.
func ToolboxLite() []byte { return toolboxLiteModule }
