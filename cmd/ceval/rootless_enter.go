package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/internal/idmap"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/wasm"
)

// What ceval passes to itself when it re-executes inside a rootless daemon's namespaces.
const (
	rootlessChildEnv     = "CEVAL_ROOTLESS_CHILD_PID" // rootlesskit's child, whose namespaces it joined
	rootlessUserEnv      = "CEVAL_ROOTLESS_USER"      // the user's name (inside, every name reads as root)
	rootlessDelegatedEnv = "CEVAL_ROOTLESS_DELEGATED" // the delegated cgroup subtree, "" in rlimit mode
	rootlessSlotsEnv     = "CEVAL_ROOTLESS_SLOTS"     // per-run slices of the user's subordinate range
	rootlessWasmFDEnv    = "CEVAL_ROOTLESS_WASM_FD"   // the wasm cache, opened and checked on the host
	rootlessWasmErrEnv   = "CEVAL_ROOTLESS_WASM_ERR"  // else why the host could not open it
	rootlessWdEnv        = "CEVAL_ROOTLESS_WD"        // the working directory, by path
	rootlessGOGCEnv      = "CEVAL_ROOTLESS_GOGC"      // the user's GOGC ("" if unset): GOGC=off covers only the start
)

// rootlessWorkerUID is the WASM worker's UID inside a rootless daemon's user namespace: not
// the overflow UID (65534), which unmapped owners read as there (see wasm.Options).
const rootlessWorkerUID = 65533

// nsenterPath joins rootlesskit's namespaces.
var nsenterPath = "/usr/bin/nsenter"

// inRootless is set once this process runs inside a rootless daemon's namespaces.
var inRootless bool

// errNotRootlessDaemon: a non-root user pointed ceval at a daemon that is not its rootless one.
var errNotRootlessDaemon = errors.New("not root, and the containerd socket is not a rootless containerd of this user")

// enterRootless makes a non-root ceval drive the user's rootless containerd the way nerdctl
// does: it re-executes this same command through nsenter inside the daemon's user and mount
// namespaces (where the user is root: its scratch mounts, the snapshot read, the init's
// install and the listeners in a container's network namespace are the rootful code paths),
// after deciding on the host how the limits hold: by the cgroup subtree root delegated to the
// user, or by rlimits when the user allowed that (allowRlimit), or not at all (refused with
// both fixes). On success it does not return. Inside, it checks that it really is in that
// daemon's user namespace and sets the supervisor's rootless mode. As root it does nothing.
func (g *globalOptions) enterRootless(allowRlimit bool) error {
	if os.Getenv(rootlessChildEnv) != "" {
		return enteredRootless(g.containerdAddress, allowRlimit)
	}
	if os.Geteuid() == 0 {
		return nil
	}
	d, err := launcher.DetectRootless(g.containerdAddress)
	if err != nil {
		return exitWith(exitInfraErr, fmt.Errorf("%w (%s): %v; start yours with scripts/containerd.sh rootless-start USER DIR and export CEVAL_CONTAINERD_ADDRESS=DIR/containerd.sock, or run as root (ceval doctor says what this host has)", errNotRootlessDaemon, g.containerdAddress, err))
	}
	name := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	delegated, _ := launcher.DelegatedCgroup(cgroupRoot, name)
	if _, err := launcher.RootlessLimits(delegated, allowRlimit); err != nil {
		return exitWith(exitInvalid, err)
	}
	subuid, err := os.ReadFile("/etc/subuid")
	if err != nil {
		return exitWith(exitInfraErr, fmt.Errorf("rootless: %w", err))
	}
	_, _, slots, err := launcher.SubordinateIDs(subuid, name, os.Getuid(), oci.IDRangeSize)
	if err == nil && slots < 1 {
		err = errors.New("no per-run slice beyond the daemon's own")
	}
	if err != nil {
		return exitWith(exitInfraErr, fmt.Errorf("rootless: %s's subordinate IDs: %w (as root: scripts/containerd.sh rootless-start %s DIR grows the range)", name, err, name))
	}
	exe, err := os.Executable()
	if err != nil {
		return exitWith(exitInfraErr, fmt.Errorf("rootless: ceval's own path: %w", err))
	}
	// Ours replace any inherited ones (getenv reads the first of duplicates).
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "CEVAL_ROOTLESS_") && !strings.HasPrefix(kv, launcher.RootlessAddressEnv+"=")
	})
	env = append(env,
		rootlessChildEnv+"="+strconv.Itoa(d.ChildPID), rootlessUserEnv+"="+name,
		rootlessDelegatedEnv+"="+delegated, rootlessSlotsEnv+"="+strconv.Itoa(slots))
	// The wasm cache is opened and checked here, where the owners of its ancestors show (in
	// the daemon's user namespace root's /home reads as the overflow UID, as anyone's would),
	// and the inside reaches it only through the descriptor. A failure matters only to a
	// command that grades, so it is passed on, not reported here.
	cache, err := openWasmCache()
	if err == nil {
		_, err = unix.FcntlInt(cache.Fd(), unix.F_SETFD, 0)
	}
	if err == nil {
		env = append(env, rootlessWasmFDEnv+"="+strconv.Itoa(int(cache.Fd())))
	} else {
		env = append(env, rootlessWasmErrEnv+"="+err.Error())
	}
	wd, err := os.Getwd()
	if err != nil {
		return exitWith(exitInfraErr, fmt.Errorf("rootless: working directory: %w", err))
	}
	// Entering a mount namespace moves the working directory to its root, and nsenter's --wd
	// would keep the host's mount of it, unreachable from the namespace's root (getcwd fails
	// ENOENT): the inside changes to it by path.
	env = append(env, rootlessWdEnv+"="+wd)
	env = withStartGCOff(env)
	argv := append([]string{nsenterPath, "-U", "-m", "--preserve-credentials", "-t", strconv.Itoa(d.ChildPID), "--", exe}, os.Args[1:]...)
	err = syscall.Exec(nsenterPath, argv, env)
	runtime.KeepAlive(cache)
	return exitWith(exitInfraErr, fmt.Errorf("rootless: enter the daemon's namespaces with %s: %w", nsenterPath, err))
}

// enteredRootless checks, inside, that this process is root of the user namespace of the
// rootlesskit child the host side named, and sets the supervisor's rootless mode.
func enteredRootless(address string, allowRlimit bool) error {
	if inRootless {
		return nil
	}
	pid, err := strconv.Atoi(os.Getenv(rootlessChildEnv))
	if err != nil || pid <= 0 {
		return exitWith(exitInfraErr, fmt.Errorf("rootless: %s=%q is not a PID", rootlessChildEnv, os.Getenv(rootlessChildEnv)))
	}
	own, err1 := os.Readlink("/proc/self/ns/user")
	theirs, err2 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/user")
	uidMap, err3 := os.ReadFile("/proc/self/uid_map")
	if err := errors.Join(err1, err2, err3); err != nil {
		return exitWith(exitInfraErr, fmt.Errorf("rootless: user namespaces: %w", err))
	}
	if own != theirs || initialUserNS(uidMap) || os.Geteuid() != 0 {
		return exitWith(exitInfraErr, fmt.Errorf("rootless: %s is set but this process (euid %d, %s) is not root of rootlesskit child %d's user namespace (%s): unset it", rootlessChildEnv, os.Geteuid(), own, pid, theirs))
	}
	if rootlessChdirErr != nil {
		return exitWith(exitInfraErr, fmt.Errorf("rootless: the working directory inside the daemon's mount namespace: %w", rootlessChdirErr))
	}
	delegated := os.Getenv(rootlessDelegatedEnv)
	if _, err := launcher.RootlessLimits(delegated, allowRlimit); err != nil {
		return exitWith(exitInvalid, err)
	}
	if delegated != "" {
		// Checked again from inside: runc will create the run's cgroup here.
		if name, why := launcher.DelegatedCgroup(cgroupRoot, os.Getenv(rootlessUserEnv)); name != delegated {
			return exitWith(exitInfraErr, fmt.Errorf("rootless: the delegated cgroup subtree %s is not usable from the daemon's namespaces: %s", delegated, why))
		}
	}
	slots, err := strconv.Atoi(os.Getenv(rootlessSlotsEnv))
	if err != nil {
		return exitWith(exitInfraErr, fmt.Errorf("rootless: %s=%q: %w", rootlessSlotsEnv, os.Getenv(rootlessSlotsEnv), err))
	}
	// The child's maps, read from inside its user namespace, number its IDs as the host does.
	hostUIDs, err1 := readIDMap(fmt.Sprintf("/proc/%d/uid_map", pid))
	hostGIDs, err2 := readIDMap(fmt.Sprintf("/proc/%d/gid_map", pid))
	if err := errors.Join(err1, err2); err != nil {
		return exitWith(exitInfraErr, fmt.Errorf("rootless: the daemon's user namespace: %w", err))
	}
	rl := local.Rootless{Delegated: delegated, Slots: slots, LockDir: launcher.RootlessIDLockDir(address), UIDMap: hostUIDs, GIDMap: hostGIDs}
	if err := local.EnterRootless(rl); err != nil {
		return exitWith(exitInfraErr, err)
	}
	inRootless = true
	return nil
}

// openWasmCache opens the default wasm cache directory, checked (wasm.OpenCacheDir).
func openWasmCache() (*os.File, error) {
	dir, err := wasm.DefaultCacheDir()
	if err != nil {
		return nil, err
	}
	return wasm.OpenCacheDir(dir)
}

// wasmOptions are the WASM sandbox's options for this process: inside a rootless daemon's
// namespaces, the worker's UID is not the overflow UID and the cache is the directory the host
// side opened and checked (or the host's reason it could not).
func wasmOptions(o wasm.Options) (wasm.Options, error) {
	if !inRootless {
		return o, nil
	}
	o.WorkerUID, o.WorkerGID = rootlessWorkerUID, rootlessWorkerUID
	if rootlessWasmCache == nil {
		return o, fmt.Errorf("%s (checked before entering the rootless daemon's namespaces)", rootlessWasmCacheErr)
	}
	o.CacheRoot = rootlessWasmCache
	return o, nil
}

// The wasm cache the host side opened (rootlessInherit takes it), or why there is none.
var (
	rootlessWasmCache    *os.File
	rootlessWasmCacheErr string
)

// rootlessInherit, first thing in a ceval re-executed inside a rootless daemon's namespaces,
// takes the wasm cache's descriptor the host side passed on, closed on exec from here on (the
// WASM worker must get only its own directory), and clears both variables.
func rootlessInherit() {
	if os.Getenv(rootlessChildEnv) == "" {
		return
	}
	fdText, errText := os.Getenv(rootlessWasmFDEnv), os.Getenv(rootlessWasmErrEnv)
	os.Unsetenv(rootlessWasmFDEnv)
	os.Unsetenv(rootlessWasmErrEnv)
	rootlessWasmCacheErr = errText
	if fdText == "" {
		if errText == "" {
			rootlessWasmCacheErr = "wasm cache: not opened on the host (" + rootlessWasmFDEnv + " unset)"
		}
		return
	}
	fd, err := strconv.Atoi(fdText)
	if err == nil && fd > 2 {
		unix.CloseOnExec(fd)
		var st unix.Stat_t
		if err = unix.Fstat(fd, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			err = errors.New("not a directory")
		}
	} else if err == nil {
		err = errors.New("a standard descriptor")
	}
	if err != nil {
		rootlessWasmCacheErr = fmt.Sprintf("wasm cache: %s=%q: %v", rootlessWasmFDEnv, fdText, err)
		return
	}
	name, _ := wasm.DefaultCacheDir()
	rootlessWasmCache = os.NewFile(uintptr(fd), name)
}

// readIDMap parses a /proc/PID/uid_map or gid_map.
func readIDMap(path string) ([]specs.LinuxIDMapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := idmap.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// initialUserNS says whether a uid_map is the initial user namespace's identity map.
func initialUserNS(uidMap []byte) bool {
	f := strings.Fields(string(uidMap))
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

// withStartGCOff gives the re-executed ceval GOGC=off and the user's own GOGC beside it,
// which restoreRootlessGC puts back first thing in main. The re-exec is a second start of this
// binary, and its package initialisation (some 4 MB, a JSON Schema library compiling its
// meta-schemas among it) otherwise runs a whole GC cycle on garbage: measured ~8 ms of a
// rootless run's ~25 ms re-exec on a loaded 2-core host.
func withStartGCOff(env []string) []string {
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") })
	return append(env, "GOGC=off", rootlessGOGCEnv+"="+os.Getenv("GOGC"))
}

// restoreRootlessGC, first thing in a ceval re-executed inside a rootless daemon's namespaces,
// sets the GC and the environment its own children inherit back to the user's GOGC.
func restoreRootlessGC() {
	orig, ok := os.LookupEnv(rootlessGOGCEnv)
	if !ok || os.Getenv(rootlessChildEnv) == "" {
		return
	}
	os.Unsetenv(rootlessGOGCEnv)
	if orig == "" {
		os.Unsetenv("GOGC")
	} else {
		os.Setenv("GOGC", orig)
	}
	debug.SetGCPercent(gcPercent(orig))
}

// gcPercent reads a GOGC value as the Go runtime does: "off", a percentage, else 100.
func gcPercent(v string) int {
	if v == "off" {
		return -1
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n
	}
	return 100
}

// rootlessChdirErr is why rootlessChdir failed; enteredRootless reports it.
var rootlessChdirErr error

// rootlessChdir, first thing in a ceval re-executed inside a rootless daemon's namespaces,
// changes to the working directory the host side had, before any relative path is read.
func rootlessChdir() {
	if os.Getenv(rootlessChildEnv) == "" {
		return
	}
	rootlessChdirErr = os.Chdir(os.Getenv(rootlessWdEnv))
}
