package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// Pytest runs in CPython from Debian's python3-pytest (pure Python, pinned by the version
// apt installed and checked here), mounted read-only at /ceval with only the packages it
// imports. Nothing in the workspace can steer the run (see pytestBoot and pytestArgs):
// the interpreter runs isolated (-I: no PYTHON* variables, no user site, no script or cwd
// on sys.path) without site (-S: no sitecustomize, usercustomize or .pth files), pytest
// and its dependencies are imported from /ceval before the workspace is appended (last) to
// sys.path, the ini file is ceval's own (-c), conftest files are looked for under /task
// only (--rootdir, --confcutdir; the tests live there), plugin entry points are never
// loaded (PYTEST_DISABLE_PLUGIN_AUTOLOAD), and no cache is written.

// DebianDistPackages is where Debian installs pure-Python packages.
const DebianDistPackages = "/usr/lib/python3/dist-packages"

// pytestPin is the python3-pytest version ceval is tested with; its dist-info names it.
const pytestPin = "pytest-7.2.1.dist-info"

// pytestPackages are the top-level entries of dist-packages that pytest 7.2 imports.
var pytestPackages = []string{"_pytest", "pytest", "py.py", "pluggy", "iniconfig", "packaging", "attr", "attrs", pytestPin}

// Paths the pytest run uses inside the sandbox.
const (
	pytestLibDir  = "/ceval"
	pytestJUnit   = "/tmp/.ceval-junit.xml"
	pytestLogFile = "/tmp/.ceval-pytest.log"
)

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

// pytestArgs is the interpreter's argv for a pytest criterion.
func pytestArgs(c *task.Criterion) []string {
	args := []string{"python3", "-I", "-S", "-B", "-c", pytestBoot,
		"-p", "no:cacheprovider", "-p", "no:faulthandler", "--capture=sys",
		"-c", pytestLibDir + "/pytest.ini", "--rootdir=/task", "--confcutdir=/task",
		"-o", "log_file=" + pytestLogFile, "--junitxml=" + pytestJUnit,
		"-W", "ignore::DeprecationWarning", "-q"}
	args = append(args, c.Args...)
	return append(args, "/task/"+c.Tests.Rel)
}

// executePytest runs a pytest criterion and scores it from the exit status and the JUnit
// report, which ceval parses (grader.ScorePytest).
func (e *Executor) executePytest(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot) (*runReply, grader.Scored, error) {
	if c.Tests == nil {
		return nil, grader.Scored{}, errors.New("wasm: pytest criterion without tests")
	}
	if e.opts.Python == nil {
		return nil, grader.Scored{}, errors.New("wasm: pytest criteria need CPython, but this ceval was set up without it (wasm.Options.Python)")
	}
	py, err := e.python(ctx)
	if err != nil {
		return nil, grader.Scored{}, fmt.Errorf("wasm: %w", err)
	}
	if viewBytes(s) > e.opts.MaxViewBytes {
		return nil, grader.Scored{Details: fmt.Sprintf("the workspace snapshot (with its outputs) holds %s of files, over the %s the sandbox takes; not run", human(viewBytes(s)), human(e.opts.MaxViewBytes))}, nil
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = task.DefaultCheckTimeout
	}
	req := &runRequest{
		Digest:      py.digest,
		Args:        pytestArgs(c),
		Env:         []string{"HOME=/tmp", "TMPDIR=/tmp", "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1", "PYTHONDONTWRITEBYTECODE=1"},
		Timeout:     timeout,
		MemoryLimit: uint64(e.opts.MemoryLimit),
		MaxStdout:   e.opts.MaxOutput,
		MaxStderr:   e.opts.MaxOutput,
		MaxTmpBytes: e.opts.MaxTmpBytes,
		CloseOnDone: e.checked(py),
		PyLib:       true,
		Collect:     []string{pytestJUnit},
	}
	if err := e.prepare(ctx, py, s, false, nil); err != nil {
		return nil, grader.Scored{}, err
	}
	if err := e.prepareTask(ctx, c.GraderFiles, req); err != nil {
		return nil, grader.Scored{}, err
	}
	if err := e.preparePytestLib(ctx); err != nil {
		return nil, grader.Scored{}, err
	}
	if err := e.preparePackages(ctx, c, req); err != nil {
		return nil, grader.Scored{}, err
	}
	r, details, err := e.run(ctx, req)
	if r == nil {
		return nil, grader.Scored{Details: details}, err
	}
	if r.Limit != "" || r.Trap != "" {
		sc, err := score(&task.Criterion{Type: task.RunCommand}, r, e.opts, timeout)
		return r, sc, err
	}
	sc, details := grader.ScorePytest(int(r.ExitCode), r.Files[pytestJUnit], c.AllOrNothing)
	if sc == 0 && r.ExitCode > 1 {
		details += "; output " + tail(append(append([]byte{}, r.Stdout...), r.Stderr...))
	}
	return r, grader.Scored{Score: sc, Details: details}, nil
}

// preparePytestLib loads pytest's packages as the worker's /ceval unless it holds them.
func (e *Executor) preparePytestLib(ctx context.Context) error {
	if e.w.pylib {
		return nil
	}
	send := func(w io.Writer) error { return sendPytestLib(w, DebianDistPackages, e.opts.MaxViewBytes) }
	if err := e.loadView(ctx, "pytest packages", send); err != nil {
		return err
	}
	e.w.pylib = true
	return nil
}

// checkPytestInstalled fails, saying how to fix it, unless Debian's pinned python3-pytest
// is installed in dir.
func checkPytestInstalled(dir string) error {
	if _, err := os.Stat(dir + "/" + pytestPin); err != nil {
		return fmt.Errorf("pytest criteria run Debian's python3-pytest 7.2.1 from %s, which lacks %s: run `scripts/containerd.sh install` (or `apt-get install python3-pytest`)", dir, pytestPin)
	}
	return nil
}

// sendPytestLib streams pytest's packages from dir (Debian's dist-packages) as the pylib
// view, plus ceval's own empty pytest.ini. The walk follows no link out of dir.
func sendPytestLib(w io.Writer, dir string, maxBytes int64) error {
	if err := checkPytestInstalled(dir); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("pytest packages: %w", err)
	}
	defer root.Close()
	if err := writeJSON(w, opViewBegin, viewBegin{Slot: slotPyLib}); err != nil {
		return err
	}
	r := referenceWalk{root: root, w: w, maxBytes: maxBytes}
	for _, name := range pytestPackages {
		fi, err := root.Lstat(name)
		if err != nil {
			return fmt.Errorf("pytest packages: %w (is python3-pytest installed with its dependencies?)", err)
		}
		switch {
		case fi.IsDir():
			if err := writeFrame(w, opDir, []byte(name)); err != nil {
				return err
			}
			err = r.walk(name)
		case fi.Mode().IsRegular():
			data, mode, rerr := r.readFile(name)
			if err = rerr; err == nil {
				err = writeFile(w, name, mode, data)
			}
		default:
			err = fmt.Errorf("%s/%s is neither a file nor a directory", dir, name)
		}
		if err != nil {
			return fmt.Errorf("pytest packages: %w", err)
		}
	}
	if err := writeFile(w, "pytest.ini", 0o444, []byte("[pytest]\n")); err != nil {
		return err
	}
	return writeFrame(w, opViewEnd)
}

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
