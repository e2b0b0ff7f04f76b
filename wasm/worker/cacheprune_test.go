package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/wasm/wire"
)

// TestMain lets the test binary stand in for another ceval's worker process: started with
// CEVAL_TEST_FAKE_WORKER=1, it holds what it inherited until its stdin closes.
func TestMain(m *testing.M) {
	if os.Getenv("CEVAL_TEST_FAKE_WORKER") == "1" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if pid := os.Getenv("CEVAL_TEST_PRUNER_HOLD"); pid != "" {
		prunerHolding(pid) // cacheprune_exit_test.go
	}
	os.Exit(m.Run())
}

// TestWazeroCacheDirNameIsWazeros: the directory the pruner spares is the one wazero itself
// makes for this build (a wrong name would have the worker prune its own cache on every start).
func TestWazeroCacheDirNameIsWazeros(t *testing.T) {
	dir := t.TempDir()
	if _, err := wazero.NewCompilationCacheWithDir(dir); err != nil {
		t.Fatal(err)
	}
	names := dirNames(t, dir)
	if !slices.Equal(names, []string{wazeroCacheDirName()}) {
		t.Fatalf("wazero made %v; wazeroCacheDirName says %q", names, wazeroCacheDirName())
	}
}

// cacheRoot makes a worker cache directory holding this version's directory, three other
// versions' (as an older ceval, a build without module information and another dev build
// leave them) and the
// Python bytecode caches, each with a file; it returns the directory and a descriptor on it.
func cacheRoot(t *testing.T) (string, int, []string) {
	t.Helper()
	dir := t.TempDir()
	stale := []string{"wazero-v1.11.0-amd64-linux", "wazero-dev-amd64-linux"}
	if ownCacheDirName() == stale[1] {
		stale[1] = "wazero-v1.12.0-amd64-linux"
	}
	for _, d := range append([]string{ownCacheDirName()}, stale...) {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"075d9068928c10ff", "075d9068928c10ff.123.tmp"} {
			if err := os.WriteFile(filepath.Join(dir, d, f), []byte("code"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Another dev build's directory, holding wazero's own (ownCacheDirName).
	otherDev := "wazero-dev-build-0123456789abcdef-amd64-linux"
	if err := os.MkdirAll(filepath.Join(dir, otherDev, "wazero-dev-amd64-linux"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ceval-kept-1-abc", "wazero-dev-amd64-linux/075d9068928c10ff"} {
		if err := os.WriteFile(filepath.Join(dir, otherDev, f), []byte("code"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stale = append(stale, otherDev)
	for _, f := range []string{"pytest-pyc-4399c583", "site-pyc-01f60761"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("pyc"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return dir, fd, stale
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestPruneRemovesOnlyOtherVersionsDirectories(t *testing.T) {
	dir, fd, stale := cacheRoot(t)
	removed, err := pruneStaleCaches(fd)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	slices.Sort(stale)
	if !slices.Equal(removed, stale) {
		t.Errorf("removed %v, want %v", removed, stale)
	}
	want := []string{"pytest-pyc-4399c583", "site-pyc-01f60761", ownCacheDirName()}
	slices.Sort(want)
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
	if got := dirNames(t, filepath.Join(dir, ownCacheDirName())); len(got) != 2 {
		t.Errorf("this version's directory holds %v, want its two files", got)
	}
}

// A root without this version's directory is no cache the worker knows: nothing goes.
func TestPruneLeavesARootWithoutItsOwnDirectory(t *testing.T) {
	dir, fd, _ := cacheRoot(t)
	if err := os.RemoveAll(filepath.Join(dir, ownCacheDirName())); err != nil {
		t.Fatal(err)
	}
	before := dirNames(t, dir)
	if removed, err := pruneStaleCaches(fd); err != nil || len(removed) != 0 {
		t.Fatalf("removed %v (err %v) from a root without %s", removed, err, ownCacheDirName())
	}
	if got := dirNames(t, dir); !slices.Equal(got, before) {
		t.Errorf("left %v, want %v", got, before)
	}
}

// A worker of another ceval version that holds its directory's shared lock keeps it.
func TestPruneLeavesADirectoryAWorkerHolds(t *testing.T) {
	dir, fd, stale := cacheRoot(t)
	held, err := os.Open(filepath.Join(dir, stale[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	removed, err := pruneStaleCaches(fd)
	if !errors.Is(err, errInUse) || slices.Contains(removed, stale[0]) || !slices.Contains(removed, stale[1]) {
		t.Fatalf("removed %v, err %v; want %s left as in use and %s removed", removed, err, stale[0], stale[1])
	}
	if got := dirNames(t, filepath.Join(dir, stale[0])); len(got) != 2 {
		t.Errorf("the held directory holds %v, want its two files", got)
	}
	held.Close() // its worker ended: the next pruning takes it
	if removed, err := pruneStaleCaches(fd); err != nil || !slices.Equal(removed, stale[:1]) {
		t.Errorf("after the holder ended: removed %v, err %v; want %v", removed, err, stale[:1])
	}
}

// While a worker of a ceval that takes no lock (every ceval before this one) has the cache
// directory open, nothing is pruned: it may be using any version's directory.
func TestPruneLeavesEverythingWhileAnotherWorkerHasTheCache(t *testing.T) {
	dir, fd, stale := cacheRoot(t)
	root, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{
		Path:       self,
		Args:       []string{workerArgv0, wire.WorkerCommand, "cache"}, // as startWorker starts one
		Env:        []string{"CEVAL_TEST_FAKE_WORKER=1"},
		ExtraFiles: []*os.File{root}, // descriptor 3, as wire.CacheFD
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	waitFor(t, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		return strings.HasPrefix(string(b), workerArgv0+"\x00")
	})
	removed, err := pruneStaleCaches(fd)
	if len(removed) != 0 || !errors.Is(err, errInUse) {
		t.Fatalf("removed %v, err %v while another worker had the cache open", removed, err)
	}
	stdin.Close()
	_ = cmd.Wait()
	if removed, err := pruneStaleCaches(fd); err != nil || len(removed) != len(stale) {
		t.Errorf("after that worker ended: removed %v, err %v; want %v", removed, err, stale)
	}
}

// A worker that opens its directory while a pruner (another version's worker) removes it
// makes it anew rather than keep a directory no longer linked, where wazero's writes fail.
func TestWorkerMakesItsDirectoryAnewWhenPrunedUnderIt(t *testing.T) {
	dir, fd, _ := cacheRoot(t)
	own := filepath.Join(dir, ownCacheDirName())
	pruner, err := os.Open(own)
	if err != nil {
		t.Fatal(err)
	}
	defer pruner.Close()
	if err := unix.Flock(int(pruner.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(pruner.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	type opened struct {
		held *os.File
		err  error
	}
	done := make(chan opened, 1)
	go func() {
		_, held, err := openCompilationCache(fd)
		done <- opened{held, err}
	}()
	// Once the worker waits for its lock, remove the directory under the exclusive one.
	waitFor(t, func() bool {
		b, _ := os.ReadFile("/proc/locks")
		for _, l := range strings.Split(string(b), "\n") {
			// "1: -> FLOCK  ADVISORY  READ 1235 08:01:5678 0 EOF": a lock waited for.
			if f := strings.Fields(l); len(f) > 6 && f[1] == "->" && strings.HasSuffix(f[6], fmt.Sprintf(":%d", st.Ino)) {
				return true
			}
		}
		return false
	})
	if err := os.RemoveAll(own); err != nil {
		t.Fatal(err)
	}
	pruner.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.held.Close()
	var got unix.Stat_t
	if err := unix.Fstat(int(r.held.Fd()), &got); err != nil {
		t.Fatal(err)
	}
	if got.Nlink == 0 {
		t.Fatal("the worker kept the removed directory")
	}
	if _, err := os.Stat(own); err != nil {
		t.Fatalf("the directory was not made anew: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// A build whose wazero is unversioned ("dev") keeps its code apart from every other such
// build: its directory is named by its Go build ID, which differs between two builds.
func TestDevBuildsDoNotShareACacheDirectory(t *testing.T) {
	dir := t.TempDir()
	ids := map[string]bool{}
	for i, body := range []string{"println(1)", "println(2)"} {
		src := filepath.Join(dir, fmt.Sprint(i))
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\nfunc main() { "+body+" }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		build := exec.Command("go", "build", "-o", "bin", ".")
		build.Dir = src
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		id := buildIDOf(filepath.Join(src, "bin"))
		if id != buildIDOf(filepath.Join(src, "bin")) {
			t.Fatal("a build's ID changes between reads")
		}
		ids[id] = true
	}
	if len(ids) != 2 {
		t.Fatalf("two builds have one cache key: %v", ids)
	}
	if got := devCacheDirName(buildID()); got == "wazero-dev-"+runtime.GOARCH+"-"+runtime.GOOS || !strings.Contains(got, buildID()) || !strings.HasPrefix(got, "wazero-") {
		t.Fatalf("a dev build's directory is %q", got)
	}
}
