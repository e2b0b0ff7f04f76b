package wasm

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

// holdsToolbox reports whether e's worker has the embedded toolbox loaded (or is loading
// it: the preload holds e.mu until it is done).
func holdsToolbox(e *Executor) bool { return holdsModule(e, defaultToolbox()) }

// holdsModule reports whether e's worker has m loaded, once any preload is done.
func holdsModule(e *Executor, m *taskModule) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.w.modules {
		if strings.HasPrefix(k, m.digest+"/") {
			return true
		}
	}
	return false
}

// A grade without run_command never pays for the toolbox's load (some 100-200 ms of CPU in a
// fresh process, most of it wazero validating the module); one with it still finds the
// toolbox on first use.
func TestToolboxIsLoadedOnlyWhenACriterionRunsIt(t *testing.T) {
	if !HasToolbox() {
		t.Skip("internal/embedded/toolbox.wasm is not a WebAssembly module")
	}
	path := filepath.Join(t.TempDir(), "check.wasm")
	if err := os.WriteFile(path, standin.data, 0o644); err != nil {
		t.Fatal(err)
	}
	module, err := task.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer module.Close()
	check := &task.Criterion{Type: task.WASMCheck, Spec: &task.WASMSpec{Module: module, ModuleSHA256: standin.digest, Args: []string{"exit", "0"}}}
	s := workspace(t, map[string]string{"a.txt": "x"}, nil)

	for _, lazy := range []bool{true, false} {
		e, err := NewExecutor(Options{CacheDir: testCache, NoToolboxPreload: lazy})
		if err != nil {
			t.Fatal(err)
		}
		if score, details, err := scoreParts(e.Execute(t.Context(), check, s, nil)); err != nil || score != 1 {
			t.Fatalf("wasm criterion: score %v, details %q, err %v", score, details, err)
		}
		if got := holdsToolbox(e); got == lazy {
			t.Errorf("NoToolboxPreload %v: toolbox loaded after a wasm criterion: %v", lazy, got)
		}
		if score, details, err := scoreParts(e.Execute(t.Context(), command("test -f a.txt && jq -n -e true >/dev/null"), s, nil)); err != nil || score != 1 {
			t.Errorf("NoToolboxPreload %v: run_command: score %v, details %q, err %v", lazy, score, details, err)
		}
		if !holdsToolbox(e) {
			t.Errorf("NoToolboxPreload %v: toolbox not loaded after a run_command", lazy)
		}
		e.Close()
	}
}

func TestUsesToolbox(t *testing.T) {
	for _, tt := range []struct {
		c    task.Criterion
		want bool
	}{
		{task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "true"}}, true},
		{task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "true", GraderTier: task.GraderTier{Verifier: &task.Verifier{}}}}, false},
		{task.Criterion{Type: task.WASMCheck, Spec: &task.WASMSpec{}}, false},
		{task.Criterion{Type: task.Pytest, Spec: &task.PytestSpec{}}, false},
		{task.Criterion{Type: task.FileExists, Spec: &task.FileExistsSpec{Path: "a"}}, false},
	} {
		if got := UsesToolbox(&tt.c); got != tt.want {
			t.Errorf("UsesToolbox(%s, verifier %v) = %v, want %v", tt.c.Type, tt.c.Verifier() != nil, got, tt.want)
		}
	}
}

// The worker prunes the compilation cache directories of other wazero versions (each some
// 40-80 MB, which nothing removed) at its start, keeping its own (wasm/worker's
// cacheprune_test.go holds the rules on what it must leave).
func TestWorkerPrunesOtherWazeroVersionsCaches(t *testing.T) {
	testWorkerPrunes(t, nil)
}

// A worker of another UID whose descriptors the compiler (the worker UID) cannot read, as
// a rootless daemon's ceval runs (its worker's UID is mapped from the daemon's user
// namespace) or another user's, cannot reach below this cache directory (mode 0700, the
// worker UID's) either: it does not hold back the prune. Such workers ran beside the tests
// on a shared machine, and every compiler run skipped its prune while one lived (the flake
// of TestWorkerPrunesOtherWazeroVersionsCaches under load).
func TestWorkerPrunesBesideAnotherUIDsWorker(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting a worker of another UID takes root")
	}
	testWorkerPrunes(t, func() {
		dir := t.TempDir()
		other := DefaultWorkerUID - 1
		if err := os.Chown(dir, other, other); err != nil {
			t.Fatal(err)
		}
		held, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		// This test binary as another ceval's worker (TestMain), idle until its stdin closes.
		cmd := &exec.Cmd{
			Path:        "/proc/self/exe",
			Args:        []string{"ceval-wasm-worker", wire.WorkerCommand, "cache"},
			Env:         []string{},
			Dir:         "/",
			ExtraFiles:  []*os.File{held},
			SysProcAttr: workerSysProcAttr(other, other, true),
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
		var h wire.Hello
		if err := wire.ReadReply(bufio.NewReader(stdout), wire.OpHello, &h); err != nil || h.Err != "" || h.UID != other {
			t.Fatalf("the other worker: hello %+v, %v", h, err)
		}
	})
}

// testWorkerPrunes has a grade's compiler prune a stale wazero directory; beside, if not
// nil, is called just before that grade (what it starts runs beside it).
func testWorkerPrunes(t *testing.T, beside func()) {
	cache := filepath.Join(t.TempDir(), "cache")
	// The compiler prunes (run workers write nothing): it runs when a grade compiled a
	// module the cache did not hold.
	grade := func() *Executor {
		e := newExecutor(t, standin, Options{CacheDir: cache})
		runScript(t, e, command("true"), workspace(t, nil, nil), nil)
		e.Close()
		return e
	}
	e := grade()
	workerDir := filepath.Join(cache, "worker-"+strconv.Itoa(e.uid))
	before, err := os.ReadDir(workerDir)
	if err != nil || len(before) != 1 || !strings.HasPrefix(before[0].Name(), "wazero-") {
		t.Fatalf("the worker's cache directory holds %v (%v), want its wazero directory", before, err)
	}
	stale := filepath.Join(workerDir, "wazero-v1.11.0-amd64-linux")
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "075d9068928c10ff"), []byte("code"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stale, filepath.Join(stale, "075d9068928c10ff")} {
		if err := os.Chown(p, e.uid, e.gid); err != nil && os.Geteuid() == 0 {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ceval-kept-*", "*/ceval-kept-*"} { // so that the compiler runs again
		kept, _ := filepath.Glob(filepath.Join(workerDir, before[0].Name(), f))
		for _, k := range kept {
			if err := os.Remove(k); err != nil {
				t.Fatal(err)
			}
		}
	}
	if beside != nil {
		beside()
	}
	grade()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale cache is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(workerDir, before[0].Name())); err != nil {
		t.Errorf("the worker's own cache directory went: %v", err)
	}
}

// An Executor closed while its toolbox preload runs (ceval interrupted during a grade's
// start, as the selftest's SIGINT test did in a clean-clone run) ends the preload: the first
// load, cancelled, stopped the worker, and the preload must not go on to load the second
// toolbox into no worker (it dereferenced the nil worker and crashed ceval). Several rounds:
// the close must land while a load is in flight, which a fresh module's load always is for
// some milliseconds.
func TestCloseDuringTheToolboxPreloadEndsIt(t *testing.T) {
	if !HasToolbox() {
		t.Skip("internal/embedded/toolbox.wasm is not a WebAssembly module")
	}
	for range 5 {
		e, err := NewExecutor(Options{CacheDir: testCache})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A load with no worker is an error, never a crash.
	e, err := NewExecutor(Options{CacheDir: testCache, noPreload: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.mu.Lock()
	w := e.w
	e.w = nil
	err = e.loadModule(t.Context(), defaultToolbox())
	e.w = w
	e.mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "no worker runs") {
		t.Errorf("load with no worker: %v", err)
	}
}
