package worker

// The worker's compilation cache keeps one directory per wazero version (wazero names it
// wazero-VERSION-GOARCH-GOOS under the directory it is given: cache.go's ensuresFileCache),
// each some 40-80 MB of native code, and wazero never removes one. A ceval built against
// another wazero (an upgrade, or a build without module information, whose wazero calls
// itself "dev") leaves the old one behind for good. The worker prunes them, never one another
// ceval may be using right now:
//
//   - every worker of this ceval holds a shared flock on its own version's directory for
//     its whole life (holdCacheDir), and the pruner removes a directory only under an
//     exclusive flock it gets without waiting;
//   - workers of cevals that predate the lock are found by what every ceval's worker has
//     been since the sandbox exists (bb55706): a process whose argv starts
//     "ceval-wasm-worker __wasm-worker" with its cache directory on descriptor 3. While any
//     other such process has this cache directory open, nothing is pruned; one whose
//     descriptor cannot be read counts as using it, unless it exited since (its argv
//     reads empty) or it could not reach below the directory anyway (another UID than
//     the directory's owner, no capability: cannotReach).
//
// What is left is one window, for a pre-lock ceval only: its worker starting between the
// scan and the removal, missing the cache and failing its compile's write into the removed
// directory (an ERROR for that one criterion, never a wrong score: the code it runs is still
// checked and compiled by its own wazero). A worker of this ceval that opens its directory
// while a pruner removes it sees it unlinked once it holds its lock, and makes it anew.

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/wasm/wire"
)

// workerArgv0 and the command after it start every ceval's worker (workerhost.go's startWorker).
const workerArgv0 = "ceval-wasm-worker"

// wazeroCacheDirName is the directory wazero keeps this build's compiled code in, below the
// directory given to NewCompilationCacheWithDir: its version is the build's dependency on
// wazero, else "dev" (wazero's internal/version). TestWazeroCacheDirNameIsWazeros holds it
// to what wazero makes.
func wazeroCacheDirName() string {
	v := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if strings.Contains(dep.Path, "github.com/tetratelabs/wazero") {
				v = dep.Version
			}
		}
		if v == "" || v == "(devel)" {
			v = info.Main.Version
		}
	}
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	return "wazero-" + v + "-" + runtime.GOARCH + "-" + runtime.GOOS
}

// ownCacheDirName is this build's directory below the cache root: wazero's own
// (wazeroCacheDirName) for a released wazero, whose code for a module is the same in every
// build that links it. A build whose wazero calls itself "dev" (a replaced or unreleased
// wazero) is told apart from every other such build by its Go build ID: its directory is
// wazero-dev-build-ID-GOARCH-GOOS, in which wazero makes its own wazero-dev-GOARCH-GOOS.
// Its name starts "wazero-" too, so the pruner removes another build's.
func ownCacheDirName() string {
	name := wazeroCacheDirName()
	if name != "wazero-dev-"+runtime.GOARCH+"-"+runtime.GOOS {
		return name
	}
	return devCacheDirName(buildID())
}

func devCacheDirName(id string) string {
	return "wazero-dev-build-" + id + "-" + runtime.GOARCH + "-" + runtime.GOOS
}

// buildID is a digest of this executable's Go build ID (its ELF note), else of the whole
// executable: either changes with every build.
var buildID = sync.OnceValue(func() string { return buildIDOf("/proc/self/exe") })

// buildIDOf is buildID of the executable at exe.
func buildIDOf(exe string) string {
	h := sha256.New()
	if f, err := elf.Open(exe); err == nil {
		if sec := f.Section(".note.go.buildid"); sec != nil {
			if b, err := sec.Data(); err == nil && len(b) > 0 {
				h.Write(b)
				f.Close()
				return hex.EncodeToString(h.Sum(nil))[:16]
			}
		}
		f.Close()
	}
	if f, err := os.Open(exe); err == nil {
		_, _ = io.Copy(h, f)
		f.Close()
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// openCompilationCache opens wazero's cache in this build's directory below the one open
// on rootFD (ownCacheDirName) and returns it with the shared lock on that directory, which
// the caller keeps open (and so locked) for as long as it may use the cache.
func openCompilationCache(rootFD int) (wazero.CompilationCache, *os.File, error) {
	name := ownCacheDirName()
	dir := "/proc/self/fd/" + strconv.Itoa(rootFD)
	if name != wazeroCacheDirName() {
		dir += "/" + name
	}
	for range 10 {
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, nil, err
		}
		fd, err := unix.Openat(rootFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // a pruner removed it after wazero made sure of it: make it anew
		}
		if err != nil {
			return nil, nil, fmt.Errorf("open %s: %w", name, err)
		}
		if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
			unix.Close(fd)
			return nil, nil, fmt.Errorf("lock %s: %w", name, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if st.Nlink > 0 {
			return c, os.NewFile(uintptr(fd), name), nil
		}
		unix.Close(fd) // a pruner removed it before we held it: make it anew
	}
	return nil, nil, fmt.Errorf("%s was removed under this worker ten times", name)
}

// pruneStaleCaches removes the directories of other wazero versions below rootFD that no
// worker uses (see the top of this file); it reports what it removed and, joined, why it
// left any. A root without this version's own directory is left alone: it is not a cache
// this worker knows.
func pruneStaleCaches(rootFD int) (removed []string, err error) {
	own := ownCacheDirName()
	names, err := readDirNames(rootFD)
	if err != nil {
		return nil, err
	}
	var stale []string
	hasOwn := false
	for _, n := range names {
		switch {
		case n == own:
			hasOwn = true
		case strings.HasPrefix(n, "wazero-"):
			stale = append(stale, n)
		}
	}
	if !hasOwn || len(stale) == 0 {
		return nil, nil
	}
	var errs []error
	for _, n := range stale {
		ok, err := pruneOne(rootFD, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
		}
		if ok {
			removed = append(removed, n)
		}
	}
	return removed, errors.Join(errs...)
}

// errInUse is a stale directory left because a worker may be using it.
var errInUse = errors.New("in use by a running ceval worker; left")

// pruneOne removes the directory name below rootFD under its exclusive lock, unless another
// worker process has rootFD's directory open.
func pruneOne(rootFD int, name string) (bool, error) {
	fd, err := unix.Openat(rootFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, errInUse
		}
		return false, err
	}
	if otherWorkerUses(rootFD) {
		return false, errInUse
	}
	entries, err := readDirNames(fd)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		// wazero writes only files here (KEY and KEY.*.tmp), and the compiler its marks;
		// a dev build's directory holds wazero's own (ownCacheDirName), of files too.
		// Anything else stays, and so does the directory.
		if strings.HasPrefix(e, "wazero-") {
			if err := removeFilesAndDir(fd, e); err != nil {
				return false, err
			}
			continue
		}
		if err := unix.Unlinkat(fd, e, 0); err != nil {
			return false, fmt.Errorf("remove %s: %w", e, err)
		}
	}
	if err := unix.Unlinkat(rootFD, name, unix.AT_REMOVEDIR); err != nil {
		return false, err
	}
	return true, nil
}

// removeFilesAndDir removes the files in the directory name below dirFD, then it.
func removeFilesAndDir(dirFD int, name string) error {
	fd, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer unix.Close(fd)
	entries, err := readDirNames(fd)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := unix.Unlinkat(fd, e, 0); err != nil {
			return fmt.Errorf("remove %s/%s: %w", name, e, err)
		}
	}
	if err := unix.Unlinkat(dirFD, name, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}

// otherWorkerUses reports whether a process other than this one that is a ceval worker has
// the directory open on rootFD as its cache descriptor; one it cannot tell about counts.
func otherWorkerUses(rootFD int) bool {
	var root unix.Stat_t
	if err := unix.Fstat(rootFD, &root); err != nil {
		return true
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err != nil {
			continue // gone, or a kernel thread
		}
		argv := bytes.Split(cmdline, []byte{0})
		if len(argv) < 2 || string(argv[0]) != workerArgv0 || string(argv[1]) != wire.WorkerCommand {
			continue
		}
		argvRead(pid)
		var st unix.Stat_t
		err = unix.Stat("/proc/"+p.Name()+"/fd/"+strconv.Itoa(wire.CacheFD), &st)
		switch {
		case errors.Is(err, unix.ENOENT):
			continue // gone, or a worker without a cache
		case err != nil && !isWorker(p.Name()):
			// It exited since its argv was read: a process whose memory is gone (exiting,
			// or a zombie) has /proc/PID/fd closed to all but root, and its argv reads
			// empty. It runs nothing any more.
			continue
		case err != nil && cannotReach(p.Name(), &root):
			continue
		case err != nil:
			return true
		case st.Dev == root.Dev && st.Ino == root.Ino:
			return true
		}
	}
	return false
}

// argvRead is called in otherWorkerUses with each worker process found, before its
// descriptor is read (a test holds the scan there while the process exits).
var argvRead = func(pid int) {}

// isWorker reports whether /proc/pid's argv is a ceval worker's.
func isWorker(pid string) bool {
	cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
	if err != nil {
		return false
	}
	argv := bytes.Split(cmdline, []byte{0})
	return len(argv) >= 2 && string(argv[0]) == workerArgv0 && string(argv[1]) == wire.WorkerCommand
}

// cannotReach reports whether process pid, whose descriptors this one cannot read, cannot
// reach anything below the directory dir (the cache root, whose owner is this worker's UID)
// either: dir is closed to all but its owner (mode 0700 or less, as openCacheDirs insists),
// none of the process's UIDs (real, effective, saved, filesystem) is the owner, and it
// holds no capability, permitted or effective, to pass over that (as no worker does: the
// host refuses one that holds any). Such a process, a worker of another UID (another
// user's ceval, or a rootless daemon's, whose worker runs as a UID mapped from its user
// namespace), may have the directory open but can open nothing below it.
func cannotReach(pid string, dir *unix.Stat_t) bool {
	if dir.Mode&0o077 != 0 {
		return false
	}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return false
	}
	var uids, capEff, capPrm bool
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		switch k {
		case "Uid":
			if len(f) != 4 {
				return false
			}
			for _, u := range f {
				n, err := strconv.ParseUint(u, 10, 32)
				if err != nil || uint32(n) == dir.Uid {
					return false
				}
			}
			uids = true
		case "CapEff", "CapPrm":
			if len(f) != 1 {
				return false
			}
			n, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil || n != 0 {
				return false
			}
			capEff = capEff || k == "CapEff"
			capPrm = capPrm || k == "CapPrm"
		}
	}
	return uids && capEff && capPrm
}

// readDirNames lists the directory open on fd (without moving fd's own offset).
func readDirNames(fd int) ([]string, error) {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}
