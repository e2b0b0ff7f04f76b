//go:build wasip1 && !toolboxlite

package cmds

import "unsafe"

//go:wasmimport ceval python_run
func hostPythonRun(req unsafe.Pointer, reqLen uint32, stdin unsafe.Pointer, stdinLen uint32, outLen unsafe.Pointer) uint32

//go:wasmimport ceval python_output
func hostPythonOutput(stream uint32, buf unsafe.Pointer, n uint32) uint32

// hostPython runs CPython on the host side of the sandbox and returns its status, stdout
// and stderr.
func hostPython(req, stdin []byte) (int, []byte, []byte) {
	var lens [2]uint32
	var stdinPtr unsafe.Pointer
	if len(stdin) > 0 {
		stdinPtr = unsafe.Pointer(&stdin[0])
	}
	status := hostPythonRun(unsafe.Pointer(&req[0]), uint32(len(req)), stdinPtr, uint32(len(stdin)), unsafe.Pointer(&lens))
	return int(status), hostOutput(1, lens[0]), hostOutput(2, lens[1])
}

func hostOutput(stream, size uint32) []byte {
	out := make([]byte, size)
	for got := uint32(0); got < size; {
		n := hostPythonOutput(stream, unsafe.Pointer(&out[got]), size-got)
		if n == 0 {
			return out[:got]
		}
		got += n
	}
	return out
}
