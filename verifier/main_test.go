package verifier

import (
	"os"
	"testing"

	"ceval.dev/ceval/wasm"
)

// TestMain lets the test binary serve as the WASM worker the parity test's executor runs.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == wasm.WorkerCommand {
		wasm.WorkerMain()
		return
	}
	os.Exit(m.Run())
}
