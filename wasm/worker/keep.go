package worker

// What the compiler keeps and run workers read (wire.ModeCompile, wire.ModeRun). A run
// worker writes no file (the host starts it under Landlock), so it must never ask wazero
// for a module the cache lacks (wazero would write it, and fail the compile); the compiler
// marks each module it has kept, after wazero wrote it, and a run worker uses the cache
// only for marked modules.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/wasm/wire"
)

// keptName is the mark, in this build's cache directory, of a module the compiler kept
// compiled with the OpModule flags.
func keptName(flags byte, digest string) string {
	return "ceval-kept-" + strconv.Itoa(int(flags)) + "-" + digest
}

// keptModule reports whether the compiler kept the module compiled so.
func (st *workerState) keptModule(flags byte, digest string) bool {
	var s unix.Stat_t
	err := unix.Fstatat(int(st.cacheDir.Fd()), keptName(flags, digest), &s, unix.AT_SYMLINK_NOFOLLOW)
	return err == nil && s.Mode&unix.S_IFMT == unix.S_IFREG
}

// markKept marks the module kept (the compiler only).
func (st *workerState) markKept(flags byte, digest string) error {
	fd, err := unix.Openat(int(st.cacheDir.Fd()), keptName(flags, digest), unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// compileAndKeep is the compiler's compile: always fresh, never from what the cache holds
// (a worker of an older ceval could write it), into a scratch directory of its own below
// the cache root, whose one entry it then renames into this build's wazero directory
// (over any entry of that name) and marks kept.
func (st *workerState) compileAndKeep(ctx context.Context, cfg wazero.RuntimeConfig, wasm []byte, flags byte, digest string) (wazero.Runtime, wazero.CompiledModule, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	scratch := "compile-" + hex.EncodeToString(rnd[:])
	if err := unix.Mkdirat(wire.CacheFD, scratch, 0o700); err != nil {
		return nil, nil, fmt.Errorf("keep the compiled module: %w", err)
	}
	defer removeTree(wire.CacheFD, scratch)
	cache, err := wazero.NewCompilationCacheWithDir("/proc/self/fd/" + strconv.Itoa(wire.CacheFD) + "/" + scratch)
	if err != nil {
		return nil, nil, fmt.Errorf("keep the compiled module: %w", err)
	}
	rt, cm, err := st.compileModule(ctx, cfg.WithCompilationCache(cache), wasm, false)
	if err != nil {
		return nil, nil, err
	}
	keep := func() error {
		from := scratch + "/" + wazeroCacheDirName()
		fromFD, err := unix.Openat(wire.CacheFD, from, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fromFD)
		names, err := readDirNames(fromFD)
		if err != nil {
			return err
		}
		if len(names) != 1 {
			return fmt.Errorf("wazero wrote %d entries for one module, want 1", len(names))
		}
		to := ownCacheDirName()
		if to != wazeroCacheDirName() {
			to += "/" + wazeroCacheDirName()
		}
		toFD, err := unix.Openat(wire.CacheFD, to, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(toFD)
		if err := unix.Renameat(fromFD, names[0], toFD, names[0]); err != nil {
			return err
		}
		return st.markKept(flags, digest)
	}
	if err := keep(); err != nil {
		fmt.Fprintf(os.Stderr, "ceval wasm worker: keep the compiled module: %v\n", err) // only a cache
	}
	return rt, cm, nil
}

// removeTree removes name below dirFD with what it holds (the compiler's scratch).
func removeTree(dirFD int, name string) {
	fd, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	names, _ := readDirNames(fd)
	for _, n := range names {
		if unix.Unlinkat(fd, n, 0) != nil {
			removeTree(fd, n)
		}
	}
	unix.Close(fd)
	_ = unix.Unlinkat(dirFD, name, unix.AT_REMOVEDIR)
}

// compileModule makes a runtime with WASI and ceval's host module and compiles wasm in it,
// through the cache or not.
func (st *workerState) compileModule(ctx context.Context, cfg wazero.RuntimeConfig, wasm []byte, useCache bool) (wazero.Runtime, wazero.CompiledModule, error) {
	if useCache {
		cfg = cfg.WithCompilationCache(st.cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, nil, fmt.Errorf("instantiate WASI: %v", err)
	}
	if err := instantiateHostModule(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, nil, fmt.Errorf("instantiate the ceval host module: %v", err)
	}
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		rt.Close(ctx)
		return nil, nil, fmt.Errorf("compile: %v", err)
	}
	return rt, cm, nil
}

// compileKeptPyLib is the compiler's answer to OpCompilePyLib: pytest's packages compiled
// and kept (compileCeval writes the cache in the compiler only).
func (st *workerState) compileKeptPyLib(req *wire.CompilePyLib) wire.ModuleReply {
	r := wire.ModuleReply{Digest: req.Digest}
	c := st.modules[moduleKey{digest: req.Digest}]
	if c == nil || st.pylib == nil {
		r.Err = "CPython or pytest's packages are not loaded"
		return r
	}
	how, err := st.compilePyLib(c, req.Digest, req.MemoryLimit)
	r.SiteBytecode = how
	if err != nil {
		r.Err = err.Error()
	}
	return r
}
