package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

// Defaults for Options fields left zero.
const (
	DefaultMemoryLimit  = 256 << 20 // bytes of guest linear memory
	DefaultMaxOutput    = 1 << 20   // bytes of stdout, and of stderr, kept
	DefaultMaxTmpBytes  = 64 << 20  // bytes of files in /tmp
	DefaultMaxViewBytes = 512 << 20 // bytes of files in /workspace, and in /reference
	DefaultWorkerUID    = 65534     // nobody, when ceval runs as root
)

// maxModuleBytes caps a task's module file.
const maxModuleBytes = 256 << 20

// Grace periods on ceval's side, past which the worker is killed rather than waited for.
const (
	helloWait  = 10 * time.Second
	loadWait   = 5 * time.Minute // a cold compile of a big module
	closeGrace = 2 * time.Second
)

// runGrace is how long past a run's timeout the worker may take to answer (a var: a test
// shrinks it).
var runGrace = 10 * time.Second

// Options configure an Executor. Zero fields take the defaults above.
type Options struct {
	// CacheDir holds compiled modules; default DefaultCacheDir(). It must be a directory
	// owned by ceval's user and closed to everyone else (mode 0700).
	CacheDir string
	// MemoryLimit caps each run's linear memory, rounded up to 64 KiB pages.
	MemoryLimit int64
	// MaxOutput caps the stdout, and the stderr, kept from each run; more scores 0.
	MaxOutput int64
	// MaxTmpBytes caps the files a run writes in /tmp.
	MaxTmpBytes int64
	// MaxViewBytes caps the files of the workspace view, and of the reference view.
	MaxViewBytes int64
	// WorkerUID and WorkerGID are who the worker runs as when ceval is root.
	WorkerUID, WorkerGID int
	// CacheRoot, when set, is the cache directory OpenCacheDir opened and checked before this
	// process entered the user namespace it runs in (a rootless daemon's), where the owners of
	// the cache's ancestors are unmapped and could not be told apart; CacheDir is then unused.
	// The Executor reaches the cache only through it and leaves it open.
	CacheRoot *os.File
	// Python finds the pinned CPython WASI module that python and python3 run in
	// run_command scripts; nil leaves them unavailable (they fail with a message).
	Python PythonSource
	// NoToolboxPreload: no criterion this Executor grades runs the toolbox (UsesToolbox is
	// false for all of them), so NewExecutor does not load it ahead. Loading it costs a
	// fresh process some 100-200 ms of CPU (wazero decodes and validates the ~10 MB module
	// before it finds it in the compilation cache), which a grade of wasm or pytest criteria
	// only would pay for nothing. A run_command still loads it on first use.
	NoToolboxPreload bool
	// NoFullToolboxPreload: every toolbox criterion's script runs in the small toolbox
	// (UsesFullToolbox is false for all of them), so NewExecutor loads only that one ahead;
	// NoLiteToolboxPreload: none does, so it loads only the full one. A script still loads
	// the toolbox it needs on first use.
	NoFullToolboxPreload, NoLiteToolboxPreload bool

	// noCloseOnDone compiles every guest without wazero's context checks, as CPython
	// always is (faster loops; a limit then stops them by ending the worker); for the
	// benchmark only.
	noCloseOnDone bool
	// noPreload skips loading the embedded toolbox in NewExecutor; for tests that run
	// another module.
	noPreload bool
}

func (o Options) withDefaults() (Options, error) {
	if o.MemoryLimit == 0 {
		o.MemoryLimit = DefaultMemoryLimit
	}
	if o.MaxOutput == 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.MaxTmpBytes == 0 {
		o.MaxTmpBytes = DefaultMaxTmpBytes
	}
	if o.MaxViewBytes == 0 {
		o.MaxViewBytes = DefaultMaxViewBytes
	}
	if o.WorkerUID == 0 {
		o.WorkerUID = DefaultWorkerUID
	}
	if o.WorkerGID == 0 {
		o.WorkerGID = DefaultWorkerUID
	}
	if o.MemoryLimit < 0 || o.MemoryLimit > 4<<30 || o.MaxOutput < 0 || o.MaxTmpBytes < 0 || o.MaxViewBytes < 0 {
		return o, fmt.Errorf("wasm: limits out of range: %+v", o)
	}
	o.MemoryLimit = (o.MemoryLimit + 0xffff) &^ 0xffff
	if o.CacheDir == "" && o.CacheRoot == nil {
		dir, err := DefaultCacheDir()
		if err != nil {
			return o, err
		}
		o.CacheDir = dir
	}
	return o, nil
}

// Executor grades run_command and wasm criteria in a sandbox worker process. It implements
// grader.Executor. One Executor serves one grading: its worker keeps compiled modules and
// the current workspace and reference views across criteria. Execute calls are serialized.
// Close it when done.
type Executor struct {
	opts     Options
	uid, gid int  // who the worker runs as
	asRoot   bool // ceval is root, so the worker drops to uid:gid
	cache    *os.File
	// landlock: run workers can be started unable to write any file, so they may read the
	// cache, which only the compiler writes (keep.go); without it they get no cache.
	landlock bool
	started  time.Time // when NewExecutor was called (keep.go)

	mu sync.Mutex
	// toKeep: what a run worker compiled itself (not in the cache); Close has the
	// compiler compile and keep it for later workers.
	toKeep    []*taskModule
	keepPyLib *wire.CompilePyLib // pytest's bytecode, with this CPython
	keeping   bool               // e.w is the compiler
	w         *worker
	closed    bool
	toolbox   *taskModule                // what run_command runs
	lite      *taskModule                // what run_command runs when its script fits (nil: none)
	modules   map[*task.File]*taskModule // task modules, by the handle the task opened at load
	py        *taskModule                // CPython, stripped, once read
	pyErr     error                      // why CPython cannot be had, once known for good

	stopPreload context.CancelFunc // cancels the toolbox load NewExecutor started
}

type taskModule struct {
	data   []byte
	digest string
	// unchecked: compiled without wazero's context checks (CPython, which they make 3x
	// slower), so a limit stops it by ending the worker (see runGuard).
	unchecked bool
	// python: CPython, whose stdlib the worker mounts as a directory (pystdlib.go).
	python bool
}

// checked reports whether m is compiled with wazero's context checks, which stop it in
// place when its run's context ends.
func (e *Executor) checked(m *taskModule) bool { return !m.unchecked && !e.opts.noCloseOnDone }

// NewExecutor checks the cache directory and starts the worker. It fails if the cache is
// open to anyone but ceval's user (saying how to fix it), or if the worker cannot be started
// and shown to run unprivileged: the binary must call worker.Main (package wasm/worker) on wire.WorkerCommand.
func NewExecutor(opts Options) (*Executor, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	// Hashing the embedded toolbox (some 10 ms) overlaps the worker's start.
	toolbox := make(chan *taskModule, 1)
	go func() { toolbox <- defaultToolbox() }()
	e := &Executor{opts: opts, uid: os.Geteuid(), gid: os.Getegid(), modules: map[*task.File]*taskModule{}, started: time.Now()}
	if e.uid == 0 {
		e.asRoot = true
		e.uid, e.gid = opts.WorkerUID, opts.WorkerGID
	}
	e.landlock = landlockABI() >= 1
	if e.cache, err = openCacheDirs(opts.CacheDir, opts.CacheRoot, e.uid, e.gid); err != nil {
		return nil, err
	}
	if e.w, err = e.startWorker(); err != nil {
		e.cache.Close()
		return nil, err
	}
	e.toolbox = <-toolbox
	e.lite = defaultToolboxLite()
	if tb := e.toolbox; !opts.noPreload && !opts.NoToolboxPreload && bytes.HasPrefix(tb.data, wasmMagic) {
		// Load the toolboxes while the caller does other work (in `ceval run`, the whole
		// agent run): the first run_command then finds them compiled. Execute waits for them.
		ctx, cancel := context.WithCancel(context.Background())
		e.stopPreload = cancel
		e.mu.Lock()
		go func() {
			defer e.mu.Unlock()
			defer cancel()
			// A failure shows again, as an error, on first use. It ends the preload: a failed
			// load has stopped the worker (its state unknown), and Close cancels ctx to end
			// the preload early.
			if e.lite != nil && !opts.NoLiteToolboxPreload {
				if e.loadModule(ctx, e.lite) != nil {
					return
				}
			}
			if !opts.NoFullToolboxPreload || e.lite == nil {
				_ = e.loadModule(ctx, tb)
			}
		}()
	}
	return e, nil
}

// UsesToolbox reports whether the criterion runs the embedded toolbox in the WASM sandbox:
// a run_command not sent to a verifier container.
func UsesToolbox(c *task.Criterion) bool {
	return c.Type == task.RunCommand && c.Tier() == task.TierWASM
}

// UsesFullToolbox reports whether the criterion runs the full toolbox: a run_command in the
// WASM sandbox whose script the small toolbox cannot run (shell.LiteProgram).
func UsesFullToolbox(c *task.Criterion) bool {
	if !UsesToolbox(c) {
		return false
	}
	s, ok := c.Spec.(*task.RunCommandSpec)
	if !ok {
		return true
	}
	_, lite := liteProgram(s.Command)
	return !lite || defaultToolboxLite() == nil
}

// Close stops the worker, has the compiler keep what the grades compiled themselves for
// later grades (keep), and releases the cache directory.
func (e *Executor) Close() error { return e.close(true) }

// Drop is Close without the keep: for a ceval that was interrupted and must exit promptly
// (the compiler's work is bounded by keepWait, minutes with pytest's packages). Nothing is
// lost but time: the next grade compiles again and keeps it then.
func (e *Executor) Drop() error { return e.close(false) }

func (e *Executor) close(keep bool) error {
	if e.stopPreload != nil {
		e.stopPreload()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.w != nil {
		e.w.stop(closeGrace)
		e.w = nil
	}
	if keep {
		e.keep()
	}
	return e.cache.Close()
}

// Execute runs one executing criterion over the snapshot in a fresh module instance and
// scores it. Whatever the workspace makes the guest do (fail, loop, flood, exhaust memory,
// crash the worker) comes back as a score with details; err is for ceval's side only: a
// task module whose sha256 differs from the pinned one, a missing toolbox, a worker that
// cannot be started, a cancelled ctx.
func (e *Executor) Execute(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot, reference *task.Dir) (grader.Scored, error) {
	_, sc, err := e.execute(ctx, c, s, reference)
	return sc, err
}

// execute is Execute that also returns the run's reply, nil when there was no complete run.
func (e *Executor) execute(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot, reference *task.Dir) (*wire.RunReply, grader.Scored, error) {
	if c == nil || s == nil {
		return nil, grader.Scored{}, errors.New("wasm: no criterion or no snapshot")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, grader.Scored{}, errors.New("wasm: executor is closed")
	}
	if p, ok := c.Spec.(*task.PytestSpec); ok {
		return e.executePytest(ctx, p, s)
	}
	module, args, err := e.module(c)
	if err != nil {
		return nil, grader.Scored{}, err
	}
	if viewBytes(s) > e.opts.MaxViewBytes {
		return nil, grader.Scored{Details: fmt.Sprintf("the workspace snapshot (with its outputs) holds %s of files, over the %s the sandbox takes; not run", human(viewBytes(s)), human(e.opts.MaxViewBytes))}, nil
	}
	timeout := c.Execution().Timeout
	if timeout <= 0 {
		timeout = task.DefaultCheckTimeout
	}
	req := &wire.RunRequest{
		Digest:      module.digest,
		Args:        args,
		Env:         []string{"PWD=/workspace", "HOME=/tmp", "TMPDIR=/tmp"},
		Timeout:     timeout,
		MemoryLimit: uint64(e.opts.MemoryLimit),
		MaxStdout:   e.opts.MaxOutput,
		MaxStderr:   e.opts.MaxOutput,
		MaxTmpBytes: e.opts.MaxTmpBytes,
		CloseOnDone: e.checked(module),
	}
	usesReference := false
	switch s := c.Spec.(type) {
	case *task.RunCommandSpec:
		usesReference = s.UsesReference
	case *task.WASMSpec:
		usesReference = s.UsesReference
	}
	if usesReference {
		if reference.Root() == nil {
			return nil, grader.Scored{}, errors.New("wasm: the criterion uses_reference but the task has no reference directory")
		}
		req.Reference = true
		req.Env = append(req.Env, "REFERENCE_DIR=/reference")
	}

	if err := e.prepare(ctx, module, s, req.Reference, reference); err != nil {
		return nil, grader.Scored{}, err
	}
	if err := e.prepareTask(ctx, c.Execution().GraderFiles, req); err != nil {
		return nil, grader.Scored{}, err
	}
	if err := e.preparePython(ctx, c, req); err != nil {
		return nil, grader.Scored{}, err
	}
	r, details, err := e.run(ctx, req)
	if r == nil {
		return nil, grader.Scored{Details: details}, err
	}
	sc, err := score(c, r, e.opts, timeout)
	return r, sc, err
}

// run runs a prepared request. A nil reply with no error is a run that ended the worker:
// details say how.
func (e *Executor) run(ctx context.Context, req *wire.RunRequest) (*wire.RunReply, string, error) {
	var r wire.RunReply
	w := e.w
	wait := req.Timeout + runGrace
	if req.PyLib && !w.pylibCompiled {
		// The worker's first pytest run compiles pytest's packages to bytecode before the
		// run's timer starts, under a bound of its own: wait for that too. It took 20-35 s
		// on a warm CPython cache at load 6-10, and a run's timeout plus runGrace (40 s for
		// the default 30 s) does not hold it and pytest's 10-40 s there: the worker was
		// killed and a correct solution scored 0.
		wait += wire.PyLibCompileTimeout
	}
	err := e.roundTrip(ctx, wait, func(w io.Writer) error { return wire.WriteJSON(w, wire.OpRun, req) }, wire.OpRunDone, &r)
	if err == nil && r.WorkerExits {
		// A limit stopped a guest that only the worker's exit stops: the next run gets a new one.
		e.w = nil
		w.stop(0)
	}
	switch {
	case errors.Is(err, errWorkerTimeout):
		return nil, fmt.Sprintf("timeout: the sandbox did not stop within %v of the %v limit and was killed", wait-req.Timeout, req.Timeout), nil
	case errors.As(err, new(*workerDied)):
		return nil, fmt.Sprintf("the sandbox worker died while running the criterion: %v", err), nil
	case err != nil:
		return nil, "", err
	}
	if req.PyLib && r.PyLib == wire.BytecodeCompiled && e.landlock && e.keepPyLib == nil {
		e.keepPyLib = &wire.CompilePyLib{Digest: req.Digest, MemoryLimit: req.MemoryLimit}
	}
	if req.PyLib {
		// The worker answered a pytest run: it compiled (or tried to compile) pytest's
		// packages, which it does once, unless it refused the run before (a module not
		// loaded, a memory limit below the module's minimum), as it will every such run.
		w.pylibCompiled = true
	}
	if r.Err != "" {
		return nil, "", fmt.Errorf("wasm: %s", r.Err)
	}
	return &r, "", nil
}

// module returns the module a criterion runs, with its argv.
func (e *Executor) module(c *task.Criterion) (*taskModule, []string, error) {
	switch s := c.Spec.(type) {
	case *task.RunCommandSpec:
		if !bytes.HasPrefix(e.toolbox.data, wasmMagic) {
			return nil, nil, errNoToolbox
		}
		if e.lite != nil {
			if argv, ok := liteProgram(s.Command); ok {
				return e.lite, argv, nil
			}
		}
		return e.toolbox, []string{"toolbox", "-c", s.Command}, nil
	case *task.WASMSpec:
		m, err := e.taskModule(s)
		if err != nil {
			return nil, nil, err
		}
		return m, append([]string{filepath.Base(s.Module.Path)}, s.Args...), nil
	}
	return nil, nil, fmt.Errorf("wasm: criterion type %q does not execute", c.Type)
}

// taskModule reads a task's module once and checks it against the pinned sha256 on every
// use: a module that differs is never run.
func (e *Executor) taskModule(c *task.WASMSpec) (*taskModule, error) {
	if c.Module == nil {
		return nil, errors.New("wasm: the criterion names no module")
	}
	want := strings.ToLower(c.ModuleSHA256)
	if want == "" {
		return nil, fmt.Errorf("wasm: module %s is not pinned by a sha256; not graded as success", c.Module.Path)
	}
	m, ok := e.modules[c.Module]
	if !ok {
		// Through the handle the task opened at load: the module's path may name
		// something else by now.
		data, err := c.Module.ReadAll(maxModuleBytes)
		if err != nil {
			return nil, fmt.Errorf("wasm: module: %w", err)
		}
		m = newTaskModule(data)
		e.modules[c.Module] = m
	}
	if m.digest != want {
		return nil, fmt.Errorf("wasm: module %s has sha256 %s but the task pins %s; not graded as success", c.Module.Path, m.digest, want)
	}
	return m, nil
}

// prepare makes sure the worker runs and holds the module and the views this run needs.
func (e *Executor) prepare(ctx context.Context, m *taskModule, s *snapshot.Snapshot, withRef bool, reference *task.Dir) error {
	if e.w != nil && e.w.exited() {
		e.w.stop(0) // died between criteria (killed, or out of host memory): replace it
		e.w = nil
	}
	if e.w == nil {
		w, err := e.startWorker()
		if err != nil {
			return err
		}
		e.w = w
	}
	if err := e.loadModule(ctx, m); err != nil {
		return err
	}
	if k := snapshotKey(s); e.w.workspace != k {
		e.w.workspace = ""
		if err := e.loadView(ctx, "workspace", func(w io.Writer) error { return sendSnapshotView(w, s) }); err != nil {
			return err
		}
		// Then the copies of the task's sandbox.outputs, each a view at its container path
		// (the workspace's view dropped the last snapshot's).
		for _, o := range s.Outputs {
			vb := wire.ViewBegin{Slot: wire.SlotOutput, Path: o.Path}
			if err := e.loadView(ctx, "output "+o.Path, func(w io.Writer) error { return sendView(w, o.Snapshot, vb) }); err != nil {
				return err
			}
		}
		e.w.workspace = k
	}
	if withRef && e.w.reference != reference {
		send := func(w io.Writer) error { return sendReferenceView(w, reference, e.opts.MaxViewBytes) }
		if err := e.loadView(ctx, "reference", send); err != nil {
			return err
		}
		e.w.reference = reference
	}
	return nil
}

// loadView sends the worker one view (what send writes) and waits until it holds it; name
// says which view in errors.
func (e *Executor) loadView(ctx context.Context, name string, send func(io.Writer) error) error {
	var r wire.ViewReply
	if err := e.roundTrip(ctx, loadWait, send, wire.OpViewDone, &r); err != nil {
		return fmt.Errorf("wasm: %w", err)
	}
	if r.Err != "" {
		return fmt.Errorf("wasm: %s view: %s", name, r.Err)
	}
	return nil
}

// loadModule has the worker compile m (from the disk cache when it can) unless it holds it.
func (e *Executor) loadModule(ctx context.Context, m *taskModule) error {
	if e.w == nil {
		return errors.New("wasm: load module: no worker runs (an earlier failure stopped it)")
	}
	flags := byte(0)
	if e.checked(m) {
		flags |= wire.ModuleChecked
	}
	if m.python {
		flags |= wire.ModulePython
	}
	key := fmt.Sprintf("%s/%d", m.digest, flags)
	if e.w.modules[key] {
		return nil
	}
	var r wire.ModuleReply
	send := func(w io.Writer) error {
		return wire.WriteFrame(w, wire.OpModule, []byte{flags}, []byte(m.digest), m.data)
	}
	if err := e.roundTrip(ctx, loadWait, send, wire.OpModuleDone, &r); err != nil {
		return fmt.Errorf("wasm: load module: %w", err)
	}
	if r.Err != "" {
		if sum := sha256.Sum256(m.data); hex.EncodeToString(sum[:]) != m.digest {
			r.Err += fmt.Sprintf("; ceval's copy of the module changed since it was read (sha256 now %x)", sum)
		}
		return fmt.Errorf("wasm: module %s: %s", m.digest[:12], r.Err)
	}
	e.w.modules[key] = true
	if e.landlock && !e.keeping && !r.FromCache && !slices.Contains(e.toKeep, m) {
		e.toKeep = append(e.toKeep, m)
	}
	return nil
}

// viewBytes is the bytes of files of a snapshot's views: the workspace's and its outputs'.
func viewBytes(s *snapshot.Snapshot) int64 {
	n := s.Bytes
	for _, o := range s.Outputs {
		n += o.Bytes
	}
	return n
}

// snapshotKey identifies a snapshot for reuse of its view across criteria: the same
// *Snapshot over the same directory and entries.
func snapshotKey(s *snapshot.Snapshot) string {
	return fmt.Sprintf("%p\x00%s\x00%d\x00%d", s, s.Dir, len(s.Entries), s.Bytes)
}
