package wasm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/wasm/wire"
)

// cacheWriteProbe, after the run mode, makes the test binary started as a run worker try
// what a guest that escaped wazero would: write the cache that later workers execute.
const cacheWriteProbe = "probe-cache-write"

// probeCacheWrites tries every way to change the cache on descriptor wire.CacheFD and
// prints one line per attempt: "ok WHAT" or "refused WHAT: ERROR". It never returns.
func probeCacheWrites() {
	root := "/proc/self/fd/" + strconv.Itoa(wire.CacheFD)
	try := func(what string, err error) {
		if err != nil {
			fmt.Printf("refused %s: %v\n", what, err)
		} else {
			fmt.Printf("ok %s\n", what)
		}
	}
	try("create a file at the root", os.WriteFile(root+"/planted", []byte("x"), 0o600))
	try("make a directory", os.Mkdir(root+"/planted-dir", 0o700))
	_ = filepath.WalkDir(root+"/", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write([]byte("planted"))
			f.Close()
		}
		try("overwrite "+d.Name(), err)
		try("rename over "+d.Name(), os.Rename(root+"/planted", p))
		try("create beside "+d.Name(), os.WriteFile(p+".new", []byte("x"), 0o600))
		try("remove "+d.Name(), unix.Unlinkat(wire.CacheFD, strings.TrimPrefix(p, root+"/"), 0))
		return nil
	})
	os.Exit(0)
}

// A run worker runs guests over the workspace: were one to escape wazero, nothing it wrote
// to the cache may reach a later grade. So the compiler alone writes the cache, and a run
// worker is started unable to write anything: every write an escaped guest could try on
// the cache it inherits is refused. The cache is used all the same: a module a first grade
// compiled is kept by the compiler, and the next grade's run worker reads it.
func TestRunWorkerCannotWriteTheCacheTheCompilerKeeps(t *testing.T) {
	if landlockABI() < 1 {
		t.Skip("the kernel has no Landlock: run workers get no cache")
	}
	cache := filepath.Join(t.TempDir(), "cache") // made 0700
	s := workspace(t, map[string]string{"a.txt": "hello\n"}, nil)

	first := newExecutor(t, standin, Options{CacheDir: cache})
	if _, score, _ := runScript(t, first, command("cat a.txt"), s, nil); score != 1 {
		t.Fatalf("score %v", score)
	}
	if len(first.toKeep) != 1 {
		t.Fatalf("the first grade's worker compiled %d modules to keep, want the standin", len(first.toKeep))
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	var kept []string
	_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			kept = append(kept, strings.TrimPrefix(p, cache+"/"))
		}
		return nil
	})
	t.Logf("kept: %q", kept)

	second := newExecutor(t, standin, Options{CacheDir: cache})
	second.mu.Lock()
	err := second.loadModule(context.Background(), standin)
	second.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if len(second.toKeep) != 0 {
		t.Fatal("the second grade's run worker compiled the module again: the compiler did not keep it")
	}

	cmd := second.workerCmd(wire.ModeRun, cacheWriteProbe)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	exited := make(chan struct{})
	if err := startWithNoNewPrivs(cmd, exited, second.landlock); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	close(exited)
	if err != nil {
		t.Fatalf("probe: %v: %s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 6 {
		t.Fatalf("the probe tried too little (it found no kept entry?):\n%s", out.String())
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "refused ") {
			t.Errorf("a run worker could change the cache: %s", l)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "worker-"+strconv.Itoa(second.uid), "planted")); err == nil {
		t.Error("the planted file is in the cache")
	}
}

// The grades of one process that missed the cache together (an experiment's first runs)
// keep the module once; a grade that starts after it was kept and misses all the same (the
// entry went) keeps it again.
func TestGradesThatMissedTogetherKeepOnce(t *testing.T) {
	if landlockABI() < 1 {
		t.Skip("the kernel has no Landlock: run workers get no cache")
	}
	cache := filepath.Join(t.TempDir(), "cache")
	s := workspace(t, map[string]string{"a.txt": "hello\n"}, nil)
	grade := func() *Executor {
		e := newExecutor(t, standin, Options{CacheDir: cache})
		if _, score, _ := runScript(t, e, command("cat a.txt"), s, nil); score != 1 {
			t.Fatalf("score %v", score)
		}
		return e
	}
	a, b := grade(), grade()
	key := a.keepKey(standin)
	a.Close()
	first, ok := keptHere[key]
	if !ok {
		t.Fatal("the first grade kept nothing")
	}
	b.Close()
	if !keptHere[key].Equal(first) {
		t.Fatal("the second grade, which missed with the first, kept the module again")
	}
	if c := grade(); len(c.toKeep) != 0 {
		t.Fatalf("a later grade compiled %d modules itself", len(c.toKeep))
	}
	marks, _ := filepath.Glob(filepath.Join(cache, "worker-*", "*", "ceval-kept-*"))
	if len(marks) == 0 {
		t.Fatal("no kept mark")
	}
	for _, m := range marks {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	d := grade()
	if len(d.toKeep) != 1 {
		t.Fatalf("with its mark gone the module was not compiled by the grade (%d to keep)", len(d.toKeep))
	}
	d.Close()
	if !keptHere[key].After(first) {
		t.Fatal("the module whose entry went was not kept again")
	}
}

// An interrupted ceval drops its executor: the compiler does not start (its work is
// bounded by minutes, not by the user's patience), and the next grade keeps instead.
func TestADroppedExecutorKeepsNothing(t *testing.T) {
	if landlockABI() < 1 {
		t.Skip("the kernel has no Landlock: run workers get no cache")
	}
	cache := filepath.Join(t.TempDir(), "cache")
	s := workspace(t, map[string]string{"a.txt": "hello\n"}, nil)
	e := newExecutor(t, standin, Options{CacheDir: cache})
	if _, score, _ := runScript(t, e, command("cat a.txt"), s, nil); score != 1 {
		t.Fatalf("score %v", score)
	}
	if len(e.toKeep) == 0 {
		t.Fatal("the grade compiled nothing itself: nothing to test")
	}
	key := e.keepKey(standin)
	before, hadBefore := keptHere[key]
	if err := e.Drop(); err != nil {
		t.Fatal(err)
	}
	if after, ok := keptHere[key]; ok && (!hadBefore || after.After(before)) {
		t.Fatal("Drop ran the compiler")
	}
	if marks, _ := filepath.Glob(filepath.Join(cache, "worker-*", "*", "ceval-kept-*")); len(marks) != 0 {
		t.Fatalf("Drop kept %v", marks)
	}
}
