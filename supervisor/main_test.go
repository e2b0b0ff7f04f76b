package supervisor

import (
	"os"
	"testing"

	"ceval.dev/ceval/wasm/worker"
)

// TestMain lets the test binary serve as the WASM worker that executors re-execute.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == worker.Command {
		worker.Main()
		return
	}
	os.Exit(m.Run())
}
