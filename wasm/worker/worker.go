package worker

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/wasm/wire"
)

// Command is the hidden first argument on which a binary that grades (cmd/ceval, and the
// test binaries of packages that grade) must call Main, before anything else:
//
//	if len(os.Args) > 1 && os.Args[1] == worker.Command {
//		worker.Main()
//	}
const Command = wire.WorkerCommand

// Main runs the sandbox worker on stdin and stdout and exits; it never returns. The
// wasm.Executor starts it by re-executing ceval with Command, an empty environment and,
// when ceval is root, an unprivileged UID. It reads everything it runs from stdin and opens
// no host path but its inherited cache directory (and, to prune that cache, reads /proc for
// other workers using it: cacheprune.go; before any module is loaded).
func Main() {
	err := serve(os.Stdin, os.Stdout)
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(os.Stderr, "ceval wasm worker: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// moduleKey names a compiled module in the worker: its digest and the one runtime knob that
// changes the compiled code.
type moduleKey struct {
	digest      string
	closeOnDone bool
}

type compiled struct {
	rt     wazero.Runtime
	cm     wazero.CompiledModule
	memMin uint64 // bytes the module's memory starts with
}

type workerState struct {
	cache         wazero.CompilationCache
	cacheDir      *os.File // this build's directory in the cache, locked shared
	compiler      bool     // wire.ModeCompile: runs nothing, writes the cache
	modules       map[moduleKey]*compiled
	workspace     *memFS
	outputs       []outputView // the workspace snapshot's sandbox.outputs, at their paths
	reference     *memFS
	task          *memFS            // the grader files, at /task
	pylib         *memFS            // pytest's packages, at /ceval for pytest runs
	pylibCompiled bool              // compilePyLib ran over pylib
	pkgs          *memFS            // python_packages, at /ceval/packages
	stdlib        *memFS            // CPython's stdlib, at /usr/local/lib for CPython
	roots         map[string]*memFS // "/" holding the mount points, by its mount points
	cevalFS       *memFS            // /ceval: ceval's read-only Python site directory
}

func serve(in io.Reader, out io.Writer) error {
	h := lockDown()
	bw := bufio.NewWriterSize(out, 64<<10)
	if err := wire.WriteJSON(bw, wire.OpHello, h); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if h.Err != "" {
		return errors.New(h.Err)
	}
	st := &workerState{modules: map[moduleKey]*compiled{}, roots: map[string]*memFS{}}
	mode := ""
	if len(os.Args) > 2 {
		mode = os.Args[2]
	}
	st.compiler = mode == wire.ModeCompile
	if mode == wire.ModeRun || st.compiler {
		c, held, err := openCompilationCache(wire.CacheFD)
		switch {
		case err != nil && st.compiler:
			return fmt.Errorf("compilation cache: %w", err)
		case err == nil:
			defer held.Close() // the shared lock on this version's directory, for the worker's life
			st.cache, st.cacheDir = c, held
		}
		// else: a run worker cannot make the directories of a cache the compiler has not
		// made yet; it compiles everything itself.
		if st.compiler {
			// Other wazero versions' directories, off the critical path (cacheprune.go);
			// the compiler's exit waits for it, so a pruning is never left half done for no
			// reason. A run worker cannot remove anything (it writes no file).
			pruned := make(chan struct{})
			defer func() { <-pruned }()
			go func() {
				defer close(pruned)
				if _, err := pruneStaleCaches(wire.CacheFD); err != nil && !errors.Is(err, errInUse) {
					fmt.Fprintf(os.Stderr, "ceval wasm worker: prune the compilation cache: %v\n", err)
				}
			}()
		}
	}
	br := bufio.NewReaderSize(in, 256<<10)
	for {
		op, b, err := wire.ReadFrame(br, wire.MaxRequestFrame)
		if err != nil {
			return err
		}
		switch op {
		case wire.OpModule:
			err = wire.WriteJSON(bw, wire.OpModuleDone, st.load(b))
		case wire.OpViewBegin:
			err = wire.WriteJSON(bw, wire.OpViewDone, st.readView(br, b))
		case wire.OpCompilePyLib:
			if !st.compiler {
				return errors.New("a compile request to a run worker")
			}
			var req wire.CompilePyLib
			if err := json.Unmarshal(b, &req); err != nil {
				return fmt.Errorf("compile request: %w", err)
			}
			err = wire.WriteJSON(bw, wire.OpCompiledPyLib, st.compileKeptPyLib(&req))
		case wire.OpRun:
			if st.compiler {
				return errors.New("a run request to the compiler, which runs nothing")
			}
			var req wire.RunRequest
			if err := json.Unmarshal(b, &req); err != nil {
				return fmt.Errorf("run request: %w", err)
			}
			answer := func(r wire.RunReply) { // the guard's: the worker ends with this reply
				if err := wire.WriteJSON(bw, wire.OpRunDone, r); err == nil {
					_ = bw.Flush()
				}
				os.Exit(0)
			}
			err = wire.WriteJSON(bw, wire.OpRunDone, st.run(&req, answer))
		default:
			return fmt.Errorf("unexpected frame %q", op)
		}
		if err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
}

// lockDown sets no_new_privs and a zero core size, then reports who the worker runs as. It
// refuses (Err set) to go on holding any capability or any environment variable.
func lockDown() wire.Hello {
	h := wire.Hello{PID: os.Getpid(), UID: os.Getuid(), GID: os.Getgid(), EnvCount: len(os.Environ())}
	h.Groups, _ = os.Getgroups()
	var errs []string
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		errs = append(errs, fmt.Sprintf("set no_new_privs: %v", err))
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		errs = append(errs, fmt.Sprintf("zero core size: %v", err))
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		errs = append(errs, fmt.Sprintf("read own status: %v", err))
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		bits := func() uint64 { n, _ := strconv.ParseUint(v, 16, 64); return n }
		switch k {
		case "NoNewPrivs":
			h.NoNewPrivs = v == "1"
		case "CapEff":
			h.CapEff = bits()
		case "CapPrm":
			h.CapPrm = bits()
		case "CapInh":
			h.CapInh = bits()
		case "CapAmb":
			h.CapAmb = bits()
		}
	}
	if !h.NoNewPrivs {
		errs = append(errs, "no_new_privs is not set")
	}
	if h.CapEff|h.CapPrm|h.CapInh|h.CapAmb != 0 {
		errs = append(errs, fmt.Sprintf("holds capabilities (eff %x prm %x inh %x amb %x)", h.CapEff, h.CapPrm, h.CapInh, h.CapAmb))
	}
	if h.EnvCount != 0 {
		errs = append(errs, fmt.Sprintf("has %d environment variables, want none", h.EnvCount))
	}
	h.Err = strings.Join(errs, "; ")
	return h
}

// load compiles a module once per key. The payload is one flags byte, the module's sha256
// in hex (computed by ceval, which the worker trusts), then the module.
func (st *workerState) load(b []byte) wire.ModuleReply {
	if len(b) < 1+sha256.Size*2 {
		return wire.ModuleReply{Err: "short module frame"}
	}
	key := moduleKey{digest: string(b[1 : 1+sha256.Size*2]), closeOnDone: b[0]&wire.ModuleChecked != 0}
	wasm := b[1+sha256.Size*2:]
	r := wire.ModuleReply{Digest: key.digest}
	if _, ok := st.modules[key]; ok {
		return r
	}
	ctx := context.Background()
	start := time.Now()
	cfg := wazero.NewRuntimeConfigCompiler().
		WithCloseOnContextDone(key.closeOnDone).
		// Our allocator enforces the run's memory limit and can say it was hit; wazero's
		// own ceiling is the 4 GiB wasm32 maximum so that it never refuses first.
		WithMemoryLimitPages(65536).
		WithMemoryCapacityFromMax(true).
		WithDebugInfoEnabled(false)
	// A run worker reads the native code from the cache only where the compiler marked
	// it kept (a miss would have wazero write it, which the run worker cannot); it
	// compiles anything else itself and keeps nothing.
	useCache := st.cache != nil && !st.compiler && st.keptModule(b[0], key.digest)
	var rt wazero.Runtime
	var cm wazero.CompiledModule
	var err error
	if st.compiler && st.cache != nil {
		rt, cm, err = st.compileAndKeep(ctx, cfg, wasm, b[0], key.digest)
	} else {
		rt, cm, err = st.compileModule(ctx, cfg, wasm, useCache)
	}
	if err != nil && useCache {
		// The entry is gone or damaged since the compiler kept it: compile without it.
		useCache = false
		rt, cm, err = st.compileModule(ctx, cfg, wasm, false)
	}
	r.Compile = time.Since(start)
	if err != nil {
		r.Err = err.Error()
		if sum := sha256.Sum256(wasm); hex.EncodeToString(sum[:]) != key.digest {
			r.Err += fmt.Sprintf(" (the %d bytes received have sha256 %x, not the digest sent with them)", len(wasm), sum)
		}
		return r
	}
	r.FromCache = useCache
	c := &compiled{rt: rt, cm: cm}
	for _, m := range cm.ExportedMemories() {
		c.memMin = max(c.memMin, uint64(m.Min())*65536)
	}
	if b[0]&wire.ModulePython != 0 && st.stdlib == nil {
		if st.stdlib, err = pythonStdlib(wasm); err != nil {
			rt.Close(ctx)
			r.Err = err.Error()
			return r
		}
		r.SiteBytecode, err = st.compileCeval("site", c, key.digest, st.cevalSite(), siteCompileMemory, pylibCompileSite)
		if err == nil {
			err = st.sourcelessSite()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "ceval wasm worker: compile ceval's sitecustomize: %v\n", err)
		}
	}
	st.modules[key] = c
	return r
}

// readView reads the frames of one view up to wire.OpViewEnd and installs it in its slot.
func (st *workerState) readView(br *bufio.Reader, b []byte) wire.ViewReply {
	var vb wire.ViewBegin
	var errs []string
	if err := json.Unmarshal(b, &vb); err != nil {
		errs = append(errs, fmt.Sprintf("view header: %v", err))
	}
	v := newMemFS(2, false)
	for {
		op, b, err := wire.ReadFrame(br, wire.MaxRequestFrame)
		if err != nil {
			// The stream is broken; nothing sensible can follow.
			fmt.Fprintf(os.Stderr, "ceval wasm worker: view: %v\n", err)
			os.Exit(1)
		}
		switch op {
		case wire.OpDir:
			err = v.put(string(b), fs.ModeDir|0o755, nil, "")
		case wire.OpFile:
			if len(b) < 4 {
				err = errors.New("short file frame")
				break
			}
			mode := fs.FileMode(binary.BigEndian.Uint32(b)).Perm()
			name, data, ok := wire.SplitNUL(b[4:])
			if !ok {
				err = errors.New("file frame without a name")
				break
			}
			err = v.put(name, mode, data, "")
		case wire.OpLink:
			name, target, ok := wire.SplitNUL(b)
			if !ok {
				err = errors.New("link frame without a name")
				break
			}
			err = v.put(name, fs.ModeSymlink|0o777, nil, string(target))
		case wire.OpOmitted:
			if len(b) < 12 {
				err = errors.New("short omitted-entry frame")
				break
			}
			mode := fs.FileMode(binary.BigEndian.Uint32(b))
			size := int64(binary.BigEndian.Uint64(b[4:]))
			name, why, ok := wire.SplitNUL(b[12:])
			if !ok {
				err = errors.New("omitted-entry frame without a name")
				break
			}
			err = v.putOmitted(name, mode&(fs.ModeType|fs.ModePerm), size, string(why))
		case wire.OpIncomplete:
			name, why, ok := wire.SplitNUL(b)
			if !ok {
				err = errors.New("incomplete-directory frame without a name")
				break
			}
			err = v.markIncomplete(name, string(why))
		case wire.OpViewEnd:
			v.readOnly = true
			switch vb.Slot {
			case wire.SlotWorkspace:
				st.workspace, st.outputs = v, nil
			case wire.SlotOutput:
				if !validOutputPath(vb.Path) || st.workspace == nil || len(st.outputs) >= maxOutputViews {
					errs = append(errs, fmt.Sprintf("output view at %q refused", vb.Path))
					break
				}
				v.dev = 16 + uint64(len(st.outputs))
				st.outputs = append(st.outputs, outputView{path: vb.Path, fs: v})
			case wire.SlotReference:
				v.dev = 3
				st.reference = v
			case wire.SlotTask:
				v.dev = 6
				st.task = v
			case wire.SlotPyLib:
				v.dev = 7
				st.pylib, st.pylibCompiled = v, false
			case wire.SlotPkgs:
				v.dev = 8
				st.pkgs = v
			default:
				errs = append(errs, fmt.Sprintf("unknown view slot %q", vb.Slot))
			}
			return wire.ViewReply{Err: strings.Join(errs, "; ")}
		default:
			err = fmt.Errorf("unexpected frame %q in a view", op)
		}
		if err != nil && len(errs) < 10 {
			errs = append(errs, err.Error())
		}
	}
}

func errViewPath(p string) error { return fmt.Errorf("view: bad or clashing path %q", p) }

// Why a run was stopped early: the cause of its context.
var (
	errTimeout = errors.New(wire.LimitTimeout)
	errStdout  = errors.New(wire.LimitStdout)
	errStderr  = errors.New(wire.LimitStderr)
)

// run instantiates the module once, fresh, over the views, and reports how it ended. When
// a limit ends it while an instance without context checks runs, the run's guard answers
// through answer instead, and run never returns.
func (st *workerState) run(req *wire.RunRequest, answer func(wire.RunReply)) (r wire.RunReply) {
	c := st.modules[moduleKey{digest: req.Digest, closeOnDone: req.CloseOnDone}]
	switch {
	case c == nil:
		return wire.RunReply{Err: "module " + req.Digest + " is not loaded"}
	case st.workspace == nil:
		return wire.RunReply{Err: "no workspace view is loaded"}
	case req.Reference && st.reference == nil:
		return wire.RunReply{Err: "no reference view is loaded"}
	case req.Task && st.task == nil:
		return wire.RunReply{Err: "no task view is loaded"}
	case req.Packages && st.pkgs == nil:
		return wire.RunReply{Err: "no python_packages view is loaded"}
	case req.PyLib && st.pylib == nil:
		return wire.RunReply{Err: "no pytest packages view is loaded"}
	}
	if c.memMin > req.MemoryLimit {
		return wire.RunReply{Limit: wire.LimitMemory, PeakMemory: c.memMin}
	}
	if req.PyLib {
		how, err := st.compilePyLib(c, req.Digest, req.MemoryLimit)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ceval wasm worker: %v\n", err)
		}
		r.PyLib = how
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	mem := &guestMemory{limit: req.MemoryLimit}
	stdout := &cappedWriter{max: req.MaxStdout, onFull: func() { cancel(errStdout) }}
	stderr := &cappedWriter{max: req.MaxStderr, onFull: func() { cancel(errStderr) }}
	tmp := newTmpFS(4, req.MaxTmpBytes)
	if err := st.seedTmp(tmp); err != nil {
		return wire.RunReply{Err: err.Error()}
	}

	st.workspace.ResetTouched()
	for _, o := range st.outputs {
		o.fs.ResetTouched()
	}
	fsc := st.mounts(req, tmp, req.PyLib)
	args := req.Args
	if req.Pytest {
		args = pytestArgv(args)
	}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs(args...).
		WithStdin(bytes.NewReader(nil)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithFSConfig(fsc).
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithRandSource(rand.Reader)
	for _, kv := range req.Env {
		k, v, _ := strings.Cut(kv, "=")
		cfg = cfg.WithEnv(k, v)
	}

	guard := newRunGuard(ctx, !req.CloseOnDone)
	pr := st.pythonRun(req, tmp, mem, cancel, guard)

	start := time.Now()
	go guard.watch(func() wire.RunReply {
		p := wire.RunReply{ExitCode: pyStatusKilled, Limit: context.Cause(ctx).Error(), Wall: time.Since(start), PyLib: r.PyLib}
		p.Stdout, p.StdoutCut = stdout.contents()
		p.Stderr, p.StderrCut = stderr.contents()
		pr.addPartial(&p)
		p.TmpFull = tmp.Full()
		p.Omitted = st.touched(tmp)
		return p
	}, answer)
	timer := time.AfterFunc(req.Timeout, func() { cancel(errTimeout) })
	err := instantiate(context.WithValue(ctx, pyRunKey{}, pr), c, cfg, mem)
	timer.Stop()
	if !guard.claim() {
		select {} // the guard is answering for this run and ending the worker
	}
	r.Wall = time.Since(start)
	mem.peak += pr.pyPeak
	mem.hit = mem.hit || pr.pyMemHit

	r.Stdout, r.StdoutCut = stdout.buf.Bytes(), stdout.cut
	r.Stderr, r.StderrCut = stderr.buf.Bytes(), stderr.cut
	r.TmpFull = tmp.Full()
	r.Omitted = st.touched(tmp)
	r.Files = collectTmp(tmp, req.Collect, maxCollectBytes)
	r.PeakMemory = mem.peak
	var exit *sys.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() < sys.ExitCodeDeadlineExceeded:
		r.ExitCode = exit.ExitCode()
	default:
		r.ExitCode = 1
		r.Trap = err.Error()
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTimeout), errors.Is(cause, errStdout), errors.Is(cause, errStderr):
		r.Limit = cause.Error()
	case mem.hit && (r.ExitCode != 0 || r.Trap != ""):
		r.Limit = wire.LimitMemory
	}
	return r
}

// instantiate runs the module's start function with its linear memory in mem; a panic
// inside wazero is the guest's doing until shown otherwise, so it comes back as a trap
// rather than killing the worker. Once it returns nothing runs on mem, which it frees
// itself: wazero does not when the guest traps or exits after a cancelled context marked
// the module closed, nor after a panic (found by review).
func instantiate(ctx context.Context, c *compiled, cfg wazero.ModuleConfig, mem *guestMemory) (err error) {
	defer mem.Free()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sandbox panicked: %v", p)
		}
	}()
	mod, err := c.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem), c.cm, cfg)
	if mod != nil {
		mod.Close(context.Background())
	}
	return err
}

// guestMemory backs one instance's linear memory with an anonymous mapping reserved up front
// (so growing never copies), refuses a grow past the instance's limit (so the host never
// holds more for it) and records that refusal so the details can name it. The mapping comes
// from the worker's pool (memPool) and returns to it zeroed.
type guestMemory struct {
	pool    *memPool // nil: the worker's
	limit   uint64
	mem     []byte // the whole mapping, which may be longer than reserve
	reserve uint64 // the most this instance may use
	hit     bool
	peak    uint64
}

// Allocate implements experimental.MemoryAllocator.
func (g *guestMemory) Allocate(_, max uint64) experimental.LinearMemory {
	g.reserve = min(max, g.limit) &^ 0xffff
	if g.pool == nil {
		g.pool = &thePool
	}
	if g.reserve > 0 {
		g.mem = g.pool.get(g.reserve)
	}
	return g
}

// Reallocate implements experimental.LinearMemory.
func (g *guestMemory) Reallocate(size uint64) []byte {
	if size > g.reserve || g.mem == nil {
		if size > g.limit {
			g.hit = true
		}
		return nil
	}
	g.peak = max(g.peak, size)
	return g.mem[:size:size]
}

// Free implements experimental.LinearMemory. wazero calls it when the module is closed,
// which instantiate does only once the instance has returned: nothing runs on the memory
// any more.
func (g *guestMemory) Free() {
	if g.mem != nil {
		g.pool.put(g.mem, g.peak)
		g.mem = nil
	}
}

// memPool keeps a few linear memories of finished instances for the next ones. A fresh
// anonymous mapping costs a page fault on every page an instance touches (some 3,000 for a
// `python3 -c` in a toolbox run, a quarter of its kernel time); a pooled one is zeroed by
// the worker, which keeps its pages, and is handed out only whole and zero again: WebAssembly
// promises a new instance zeroed memory, and no run may read what an earlier one left.
// TestPooledMemoryIsZero is the attack. A busy worker may so keep up to poolMappings times
// poolMaxPeak resident, all of it zero; one left idle for poolIdle gives it all back.
type memPool struct {
	mu    sync.Mutex
	free  [][]byte
	idle  time.Duration // 0: poolIdle
	timer *time.Timer   // releases the free mappings once no instance returned one for idle
}

// Bounds on the pool: how many mappings it keeps and the most of one an instance may have
// used for the pool to keep it (zeroing costs about what the faults it saves do, and a
// worker should not stay large after one big run).
const (
	poolMappings = 4
	poolMaxPeak  = 64 << 20
	poolIdle     = 30 * time.Second
)

var thePool memPool

// get returns a zeroed mapping of at least size bytes. New mappings are a power of two long,
// so that one kept from an instance serves the next whatever its limit.
func (p *memPool) get(size uint64) []byte {
	p.mu.Lock()
	for i, m := range p.free {
		if uint64(len(m)) >= size {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.mu.Unlock()
			return m
		}
	}
	p.mu.Unlock()
	m, err := unix.Mmap(-1, 0, int(1<<bits.Len64(size-1)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return m
}

// put takes back a mapping an instance used up to peak: zeroed and kept, or unmapped.
func (p *memPool) put(m []byte, peak uint64) {
	p.mu.Lock()
	keep := peak <= poolMaxPeak && len(p.free) < poolMappings
	p.mu.Unlock()
	if !keep {
		_ = unix.Munmap(m)
		return
	}
	clear(m[:peak]) // the instance could reach no byte past peak; the rest is still zero
	p.mu.Lock()
	if len(p.free) < poolMappings {
		p.free = append(p.free, m)
		m = nil
		idle := cmp.Or(p.idle, poolIdle)
		if p.timer == nil {
			p.timer = time.AfterFunc(idle, p.release)
		} else {
			p.timer.Reset(idle)
		}
	}
	p.mu.Unlock()
	if m != nil {
		_ = unix.Munmap(m)
	}
}

// release unmaps the free mappings (those handed out are the instances' until put).
func (p *memPool) release() {
	p.mu.Lock()
	free := p.free
	p.free = nil
	p.mu.Unlock()
	for _, m := range free {
		_ = unix.Munmap(m)
	}
}

// cappedWriter keeps the first max bytes written and counts the rest; the first overflow
// calls onFull, which stops the run. A run's guard may read it while the guest writes.
type cappedWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	max    int64
	cut    int64
	onFull func()
}

// contents returns a copy of what was kept and the count of bytes cut.
func (w *cappedWriter) contents() ([]byte, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes()), w.cut
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.max - int64(w.buf.Len())
	if int64(len(p)) <= room {
		return w.buf.Write(p)
	}
	w.buf.Write(p[:max(room, 0)])
	w.cut += int64(len(p)) - max(room, 0)
	if w.onFull != nil {
		w.onFull()
		w.onFull = nil
	}
	return len(p), nil
}
