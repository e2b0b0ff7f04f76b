package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"ceval.dev/ceval/wasm/wire"
)

// The toolbox runs python and python3 through two host functions of the module "ceval",
// which the worker provides to every module it loads:
//
//	python_run(req, req_len, stdin, stdin_len, out_lens *[2]u32) -> status
//	python_output(stream, buf, buf_len) -> bytes copied (stream 1 stdout, 2 stderr)
//
// python_run runs CPython to completion as a second module instance of the same run, over
// the same views and the same /tmp, with stdin given whole and stdout and stderr kept on
// the host (the host-managed pipes) until python_output copies them into the toolbox,
// which writes them on to the pipeline or redirections the shell set up (so 2>&1 holds
// all of stdout, then all of stderr). The run's timeout, output caps and memory limit
// cover both instances.
const hostModule = "ceval"

// pythonCall is the JSON request of python_run.
type pythonCall struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"` // the shell's exported variables, NAME=value
	Dir  string   `json:"dir"` // the shell's working directory
}

// Statuses python_run returns besides the interpreter's own exit status.
const (
	pyStatusUnavailable = 127 // no CPython in this run: the details say why
	pyStatusKilled      = 137 // stopped by a limit of the run
	pyStatusBadCall     = 2
)

var pythonSitecustomize = pythonImportGuard(pythonGuardDirs) + `import os
os.environ.pop("PYTHONHOME", None)
_d = os.environ.pop("CEVAL_PWD", "")
if _d:
    try:
        os.chdir(_d)
    except OSError:
        pass
del _d, os
`

// pythonStdlibGuard makes a standard module's name import the standard module or nothing,
// in every CPython of the sandbox (ceval's sitecustomize installs it; the pytest boot, which
// runs without site, installs it first thing): never a file of that name elsewhere on
// sys.path. Without it a workspace json.py shadowed the json of a check run from the
// workspace (` + "`python3 -c`" + ` puts the current directory first on sys.path), and a workspace
// pwd.py or _lzma.py, standard modules this CPython for WASI lacks, ran inside pytest as soon
// as a test used tmp_path or zipfile, where it could forge the report. Found by review;
// TestWorkspaceCannotShadowAStandardModule and the selftest attack wasm-stdlib-shadow. It asks
// the finders CPython starts with (builtin, frozen, then the path finder, which alone reads the
// path it is given) with the stdlib directories as the path; importing importlib.machinery for
// them cost every python3 start some 10 ms.
//
// The same holds for every top-level name the grader provides in the directories the guard
// is given (pythonGuardDirs, pytestGuardDirs): python_packages and python_wheels at
// /ceval/packages, and for pytest its own packages at /ceval. Each NAME/ and NAME.py there
// imports from those directories only, so a workspace packaging/ no longer answered for the
// task's packaging (` + "`python3 -c`" + `, -m and a script in the workspace all put the workspace
// ahead of PYTHONPATH: a check importing packaging scored 1 for a wrong answer; issue 32,
// TestWorkspaceCannotShadowAGraderPackage, selftest attack wasm-package-shadow). It reads
// those directories itself, not sys.path, so python3 -I and -E, which ignore PYTHONPATH, import
// the grader's packages too. A standard module's name stays the standard module's; any other
// name (the agent's own modules) imports as CPython would. A shell's python3 -S runs site
// all the same (pythonArgv drops -S), so this guard holds there too.
func pythonImportGuard(dirs string) string {
	return `def cevalImportGuard(dirs):
    import sys, os
    names = sys.stdlib_module_names
    trusted = [p for p in sys.path if p.startswith("` + wire.PythonStdlibDir + `/") and "site-packages" not in p]
    graders = set()
    where = []
    for d in dirs:
        try:
            with os.scandir(d) as entries:
                for e in entries:
                    n = e.name
                    if n.endswith(".py"):
                        n = n[:-3]
                    elif not e.is_dir():
                        continue
                    if n.isidentifier() and n != "__pycache__" and n not in names:
                        graders.add(n)
        except OSError:
            continue
        where.append(d)
    finders = tuple(sys.meta_path)
    class CevalImportGuard:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if path is not None:
                return None
            if name in names:
                search, what = trusted, "a standard module this Python lacks"
            elif name in graders:
                search, what = where, "a package the task provides"
            else:
                return None
            spec = None
            for finder in finders:
                spec = finder.find_spec(name, search)
                if spec is not None:
                    break
            if spec is None:
                raise ModuleNotFoundError("No module named %r (%s)" % (name, what), name=name)
            return spec
        @staticmethod
        def invalidate_caches():
            pass
    sys.meta_path.insert(0, CevalImportGuard)
cevalImportGuard(` + dirs + `)
del cevalImportGuard
`
}

// pythonGuardDirs are the directories of the grader's packages for a python3 the toolbox
// runs; pytestGuardDirs those of a pytest run (pytest and its dependencies at /ceval).
const (
	pythonGuardDirs = `["` + wire.PythonPackagesDir + `"]`
	pytestGuardDirs = `["` + wire.PytestLibDir + `", "` + wire.PythonPackagesDir + `"]`
)

// pyRun is what the host functions of one run reach through its context.
type pyRun struct {
	st       *workerState
	req      *wire.RunRequest
	py       *compiled // nil: Python is not available, why says why
	why      string
	tmp      *memFS
	mem      *guestMemory // the toolbox's: Python gets what it leaves
	cancel   context.CancelCauseFunc
	guard    *runGuard
	pending  [2][]byte // stdout and stderr of the last python_run, until python_output takes them
	pyPeak   uint64
	pyMemHit bool

	mu  sync.Mutex
	out [2]*cappedWriter // the running interpreter's stdout and stderr, for the guard
}

// addPartial appends to r, within the run's output caps, what the running interpreter has
// written so far: the guard's reply for a run a limit ended while Python ran.
func (pr *pyRun) addPartial(r *wire.RunReply) {
	pr.mu.Lock()
	out := pr.out
	pr.mu.Unlock()
	if out[0] == nil {
		return
	}
	for i, dst := range []*[]byte{&r.Stdout, &r.Stderr} {
		b, cut := out[i].contents()
		limit := [2]int64{pr.req.MaxStdout, pr.req.MaxStderr}[i]
		room := max(limit-int64(len(*dst)), 0)
		if int64(len(b)) > room {
			cut += int64(len(b)) - room
			b = b[:room]
		}
		*dst = append(*dst, b...)
		if i == 0 {
			r.StdoutCut += cut
		} else {
			r.StderrCut += cut
		}
	}
}

type pyRunKey struct{}

// instantiateHostModule adds the "ceval" host module to a runtime.
func instantiateHostModule(ctx context.Context, rt wazero.Runtime) error {
	_, err := rt.NewHostModuleBuilder(hostModule).
		NewFunctionBuilder().WithFunc(hostPythonRun).Export("python_run").
		NewFunctionBuilder().WithFunc(hostPythonOutput).Export("python_output").
		Instantiate(ctx)
	return err
}

func hostPythonOutput(ctx context.Context, m api.Module, stream, buf, n uint32) uint32 {
	pr, _ := ctx.Value(pyRunKey{}).(*pyRun)
	if pr == nil || stream < 1 || stream > 2 {
		return 0
	}
	p := &pr.pending[stream-1]
	k := min(uint32(len(*p)), n)
	if !m.Memory().Write(buf, (*p)[:k]) {
		return 0
	}
	*p = (*p)[k:]
	return k
}

func hostPythonRun(ctx context.Context, m api.Module, reqPtr, reqLen, stdinPtr, stdinLen, outLenPtr uint32) uint32 {
	pr, _ := ctx.Value(pyRunKey{}).(*pyRun)
	if pr == nil {
		return pyStatusUnavailable
	}
	pr.pending = [2][]byte{}
	mem := m.Memory()
	errOut := func(format string, args ...any) {
		pr.pending[1] = fmt.Appendf(pr.pending[1], format, args...)
	}
	reqBytes, ok1 := mem.Read(reqPtr, reqLen)
	stdin, ok2 := mem.Read(stdinPtr, stdinLen)
	var call pythonCall
	if !ok1 || !ok2 || json.Unmarshal(reqBytes, &call) != nil || len(call.Argv) == 0 {
		errOut("python: bad call from the toolbox\n")
		mem.WriteUint32Le(outLenPtr+4, uint32(len(pr.pending[1])))
		return pyStatusBadCall
	}
	if pr.py == nil {
		errOut("%s: Python is not available in this sandbox: %s\n", call.Argv[0], pr.why)
		mem.WriteUint32Le(outLenPtr+4, uint32(len(pr.pending[1])))
		return pyStatusUnavailable
	}
	stdinCopy := bytes.Clone(stdin) // the toolbox's memory may move while Python runs
	stdout, stderr, status := pr.runPython(ctx, &call, stdinCopy)
	pr.pending = [2][]byte{stdout, stderr}
	mem.WriteUint32Le(outLenPtr, uint32(len(stdout)))
	mem.WriteUint32Le(outLenPtr+4, uint32(len(stderr)))
	return status
}

// runPython runs one interpreter instance to completion and returns its stdout, stderr and
// status. Either stream past the run's cap stops the whole run.
func (pr *pyRun) runPython(ctx context.Context, call *pythonCall, stdin []byte) ([]byte, []byte, uint32) {
	req := pr.req
	stdout := &cappedWriter{max: req.MaxStdout, onFull: func() { pr.cancel(errStdout) }}
	stderr := &cappedWriter{max: req.MaxStderr, onFull: func() { pr.cancel(errStderr) }}
	out := func(status uint32) ([]byte, []byte, uint32) { return stdout.buf.Bytes(), stderr.buf.Bytes(), status }
	limit := uint64(0)
	if req.MemoryLimit > pr.mem.peak {
		limit = req.MemoryLimit - pr.mem.peak
	}
	pm := &guestMemory{limit: limit}
	if pr.py.memMin > limit {
		pr.pyMemHit = true
		fmt.Fprintf(stderr, "%s: the run's memory limit leaves %s, under the %s CPython starts with\n", call.Argv[0], human(int64(limit)), human(int64(pr.py.memMin)))
		return out(pyStatusKilled)
	}
	if !pr.guard.enter() {
		return out(pyStatusKilled) // the run is over: an instance started now could not be stopped
	}
	defer pr.guard.leave()
	pr.mu.Lock()
	pr.out = [2]*cappedWriter{stdout, stderr}
	pr.mu.Unlock()
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs(pythonArgv(call.Argv, call.Dir)...).
		WithStdin(bytes.NewReader(stdin)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithFSConfig(pr.st.mounts(req, pr.tmp, true)).
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader)
	for _, kv := range pythonEnv(call.Env, call.Dir, req.Packages) {
		k, v, _ := strings.Cut(kv, "=")
		cfg = cfg.WithEnv(k, v)
	}
	err := instantiate(ctx, pr.py, cfg, pm)
	pr.pyPeak = max(pr.pyPeak, pm.peak)
	pr.pyMemHit = pr.pyMemHit || pm.hit // a MemoryError Python caught still hit the limit
	var exit *sys.ExitError
	switch {
	case err == nil:
		return out(0)
	case context.Cause(ctx) != nil:
		return out(pyStatusKilled)
	case errors.As(err, &exit) && exit.ExitCode() < sys.ExitCodeDeadlineExceeded:
		return out(exit.ExitCode())
	case pm.hit:
		fmt.Fprintf(stderr, "%s: out of memory (the run's limit is %s)\n", call.Argv[0], human(int64(req.MemoryLimit)))
		return out(pyStatusKilled)
	}
	fmt.Fprintf(stderr, "%s: the interpreter trapped: %v\n", call.Argv[0], err)
	return out(134)
}

// pythonEnv is the interpreter's environment: the shell's exported variables, with
// ceval's site directory first on PYTHONPATH and the working directory for it to enter.
// PYTHONHOME names the prefix CPython was built for, which it would find anyway: without
// it, getpath searched for its landmarks on every start (some 10 ms under wazero). The
// shell's own PYTHONHOME is dropped (it could move the standard library into the
// workspace) and ceval's sitecustomize removes this one, so os.environ holds neither
// (a shell's python3 -S runs site too: pythonArgv drops -S). The shell's relative PYTHONPATH
// entries are made absolute against its directory: site makes them absolute while CPython
// is still in "/", before ceval's sitecustomize enters that directory (PYTHONPATH=src
// named /src). PYTHONPYCACHEPREFIX is dropped, as pythonArgv drops -X pycache_prefix: with
// a prefix in the writable /tmp, code the script ran earlier (the agent's) could leave
// bytecode there that a later import of the task's own modules would run (found by review).
//
// The standard library's directory comes next, ahead of the shell's entries: CPython imports
// its encodings package before site, from PYTHONPATH's entries ahead of its own library, so
// PYTHONPATH=/workspace/src with the agent's src/encodings/ ran the agent's code before the
// guard. Every other standard name already imports the standard module or nothing.
func pythonEnv(shellEnv []string, dir string, packages bool) []string {
	env := make([]string, 0, len(shellEnv)+4)
	pythonPath := wire.PythonSiteDir + ":" + path.Join(wire.PythonStdlibDir, pythonStdlibSubdir)
	if packages {
		pythonPath += ":" + wire.PythonPackagesDir
	}
	for _, kv := range shellEnv {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "PYTHONPATH":
			if v != "" {
				for _, p := range strings.Split(v, ":") {
					if !path.IsAbs(p) {
						p = path.Join(dir, p) // "" is the working directory, as in CPython
					}
					pythonPath += ":" + p
				}
			}
			continue
		case "CEVAL_PWD", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PYTHONPATH="+pythonPath, "PYTHONHOME="+path.Dir(wire.PythonStdlibDir), "CEVAL_PWD="+dir, "PYTHONDONTWRITEBYTECODE=1")
}

// pythonArgv makes a relative script path absolute against the shell's directory (CPython
// resolves it before ceval's sitecustomize can change into that directory), drops
// -X pycache_prefix (see pythonEnv) and drops -S: without site no ceval.pth or sitecustomize
// runs, so neither the import guard nor the move into the shell's directory did, and a check
// that put the workspace first on sys.path under -S got its packaging/ in place of the task's
// (issue 32; TestWorkspaceCannotShadowAGraderPackage). site adds nothing else here: its
// site-packages holds only ceval.pth, and there is no user site. It reads options as CPython does: letters clustered
// (-IE), -c and -m ending the options with what follows them (the rest of the cluster or
// the next argument), -W and -X taking the rest of the cluster or the next argument as
// their value, --check-hash-based-pycs taking the next.
func pythonArgv(argv []string, dir string) []string {
	out := []string{"python3"}
	script := func(rest []string) []string {
		if len(rest) > 0 && rest[0] != "-" && !path.IsAbs(rest[0]) {
			rest = append([]string{path.Join(dir, rest[0])}, rest[1:]...)
		}
		return append(out, rest...)
	}
	args := argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			return append(out, args[i:]...)
		case a == "--":
			out = append(out, a)
			return script(args[i+1:])
		case a == "--check-hash-based-pycs" && i+1 < len(args):
			out = append(out, a, args[i+1])
			i++
			continue
		case strings.HasPrefix(a, "--"):
			out = append(out, a)
			continue
		case !strings.HasPrefix(a, "-"):
			return script(args[i:])
		}
		j := 1 + strings.IndexAny(a[1:], "cmWX") // the letters before it are plain flags
		if j == 0 {
			j = len(a)
		}
		flags := "-" + strings.ReplaceAll(a[1:j], "S", "") // -S dropped: see above
		switch {
		case j == len(a):
			if flags != "-" {
				out = append(out, flags)
			}
		case a[j] == 'c' || a[j] == 'm':
			return append(append(out, flags+a[j:]), args[i+1:]...)
		default: // W or X: its value is the rest of the cluster, or the next argument
			value, next := a[j+1:], false
			if value == "" && i+1 < len(args) {
				value, next = args[i+1], true
			}
			switch {
			case a[j] == 'X' && (value == "pycache_prefix" || strings.HasPrefix(value, "pycache_prefix=")):
				if flags != "-" {
					out = append(out, flags) // the flags clustered before it
				}
			case next:
				out = append(out, flags+a[j:], args[i+1])
			default:
				out = append(out, flags+a[j:])
			}
			if next {
				i++
			}
		}
	}
	return out
}

// pythonRun is the state python_run works on during one run.
func (st *workerState) pythonRun(req *wire.RunRequest, tmp *memFS, mem *guestMemory, cancel context.CancelCauseFunc, guard *runGuard) *pyRun {
	pr := &pyRun{st: st, req: req, tmp: tmp, mem: mem, cancel: cancel, guard: guard, why: req.PythonWhy}
	if req.Python != "" {
		pr.py = st.modules[moduleKey{digest: req.Python}] // CPython is compiled unchecked
	}
	if pr.py == nil && pr.why == "" {
		pr.why = "this criterion was not prepared with CPython (its script does not name python or python3)"
	}
	return pr
}
