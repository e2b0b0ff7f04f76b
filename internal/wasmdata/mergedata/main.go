// Command mergedata rewrites a WebAssembly module in place with its data segments merged
// (package wasmdata). The embedded toolbox's build runs it (mk/embedded.mk):
//
//	go run ./internal/wasmdata/mergedata toolbox.wasm
package main

import (
	"fmt"
	"os"

	"ceval.dev/ceval/internal/wasmdata"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mergedata MODULE.wasm (rewritten in place)")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "mergedata: %v\n", err)
		os.Exit(1)
	}
}

func run(name string) error {
	in, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	out, changed, err := wasmdata.Merge(in)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !changed {
		return fmt.Errorf("%s: no data segments could be merged (passive or overlapping segments, or a data count section)", name)
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, out, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
