//go:build !wasip1 && !toolboxlite

package cmds

// hostPython outside the sandbox: there is no host to run CPython.
func hostPython(_, _ []byte) (int, []byte, []byte) {
	return 127, nil, []byte("python3: Python runs only inside ceval's WASM sandbox\n")
}
