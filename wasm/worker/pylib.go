package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path"
	"slices"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"ceval.dev/ceval/wasm/wire"
)

// pytest's packages arrive as sources (Debian ships bytecode only for its own Python), and
// compiling them on every import made a pytest run take many seconds. So the first pytest
// run of a worker compiles them once, in a sandboxed instance of the same CPython writing
// into a scratch /tmp, and the worker adds the .pyc files to the pylib view beside their
// sources, where CPython's import system checks them against the sources' size and time.
// Only ceval's packages are compiled, before any workspace is seen. ceval's own
// sitecustomize (/ceval/python, which every python3 of a run_command imports) is compiled
// the same way when the worker loads CPython: compiling it on every start cost 11 ms.

// pylibCompile compiles every .py under /ceval into /tmp/pyc/ceval/.../__pycache__ as
// timestamp-checked .pyc files (PEP 552: magic, flags 0, the source's mtime and size, the
// marshalled code), with the compile() flags in cevalFlags (set before it runs).
const pylibCompile = `import os, sys, marshal, importlib.util
for root, dirs, files in os.walk("/ceval"):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    for f in files:
        if f.endswith(".py"):
            src = os.path.join(root, f)
            dst = "/tmp/pyc" + importlib.util.cache_from_source(src)
            try:
                with open(src, "rb") as fh:
                    data = fh.read()
                code = compile(data, src, "exec", flags=cevalFlags, dont_inherit=True)
            except (OSError, SyntaxError, ValueError):
                continue
            st = os.stat(src)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(dst, "wb") as fh:
                fh.write(importlib.util.MAGIC_NUMBER + bytes(4) + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little") + marshal.dumps(code))
`

// pylibCompileSite compiles ceval's sitecustomize as CPython would.
const pylibCompileSite = "cevalFlags = 0\n" + pylibCompile

// pylibCompilePytest compiles pytest's packages with their annotations kept as strings
// (PEP 563, as `from __future__ import annotations` would): evaluating pytest's typing
// annotations at import, in def after def, was some 10% of each pytest start under wazero.
// pytest, pluggy and attrs read annotations at run time only for names (attrs' auto_attribs
// fields, NamedTuple fields, ClassVar spotted by its string), which strings keep. The
// workspace's code and the task's tests are compiled by CPython as usual.
const pylibCompilePytest = "import __future__\ncevalFlags = __future__.annotations.compiler_flag\n" + pylibCompile

// pylibCodegen then runs the pytest boot's imports as the boot does and keeps what compile()
// made meanwhile (pytestCodegenFile), for the boot to answer the same calls with. Its
// imports compile pytest's sources as pylibCompile did (cevalFlags), so that the flags
// compile() inherits from its callers, part of each key, are those of the boot's run.
const pylibCodegen = `import marshal, importlib.machinery
def cevalSourceToCode(self, data, path, *, _optimize=-1):
    return compile(data, path, "exec", flags=cevalFlags, dont_inherit=True, optimize=_optimize)
importlib.machinery.SourceFileLoader.source_to_code = cevalSourceToCode
sys.path[:0] = ["/ceval", "/ceval/packages"]
` + pytestCompileHook + `codegen = {"code": {}, "re": {}}
cevalCompileHook({}, codegen["code"])
cevalRegexHook({}, codegen["re"])
` + pytestLazyMetadata + pytestImports + `import _pytest.junitxml
_pytest.junitxml.bin_xml_escape("") # compiles the escape pattern every report uses
with open("/tmp/pyc/ceval/` + pytestCodegenFile + `", "wb") as f:
    marshal.dump(codegen, f)
`

// pylibCompileLimits bound the one-off compile run.
const pylibCompileTmp = 256 << 20

// siteCompileMemory is the memory limit of the one-off compile of ceval's sitecustomize (the
// host's default run limit, wasm.DefaultMemoryLimit).
const siteCompileMemory = 256 << 20

// compilePyLib adds compiled bytecode to st.pylib once per worker (compileCeval); it says
// how the bytecode was had.
func (st *workerState) compilePyLib(py *compiled, pyDigest string, memoryLimit uint64) (string, error) {
	if st.pylibCompiled {
		return "", nil
	}
	st.pylibCompiled = true
	how, err := st.compileCeval("pytest", py, pyDigest, st.pylib, memoryLimit, pylibCompilePytest+pylibCodegen)
	if err != nil {
		return how, fmt.Errorf("compile pytest's packages: %w", err)
	}
	return how, nil
}

// compileCeval adds compiled bytecode to view, a read-only tree of ceval's own Python
// sources mounted at /ceval: from the worker's cache when an earlier worker compiled the
// same sources with the same CPython, else by compiling them in a sandboxed CPython that
// sees only view, the stdlib and a scratch /tmp (and keeping the result in the cache). A
// failure leaves the sources alone: CPython then compiles as it imports, slower but the
// same. kind names the cache file ("pytest", "site"). It says how the bytecode was had
// (wire.BytecodeCompiled, wire.BytecodeFromCache).
func (st *workerState) compileCeval(kind string, py *compiled, pyDigest string, view *memFS, memoryLimit uint64, script string) (string, error) {
	key := pycCacheKey(pyDigest, script, view)
	if st.cache != nil {
		if files, err := readPycCache(kind, key); err == nil {
			return wire.BytecodeFromCache, addPyc(view, files)
		}
	}
	tmp := newTmpFS(4, pylibCompileTmp)
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).
		WithSysFSMount(st.root(false, false, true), "/").(sysfs.FSConfig).
		WithSysFSMount(tmp, "/tmp").(sysfs.FSConfig).
		WithSysFSMount(view, "/ceval")
	if st.stdlib != nil {
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(st.stdlib, wire.PythonStdlibDir)
	}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("python3", "-I", "-S", "-c", script).
		WithFSConfig(fsc).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
	// CPython runs without context checks (newPythonModule): past its bound, only the
	// worker's exit stops it, and ceval reports the worker's death.
	stop := time.AfterFunc(wire.PyLibCompileTimeout, func() {
		fmt.Fprintf(os.Stderr, "ceval wasm worker: compiling ceval's Python sources took over %v; exiting\n", wire.PyLibCompileTimeout)
		os.Exit(1)
	})
	defer stop.Stop()
	mem := &guestMemory{limit: memoryLimit}
	if err := instantiate(context.Background(), py, cfg, mem); err != nil && !isExitZero(err) {
		return wire.BytecodeCompiled, err
	}
	tmp.mu.Lock()
	top, errno := tmp.lookup("pyc/ceval")
	var files []pycFile
	if errno == 0 {
		files = collectPyc(top, "", nil)
	}
	tmp.mu.Unlock()
	if len(files) == 0 {
		return wire.BytecodeCompiled, fmt.Errorf("no output")
	}
	if st.cache != nil && st.compiler { // a run worker keeps nothing (keep.go)
		if err := writePycCache(kind, key, files); err != nil {
			fmt.Fprintf(os.Stderr, "ceval wasm worker: keep bytecode: %v\n", err) // only a cache
		}
	}
	return wire.BytecodeCompiled, addPyc(view, files)
}

// pycFile is one compiled file, at its path in the pylib view (.../__pycache__/X.pyc).
type pycFile struct {
	name string
	data []byte
}

// collectPyc appends the __pycache__ files under n (at dir in the pylib view), sorted.
func collectPyc(n *node, dir string, out []pycFile) []pycFile {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		child, p := n.children[name], path.Join(dir, name)
		switch {
		case child.isDir():
			out = collectPyc(child, p, out)
		case child.mode.IsRegular() && isPycName(p):
			out = append(out, pycFile{p, bytes.Clone(child.data)})
		}
	}
	return out
}

// addPyc puts the compiled files into v beside their sources.
func addPyc(v *memFS, files []pycFile) error {
	for _, f := range files {
		if err := v.put(f.name, 0o444, f.data, ""); err != nil {
			return err
		}
	}
	return nil
}

func isExitZero(err error) bool {
	type exitCoder interface{ ExitCode() uint32 }
	e, ok := err.(exitCoder)
	return ok && e.ExitCode() == 0
}
