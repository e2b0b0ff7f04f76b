// Package wire is the protocol between ceval's WASM host side (package wasm) and its worker
// process (package wasm/worker): the frames, the request and reply types, the flags and the
// guest paths both sides must agree on, and their encoding. It holds no behaviour: the host
// never links the worker's wazero runtime, and the worker never links the host's task,
// snapshot or grader.
package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// WorkerCommand is the hidden first argument with which the host re-executes ceval as the
// worker (worker.Main); a second argument says what it is: ModeRun ("cache": a run worker
// with CacheFD holding its cache directory, which it may only read), ModeCompile (the
// compiler, which writes it) or none (a run worker without a cache).
const WorkerCommand = "__wasm-worker"

// Worker modes (the argument after WorkerCommand). A run worker runs guests over the
// workspace, so nothing it could leave behind is trusted: the host starts it unable to
// write any file (Landlock: wasm/landlock.go) and it only reads the cache. The compiler
// runs no guest and sees no workspace or task: it compiles the modules and ceval's own
// Python sources the host sends it and keeps them in the cache, which later run workers
// execute.
const (
	ModeRun     = "cache"
	ModeCompile = "compile"
)

// CacheFD is the descriptor on which the worker inherits its compilation cache directory;
// it reaches the directory only through it.
const CacheFD = 3

// Flags of an OpModule frame.
const (
	ModuleChecked = 1 << iota // compile with context checks (WithCloseOnContextDone)
	ModulePython              // CPython: also mount its stdlib (read out of the module)
)

// Paths in the guest both sides name: the host in argv and environment, the worker in its
// mounts.
const (
	PythonSiteDir     = "/ceval/python"   // ceval's sitecustomize, first on PYTHONPATH
	PythonStdlibDir   = "/usr/local/lib"  // CPython's stdlib, read out of its module
	PythonPackagesDir = "/ceval/packages" // python_packages and python_wheels (SlotPkgs)
	PytestLibDir      = "/ceval"          // pytest's packages in a pytest run (SlotPyLib)
)

// PyLibCompileTimeout bounds the worker's one-off compile of pytest's packages, which its
// first pytest run does before the run's own timer starts; the host waits that much longer.
const PyLibCompileTimeout = 5 * time.Minute

// The parent and the worker speak in frames over the worker's stdin and stdout: one op
// byte, a big-endian uint32 payload length, the payload. Each request gets one reply, in
// order. Control payloads are JSON; file contents travel raw.
const (
	OpHello      = 'H' // worker → parent, first: who the worker runs as
	OpModule     = 'M' // parent → worker: a module's bytes; reply OpModuleDone
	OpModuleDone = 'm'
	OpViewBegin  = 'V' // parent → worker: a view follows (ViewBegin)
	OpDir        = 'D' // path
	OpFile       = 'F' // uint32 mode, path, NUL, contents
	OpLink       = 'L' // path, NUL, target
	OpOmitted    = 'O' // uint32 mode (type and permission bits), uint64 size, path, NUL, reason
	OpIncomplete = 'I' // directory path ("" for the root), NUL, reason
	OpViewEnd    = 'E' // reply OpViewDone
	OpViewDone   = 'v'
	OpRun        = 'R' // parent → worker: RunRequest; reply OpRunDone
	OpRunDone    = 'r'
	// OpCompilePyLib: parent → compiler: compile pytest's packages (the pylib view sent
	// before) with the CPython module of CompilePyLib.Digest, and keep the bytecode; reply
	// OpCompiledPyLib with a ModuleReply. Only the compiler takes it.
	OpCompilePyLib  = 'P'
	OpCompiledPyLib = 'p'
)

// CompilePyLib is an OpCompilePyLib request.
type CompilePyLib struct {
	Digest      string `json:"digest"` // the CPython module's, loaded before
	MemoryLimit uint64 `json:"memory_limit"`
}

// Frame size caps. The worker trusts the parent more than the parent trusts the worker,
// whose replies carry guest output.
const (
	MaxRequestFrame = 1 << 30
	MaxReplyFrame   = 16 << 20
)

type Hello struct {
	PID        int    `json:"pid"`
	UID        int    `json:"uid"`
	GID        int    `json:"gid"`
	Groups     []int  `json:"groups"`
	NoNewPrivs bool   `json:"no_new_privs"`
	CapEff     uint64 `json:"cap_eff"`
	CapPrm     uint64 `json:"cap_prm"`
	CapInh     uint64 `json:"cap_inh"`
	CapAmb     uint64 `json:"cap_amb"`
	EnvCount   int    `json:"env_count"`
	Err        string `json:"err,omitempty"`
}

type ModuleReply struct {
	Digest  string        `json:"digest"`
	Compile time.Duration `json:"compile"`
	Err     string        `json:"err,omitempty"`
	// SiteBytecode says, for CPython, how ceval's sitecustomize got its bytecode
	// ("compiled" or "cache", pylib.go).
	SiteBytecode string `json:"site_bytecode,omitempty"`
	// FromCache: a run worker found the module's native code in the cache, as the
	// compiler kept it; false, it compiled the module itself and kept nothing, and the host
	// has the compiler compile it for the next worker.
	FromCache bool `json:"from_cache,omitempty"`
}

type ViewBegin struct {
	Slot string `json:"slot"` // SlotWorkspace or SlotReference
	// Path is an output view's container path (SlotOutput); outputs follow their workspace
	// view, which drops the ones before.
	Path string `json:"path,omitempty"`
}

const (
	SlotWorkspace = "workspace"
	SlotReference = "reference"
	SlotTask      = "task"   // the grader files, at /task
	SlotPyLib     = "pylib"  // pytest's packages, at /ceval for a pytest run
	SlotPkgs      = "pkgs"   // python_packages, at /ceval/packages
	SlotOutput    = "output" // one of the task's sandbox.outputs, at its Path
)

type ViewReply struct {
	Err string `json:"err,omitempty"`
}

type RunRequest struct {
	Digest      string        `json:"digest"`
	Args        []string      `json:"args"`
	Env         []string      `json:"env"` // KEY=VALUE
	Timeout     time.Duration `json:"timeout"`
	Reference   bool          `json:"reference"` // mount the reference view
	Task        bool          `json:"task"`      // mount the task view (grader files) at /task
	PyLib       bool          `json:"pylib"`     // mount the pylib view at /ceval
	Pytest      bool          `json:"pytest"`    // Args are pytest's: the worker runs them in CPython through its boot
	Packages    bool          `json:"packages"`  // mount the pkgs view at /ceval/packages for CPython
	Collect     []string      `json:"collect"`   // files in /tmp to hand back in RunReply.Files
	MemoryLimit uint64        `json:"memory_limit"`
	MaxStdout   int64         `json:"max_stdout"`
	MaxStderr   int64         `json:"max_stderr"`
	MaxTmpBytes int64         `json:"max_tmp_bytes"`
	CloseOnDone bool          `json:"close_on_done"`        // the module is compiled with context checks
	Python      string        `json:"python,omitempty"`     // digest of the loaded CPython module run as python3
	PythonWhy   string        `json:"python_why,omitempty"` // why there is none, for the guest's error
}

// How the worker had Python bytecode it compiles once: RunReply.PyLib for pytest's packages,
// ModuleReply.SiteBytecode for ceval's sitecustomize.
const (
	BytecodeCompiled  = "compiled"
	BytecodeFromCache = "cache"
)

// Limits a run can hit; each scores 0 and is named in the details.
const (
	LimitTimeout = "timeout"
	LimitMemory  = "memory"
	LimitStdout  = "stdout"
	LimitStderr  = "stderr"
)

type RunReply struct {
	ExitCode   uint32            `json:"exit_code"`
	Trap       string            `json:"trap,omitempty"`  // the guest trapped (not an exit)
	Limit      string            `json:"limit,omitempty"` // the limit that stopped it
	Stdout     []byte            `json:"stdout"`
	Stderr     []byte            `json:"stderr"`
	StdoutCut  int64             `json:"stdout_cut,omitempty"` // bytes dropped past the cap
	StderrCut  int64             `json:"stderr_cut,omitempty"`
	TmpFull    bool              `json:"tmp_full,omitempty"`
	Omitted    string            `json:"omitted,omitempty"` // the first omitted path the guest reached
	PeakMemory uint64            `json:"peak_memory"`
	Wall       time.Duration     `json:"wall"`
	Err        string            `json:"err,omitempty"`   // ceval's side: the run could not start
	Files      map[string][]byte `json:"files,omitempty"` // RunRequest.Collect, those that exist
	// PyLib says how this worker's first pytest run got pytest's bytecode: "compiled" or
	// "cache" (pylib.go); empty for every other run.
	PyLib string `json:"pylib,omitempty"`
	// WorkerExits: a limit stopped a guest compiled without context checks; the worker
	// answered for it and exits (runGuard), so the next run needs a new worker.
	WorkerExits bool `json:"worker_exits,omitempty"`
}

func WriteFrame(w io.Writer, op byte, parts ...[]byte) error {
	var n int
	for _, p := range parts {
		n += len(p)
	}
	if int64(n) > MaxRequestFrame {
		return fmt.Errorf("frame %c of %d bytes is over the %d-byte cap", op, n, MaxRequestFrame)
	}
	var hdr [5]byte
	hdr[0] = op
	binary.BigEndian.PutUint32(hdr[1:], uint32(n))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

func WriteJSON(w io.Writer, op byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteFrame(w, op, b)
}

// ReadFrame reads one frame whose payload is at most max bytes.
func ReadFrame(r io.Reader, max int64) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int64(binary.BigEndian.Uint32(hdr[1:]))
	if n > max {
		return 0, nil, fmt.Errorf("frame %q of %d bytes is over the %d-byte cap", hdr[0], n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, fmt.Errorf("frame %q: %w", hdr[0], err)
	}
	return hdr[0], b, nil
}

// ReadReply reads the frame op and decodes it into v.
func ReadReply(r io.Reader, op byte, v any) error {
	got, b, err := ReadFrame(r, MaxReplyFrame)
	if err != nil {
		return err
	}
	if got != op {
		return fmt.Errorf("worker replied %q, want %q", got, op)
	}
	return json.Unmarshal(b, v)
}

// SplitNUL splits a payload at its first NUL.
func SplitNUL(b []byte) (string, []byte, bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", nil, false
	}
	return string(b[:i]), b[i+1:], true
}
