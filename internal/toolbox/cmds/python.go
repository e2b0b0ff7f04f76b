//go:build !toolboxlite

package cmds

import (
	"encoding/json"
	"fmt"
	"io"
)

// maxPythonStdin bounds the bytes a python stage takes from its stdin: the host runs the
// interpreter with its whole input, so an endless producer must not fill the sandbox.
const maxPythonStdin = 16 << 20

func init() {
	register("python", python)
	register("python3", python)
}

// python runs the sandbox's CPython through the host (see package wasm): stdin is read to
// its end first, the interpreter runs to completion, then its stdout, then its stderr, are written on.
func python(e *Env, args []string) int {
	var stdin []byte
	if e.Stdin != nil {
		b, err := io.ReadAll(io.LimitReader(e.Stdin, maxPythonStdin+1))
		if err != nil {
			fmt.Fprintf(e.Stderr, "python3: read stdin: %v\n", err)
			return 1
		}
		if len(b) > maxPythonStdin {
			fmt.Fprintf(e.Stderr, "python3: stdin is over %d MiB, the most a python stage takes\n", maxPythonStdin>>20)
			return 1
		}
		stdin = b
	}
	req, err := json.Marshal(pythonCall{Argv: append([]string{"python3"}, args...), Env: e.Environ(), Dir: e.Dir})
	if err != nil {
		fmt.Fprintf(e.Stderr, "python3: %v\n", err)
		return 2
	}
	status, stdout, stderr := hostPython(req, stdin)
	if len(stdout) > 0 {
		if _, err := e.Stdout.Write(stdout); err != nil {
			return 1
		}
	}
	if len(stderr) > 0 {
		_, _ = e.Stderr.Write(stderr)
	}
	return status
}

// pythonCall is the request the host decodes (wasm.pythonCall).
type pythonCall struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
}
