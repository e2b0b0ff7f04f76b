package wasm

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"ceval.dev/ceval/wasm/wire"
)

func TestWorkerRunsUnprivilegedWithNoNewPrivsAndNoCapabilities(t *testing.T) {
	e := newExecutor(t, standin, Options{})
	h := e.w.hello
	if !h.NoNewPrivs || h.CapEff|h.CapPrm|h.CapInh|h.CapAmb != 0 || h.EnvCount != 0 {
		t.Errorf("worker handshake %+v: want no_new_privs, no capabilities, no environment", h)
	}
	// Check from outside too, in the kernel's own words.
	status, err := os.ReadFile("/proc/" + strconv.Itoa(e.w.cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		fields[k] = strings.Join(strings.Fields(v), " ")
	}
	for k, want := range map[string]string{
		"NoNewPrivs": "1", "CapEff": "0000000000000000", "CapPrm": "0000000000000000",
		"CapInh": "0000000000000000", "CapAmb": "0000000000000000",
	} {
		if fields[k] != want {
			t.Errorf("worker /proc status %s = %q, want %q", k, fields[k], want)
		}
	}
	// no_new_privs is per thread: every thread of the worker must have it, not only the
	// one that happened to run a prctl.
	threads, _ := filepath.Glob("/proc/" + strconv.Itoa(e.w.cmd.Process.Pid) + "/task/*/status")
	if len(threads) == 0 {
		t.Fatal("no worker threads found")
	}
	for _, th := range threads {
		data, err := os.ReadFile(th)
		if err == nil && !strings.Contains(string(data), "\nNoNewPrivs:\t1\n") {
			t.Errorf("worker thread %s lacks no_new_privs", th)
		}
	}
	if os.Geteuid() == 0 {
		if h.UID != DefaultWorkerUID || h.GID != DefaultWorkerUID || len(h.Groups) != 0 {
			t.Errorf("as root, the worker runs as uid %d gid %d groups %v; want %d, no groups", h.UID, h.GID, h.Groups, DefaultWorkerUID)
		}
		if want := "65534 65534 65534 65534"; fields["Uid"] != want || fields["Gid"] != want || fields["Groups"] != "" {
			t.Errorf("worker /proc status Uid %q Gid %q Groups %q; want all 65534 and no groups", fields["Uid"], fields["Gid"], fields["Groups"])
		}
	} else if h.UID != os.Geteuid() {
		t.Errorf("the worker runs as uid %d, want ours (%d)", h.UID, os.Geteuid())
	}
}

func TestWorkerSysProcAttrDropsToTheWorkerUIDOnlyAsRoot(t *testing.T) {
	a := workerSysProcAttr(65534, 65533, true)
	if a.Credential == nil || a.Credential.Uid != 65534 || a.Credential.Gid != 65533 || a.Credential.Groups == nil || len(a.Credential.Groups) != 0 || a.Credential.NoSetGroups {
		t.Errorf("as root: credential %+v, want 65534:65533 with supplementary groups cleared", a.Credential)
	}
	if !a.Setpgid || a.Pdeathsig != syscall.SIGKILL || len(a.AmbientCaps) != 0 {
		t.Errorf("as root: %+v; want its own process group, killed with ceval, no ambient capabilities", a)
	}
	if a := workerSysProcAttr(1000, 1000, false); a.Credential != nil || !a.Setpgid || a.Pdeathsig != syscall.SIGKILL {
		t.Errorf("not root: %+v; want no credential change", a)
	}
}

func TestWorkerRefusesToRunWithCapabilities(t *testing.T) {
	e := &Executor{asRoot: true, uid: 65534, gid: 65534}
	for _, h := range []wire.Hello{
		{UID: 65534, GID: 65534, NoNewPrivs: true, CapEff: 1},
		{UID: 65534, GID: 65534, NoNewPrivs: true, CapAmb: 1 << 21},
		{UID: 65534, GID: 65534},
		{UID: 0, GID: 0, NoNewPrivs: true},
		{UID: 65534, GID: 65534, NoNewPrivs: true, Groups: []int{0}},
		{UID: 65534, GID: 65534, NoNewPrivs: true, EnvCount: 1},
	} {
		if err := e.checkHello(&h); err == nil {
			t.Errorf("handshake %+v accepted", h)
		}
	}
	if err := e.checkHello(&wire.Hello{UID: 65534, GID: 65534, NoNewPrivs: true}); err != nil {
		t.Errorf("a clean handshake was refused: %v", err)
	}
}

func TestCacheDirWritableByOthersIsRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o770, 0o777, 0o755, 0o702} {
		dir := filepath.Join(t.TempDir(), "cache")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := NewExecutor(Options{CacheDir: dir})
		if err == nil || !strings.Contains(err.Error(), "chmod 0700 "+dir) {
			t.Errorf("mode %04o: err = %v; want a refusal with the chmod fix", mode, err)
		}
	}
}

func TestCacheDirOwnedByAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 4321, 4321); err != nil {
		t.Fatal(err)
	}
	_, err := NewExecutor(Options{CacheDir: dir})
	if err == nil || !strings.Contains(err.Error(), "chown 0 "+dir) {
		t.Errorf("err = %v; want a refusal with the chown fix", err)
	}
}

func TestCacheDirThatIsASymlinkIsRefused(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "cache")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := NewExecutor(Options{CacheDir: link}); err == nil {
		t.Error("a symlinked cache directory was accepted")
	}
}

func TestCacheDirUnderAnOpenAncestorIsRefused(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := NewExecutor(Options{CacheDir: filepath.Join(open, "cache")})
	if err == nil || !strings.Contains(err.Error(), "chmod go-w "+open) {
		t.Errorf("err = %v; want a refusal naming the open ancestor", err)
	}
}

func TestWorkerCacheDirBelongsToTheWorkerAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	e := newExecutor(t, standin, Options{CacheDir: dir})
	var st syscall.Stat_t
	sub := filepath.Join(dir, "worker-"+strconv.Itoa(e.uid))
	if err := syscall.Lstat(sub, &st); err != nil {
		t.Fatal(err)
	}
	if int(st.Uid) != e.uid || st.Mode&0o7777 != 0o700 {
		t.Errorf("%s: uid %d mode %04o; want uid %d mode 0700", sub, st.Uid, st.Mode&0o7777, e.uid)
	}
	if err := syscall.Lstat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		t.Errorf("%s: uid %d mode %04o; want ours and closed to others", dir, st.Uid, st.Mode&0o7777)
	}
	// A grade that missed the cache has the compiler keep what it compiled when the executor
	// closes (a run worker writes nothing), so the next process starts warm.
	if _, score, _ := runScript(t, e, command("echo hi"), workspace(t, nil, nil), nil); score != 1 {
		t.Fatal("run failed")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := filepath.Glob(filepath.Join(sub, "wazero-*", "*"))
	if len(entries) == 0 {
		t.Errorf("no compiled module cached under %s", sub)
	}
}

// TestCacheUnderAnAncestorOwnedByTheOverflowUIDIsRefused: inside a rootless daemon's user
// namespace root's directories read as the overflow UID, but so does any other unmapped user's,
// who could swap the cache: that UID gets no exception, by path or opened beforehand.
func TestCacheUnderAnAncestorOwnedByTheOverflowUIDIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, overflowUID, overflowUID); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(other, "cache")
	if f, err := OpenCacheDir(dir); err == nil || !strings.Contains(err.Error(), "belongs to uid") {
		f.Close()
		t.Fatalf("OpenCacheDir passed an ancestor of uid %d: %v", overflowUID, err)
	}
	if _, err := NewExecutor(Options{CacheDir: dir, noPreload: true}); err == nil || !strings.Contains(err.Error(), "belongs to uid") {
		t.Fatalf("NewExecutor passed an ancestor of uid %d: %v", overflowUID, err)
	}
}

// overflowUID is the kernel's default overflowuid, what unmapped owners read as.
const overflowUID = 65534

// TestCacheOpenedBeforeEnteringIsReachedOnlyThroughItsDescriptor: a cache OpenCacheDir checked
// (before entering a user namespace) is used through its descriptor, whatever its path's
// ancestors read as afterwards (the overflow UID, inside) and whatever the path names by then.
func TestCacheOpenedBeforeEnteringIsReachedOnlyThroughItsDescriptor(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	parent := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "cache")
	f, err := OpenCacheDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// What the namespace shows: the ancestor unmapped, and the path swapped under it.
	if err := os.Chown(parent, overflowUID, overflowUID); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir, dir+".opened"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	e := newExecutor(t, standin, Options{CacheRoot: f})
	worker := "worker-" + strconv.Itoa(e.uid)
	if _, err := os.Lstat(filepath.Join(dir+".opened", worker)); err != nil {
		t.Errorf("the worker's cache is not in the directory opened: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, worker)); err == nil {
		t.Error("the worker's cache went to what the path names now")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(); err != nil {
		t.Errorf("the Executor closed the cache root it was given: %v", err)
	}
}

func TestCacheRootGivenOpenToOthersIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	f, err := OpenCacheDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := NewExecutor(Options{CacheRoot: f, noPreload: true}); err == nil || !strings.Contains(err.Error(), "chmod 0700 "+dir) {
		t.Errorf("err = %v; want a refusal with the chmod fix", err)
	}
}

func TestOpenCacheDirCreatesTheCacheAndChecksItsAncestors(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(open, "a", "cache")
	f, err := OpenCacheDir(dir)
	if err != nil {
		t.Fatalf("a fresh cache: %v", err)
	}
	f.Close()
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v %v; want a directory of mode 0700", dir, fi, err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenCacheDir(dir); err == nil || !strings.Contains(err.Error(), "chmod go-w "+open) {
		f.Close()
		t.Errorf("err = %v; want a refusal naming the open ancestor", err)
	}
}
