package worker

import (
	"strings"
)

// A pytest run (wire.RunRequest.Pytest) is CPython running ceval's boot (pytestBoot) with
// pytest's arguments from the host: the boot, the compile hooks and the codegen file are the
// worker's, since its one-off compile run (pylib.go) writes what the boot reads.

// pytestArgv is the interpreter's argv of a pytest run: isolated (-I), without site (-S:
// the boot installs the import guard itself), writing no bytecode (-B), running the boot,
// which hands args to pytest.
func pytestArgv(args []string) []string {
	return append([]string{"python3", "-I", "-S", "-B", "-c", pytestBoot}, args...)
}

// pytestImports are the boot's imports: pytest and its dependencies, from ceval's directory.
const pytestImports = `import pytest, _pytest, pluggy, iniconfig, packaging, attr, py
import _pytest.config, _pytest.main, _pytest.junitxml, _pytest.runner, _pytest.reports, _pytest.python
`

// pytestCodegenFile holds, marshalled, the code objects that compile() made while
// pytestImports ran in the worker's one-off compile run (pylib.go): attrs generates the
// methods of every class pytest declares from source at import, and compiling those ~280
// snippets was 160-210 ms of each pytest start under wazero.
const pytestCodegenFile = "__pycache__/ceval-codegen.marshal"

// pytestCompileHook defines cevalCompileHook(cache, record), which replaces builtins.compile
// with a function that answers a call from cache when its exact inputs are a key there
// (source and filename strings, mode, and the flags the builtin would use, the caller's
// __future__ flags included), and otherwise compiles as the builtin would (adding to record
// when given); it returns the builtin. Only code objects are kept; an answer from the cache
// is used once. The boot restores the builtin before pytest runs anything of the workspace.
// It also defines cevalRegexHook(cache, record), the same for the regular expressions re
// compiles (keyed by pattern and flags; what is kept is the arguments re's compiler gives
// _sre.compile, the compiled program, so an answer is the pattern object re would make):
// compiling the patterns pytest and the stdlib modules it imports declare was about 10%
// of each pytest start under wazero, JUnit XML's escape pattern alone 50-100 ms. That hook
// stays for the run (pytest compiles patterns as it reports); a pattern it was not given
// compiles as usual.
const pytestCompileHook = `def cevalCompileHook(cache, record):
    import builtins, sys, types, __future__
    real = builtins.compile
    mask = 0
    for name in __future__.all_feature_names:
        mask |= getattr(__future__, name).compiler_flag
    def compile(source, filename, mode, flags=0, dont_inherit=False, optimize=-1, *, _feature_version=-1):
        if not dont_inherit:
            flags |= sys._getframe(1).f_code.co_flags & mask
        key = None
        if type(source) is str and type(filename) is str and type(mode) is str and type(flags) is int and optimize == -1 and _feature_version == -1:
            key = (source, filename, mode, flags)
            code = cache.pop(key, None)
            if code is not None:
                return code
        code = real(source, filename, mode, flags, True, optimize, _feature_version=_feature_version)
        if key is not None and record is not None and type(code) is types.CodeType:
            record[key] = code
        return code
    builtins.compile = compile
    return real
def cevalRegexHook(cache, record):
    import _sre
    from re import _compiler
    real = _compiler.compile
    class Recorder:
        args = None
        def __getattr__(self, name):
            return getattr(_sre, name)
        def compile(self, pattern, flags, code, groups, groupindex, indexgroup):
            self.args = (pattern, int(flags), [int(c) for c in code], int(groups), {str(k): int(v) for k, v in groupindex.items()}, tuple(indexgroup))
            return _sre.compile(pattern, flags, code, groups, groupindex, indexgroup)
    recorder = Recorder()
    if record is not None:
        _compiler._sre = recorder
    def compile(p, flags=0):
        key = None
        if type(p) in (str, bytes) and type(flags) is int:
            key = (p, flags)
            args = cache.pop(key, None)
            if args is not None:
                return _sre.compile(*args)
        recorder.args = None
        pattern = real(p, flags)
        if key is not None and record is not None and recorder.args is not None:
            record[key] = recorder.args
        return pattern
    _compiler.compile = compile
`

// pytestLazyMetadata makes importlib.metadata load on first use: pluggy and pytest import it
// at module level but use it only to load plugins from entry points, which ceval turns off
// (PYTEST_DISABLE_PLUGIN_AUTOLOAD); loading it (and the email package it pulls in) was
// 75-200 ms of each pytest start under wazero. The module is made from its spec as the
// import system would, holding only what that sets (__spec__, __path__, ...) and a module
// __getattr__ (PEP 562) that, on the first use of any other name, runs the module's code in
// that same module object: every holder of it then sees the real module. (importlib.util's
// LazyLoader would load at the next import statement naming it: the import system reads
// __spec__.) A `-p NAME` in the criterion's args that looks NAME up among entry points
// loads it then, as usual.
const pytestLazyMetadata = `import importlib, importlib.util
def cevalLazy(name):
    spec = importlib.util.find_spec(name)
    module = importlib.util.module_from_spec(spec)
    def load(attr):
        del module.__dict__["__getattr__"]
        spec.loader.exec_module(module)
        return getattr(module, attr)
    module.__getattr__ = load
    sys.modules[name] = module
    return module
importlib.metadata = cevalLazy("importlib.metadata")
`

// pytestBoot imports pytest and its dependencies from ceval's directory (compile() answered
// from the codegen file while it does), only then makes the workspace importable (last on
// sys.path, so it shadows nothing) and runs pytest from the workspace directory. The cyclic
// garbage collector is off while it imports (48 collections, 47-71 ms of each start under
// wazero) and then back on with what the imports made frozen (gc.freeze: kept out of every
// later collection, which the task's objects are not). CPython for WASI has no os.getuid,
// which pytest's tmp_path and tmpdir call (every test using them was an error): the boot
// gives one answering -1, CPython's "unknown", for which pytest skips its ownership check.
var pytestBoot = `import sys, gc, os
gc.disable()
` + pythonImportGuard(pytestGuardDirs) + `if not hasattr(os, "getuid"):
    os.getuid = os.geteuid = lambda: -1
sys.path[:0] = ["/ceval", "/ceval/packages"]
` + pytestCompileHook + `try:
    import marshal
    with open("/ceval/` + pytestCodegenFile + `", "rb") as f:
        codegen = marshal.loads(f.read())
except (OSError, EOFError, ValueError, TypeError):
    codegen = {}
if type(codegen) is not dict:
    codegen = {}
realCompile = cevalCompileHook(codegen.get("code", {}), None)
cevalRegexHook(codegen.get("re", {}), None)
` + pytestLazyMetadata + pytestImports + `import builtins
builtins.compile = realCompile
gc.freeze()
gc.enable()
del codegen, realCompile, cevalCompileHook, cevalRegexHook, cevalLazy
sys.path.append("/workspace")
os.chdir("/workspace")
sys.argv[0] = "pytest"
sys.exit(pytest.main(sys.argv[1:]))
`

// collectTmp returns the files at paths in /tmp that exist and fit in maxBytes each.
func collectTmp(tmp *memFS, paths []string, maxBytes int) map[string][]byte {
	out := map[string][]byte{}
	for _, p := range paths {
		rel, ok := strings.CutPrefix(p, "/tmp/")
		if !ok {
			continue
		}
		tmp.mu.Lock()
		n, errno := tmp.lookup(rel)
		if errno == 0 && n.mode.IsRegular() && len(n.data) <= maxBytes {
			out[p] = append([]byte(nil), n.data...)
		}
		tmp.mu.Unlock()
	}
	return out
}

// maxCollectBytes bounds each file a run hands back (a JUnit report).
const maxCollectBytes = 8 << 20
