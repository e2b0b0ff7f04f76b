package wasm

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/wasm/wire"
)

// The cache holds native code and bytecode that later workers execute, so only a party
// that ran nothing of a grade writes it: the compiler, a worker process (wire.ModeCompile)
// that is sent the modules, and pytest's packages, that run workers had to compile
// themselves, and never a view of a workspace or a task, nor a run. Run workers read the
// cache and cannot write it (landlock.go). Close starts the compiler when there is
// something to keep; a grade pays for it once per module and ceval build.

// keptHere is what a compiler of this process has kept, by cache directory (module digest
// and flags, or "pylib" and CPython's digest), and when, so that the grades of an experiment
// that all missed the cache at once keep each thing once: a grade that started before a keep
// missed for want of it, one that started after missed because the entry went since (and
// keeps it again). keepMu runs one compiler at a time.
var (
	keepMu   sync.Mutex
	keptHere = map[string]time.Time{}
)

// keepWait bounds the compiler's work at Close: every module's compile and pytest's.
const keepWait = loadWait + wire.PyLibCompileTimeout

// keep has the compiler compile and keep e.toKeep and e.keepPyLib (under e.mu, with no
// run worker). Only a cache: a failure is said on stderr and the next grade compiles again.
func (e *Executor) keep() {
	if len(e.toKeep) == 0 && e.keepPyLib == nil {
		return
	}
	keepMu.Lock()
	defer keepMu.Unlock()
	keptSince := func(key string) bool { t, ok := keptHere[key]; return ok && t.After(e.started) }
	e.toKeep = slices.DeleteFunc(e.toKeep, func(m *taskModule) bool { return keptSince(e.keepKey(m)) })
	if e.keepPyLib != nil && keptSince(e.cacheID()+" pylib "+e.keepPyLib.Digest) {
		e.keepPyLib = nil
	}
	if len(e.toKeep) == 0 && e.keepPyLib == nil {
		return
	}
	if err := e.runCompiler(); err != nil {
		fmt.Fprintf(os.Stderr, "ceval: wasm: keep compiled modules for later grades: %v\n", err)
	}
	e.toKeep, e.keepPyLib = nil, nil
}

func (e *Executor) runCompiler() error {
	w, err := e.startWorkerMode(wire.ModeCompile)
	if err != nil {
		return err
	}
	e.w, e.keeping = w, true
	defer func() {
		if e.w != nil {
			e.w.stop(closeGrace)
		}
		e.w, e.keeping = nil, false
	}()
	ctx, cancel := context.WithTimeout(context.Background(), keepWait)
	defer cancel()
	for _, m := range e.toKeep {
		if err := e.loadModule(ctx, m); err != nil {
			return err
		}
		keptHere[e.keepKey(m)] = time.Now()
	}
	if e.keepPyLib == nil || e.py == nil {
		return nil
	}
	if err := e.loadModule(ctx, e.py); err != nil {
		return err
	}
	if err := e.preparePytestLib(ctx); err != nil {
		return err
	}
	var r wire.ModuleReply
	req := e.keepPyLib
	start := time.Now()
	if err := e.roundTrip(ctx, keepWait, func(w io.Writer) error { return wire.WriteJSON(w, wire.OpCompilePyLib, req) }, wire.OpCompiledPyLib, &r); err != nil {
		return fmt.Errorf("compile pytest's packages: %w", err)
	}
	if r.Err != "" {
		return fmt.Errorf("compile pytest's packages (%v): %s", time.Since(start), r.Err)
	}
	keptHere[e.cacheID()+" pylib "+req.Digest] = time.Now()
	return nil
}

// keepKey names m as loadModule compiles it for this Executor.
func (e *Executor) keepKey(m *taskModule) string {
	return fmt.Sprintf("%s %s/%v", e.cacheID(), m.digest, e.checked(m))
}

// cacheID names the cache directory e uses (its device and inode).
func (e *Executor) cacheID() string {
	var st unix.Stat_t
	if err := unix.Fstat(int(e.cache.Fd()), &st); err != nil {
		return "?"
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}
