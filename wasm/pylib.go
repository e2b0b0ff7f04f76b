package wasm

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// pytest's packages arrive as sources (Debian ships bytecode only for its own Python), and
// compiling them on every import made a pytest run take many seconds. So the first pytest
// run of a worker compiles them once, in a sandboxed instance of the same CPython writing
// into a scratch /tmp, and the worker adds the .pyc files to the pylib view beside their
// sources, where CPython's import system checks them against the sources' size and time.
// Only ceval's packages are compiled, before any workspace is seen.

// pylibCompile compiles every .py under /ceval into /tmp/pyc/ceval/.../__pycache__.
const pylibCompile = `import os, py_compile, importlib.util
for root, dirs, files in os.walk("/ceval"):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    for f in files:
        if f.endswith(".py"):
            src = os.path.join(root, f)
            dst = "/tmp/pyc" + importlib.util.cache_from_source(src)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            py_compile.compile(src, cfile=dst, doraise=False)
`

// pylibCompileLimits bound the one-off compile run.
const (
	pylibCompileTimeout = 5 * time.Minute
	pylibCompileTmp     = 256 << 20
)

// compilePyLib adds compiled bytecode to st.pylib once; a failure leaves the sources alone
// (pytest then compiles as it imports, slower but the same).
func (st *workerState) compilePyLib(py *compiled, memoryLimit uint64) error {
	if st.pylibCompiled {
		return nil
	}
	st.pylibCompiled = true
	tmp := newTmpFS(4, pylibCompileTmp)
	req := &runRequest{PyLib: true}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("python3", "-I", "-S", "-c", pylibCompile).
		WithFSConfig(st.mounts(req, tmp, true)).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
	// CPython runs without context checks (newPythonModule): past its bound, only the
	// worker's exit stops it, and ceval reports the worker's death.
	stop := time.AfterFunc(pylibCompileTimeout, func() {
		fmt.Fprintf(os.Stderr, "ceval wasm worker: compiling pytest's packages took over %v; exiting\n", pylibCompileTimeout)
		os.Exit(1)
	})
	defer stop.Stop()
	mem := &guestMemory{limit: memoryLimit}
	if err := instantiate(experimental.WithMemoryAllocator(context.Background(), mem), py, cfg); err != nil && !isExitZero(err) {
		return fmt.Errorf("compile pytest's packages: %w", err)
	}
	tmp.mu.Lock()
	defer tmp.mu.Unlock()
	top, errno := tmp.lookup("pyc/ceval")
	if errno != 0 {
		return fmt.Errorf("compile pytest's packages: no output")
	}
	return addPyc(st.pylib, top, "")
}

// addPyc copies the __pycache__ files under n (at dir in the pylib view) into v.
func addPyc(v *memFS, n *node, dir string) error {
	for name, child := range n.children {
		p := path.Join(dir, name)
		switch {
		case child.isDir():
			if err := addPyc(v, child, p); err != nil {
				return err
			}
		case child.mode.IsRegular() && strings.HasSuffix(name, ".pyc") && path.Base(dir) == "__pycache__":
			if err := v.put(p, 0o444, append([]byte(nil), child.data...), ""); err != nil {
				return err
			}
		}
	}
	return nil
}

func isExitZero(err error) bool {
	type exitCoder interface{ ExitCode() uint32 }
	e, ok := err.(exitCoder)
	return ok && e.ExitCode() == 0
}
