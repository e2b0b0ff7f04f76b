package launcher

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The host tools the user namespace needs (util-linux, in every Debian system). A Go
// process cannot make a user namespace owned by another UID itself: unshare(CLONE_NEWUSER)
// refuses a multi-threaded caller, and os/exec clones the namespace before it switches the
// child's UID.
var (
	unshareTool = "/usr/bin/unshare"
	prlimitTool = "/usr/bin/prlimit"
)

// HostTools lists the host programs user namespaces need, for a host check.
func HostTools() []string { return []string{unshareTool, prlimitTool} }

// UserNS is a user namespace made for one container and held open until the container has
// joined it. Its owner is the host UID its own root maps to, not root: the kernel charges
// per-user counts of everything inside a namespace (inotify instances, message-queue bytes)
// also to the namespace's owner in the parent namespace, so a namespace of root's would
// make every run share root's quota.
type UserNS struct {
	HostID   uint32 // host UID and GID of the namespace's ID 0
	Size     uint32 // IDs mapped from 0
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	waitDone chan error
}

// NewUserNS makes a user namespace owned by hostID that maps IDs 0..size-1 (UIDs and GIDs)
// to hostID..hostID+size-1. The namespace lives while its holder process runs: join it
// through Path, then Close.
func NewUserNS(hostID, size uint32) (_ *UserNS, err error) {
	if hostID == 0 || size == 0 || uint64(hostID)+uint64(size) > 1<<32-1 {
		return nil, fmt.Errorf("user namespace: host IDs %d+%d: want a range above 0 and below 2^32-1", hostID, size)
	}
	// The holder runs as hostID from the start, so unshare(1)'s namespace is owned by it;
	// cat echoes one line back once unshare has exec'd it, and then waits for EOF, which
	// also comes when this process dies.
	cmd := exec.Command(unshareTool, "--user", "--", "cat")
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: hostID, Gid: hostID, Groups: []uint32{}},
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("user namespace: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("user namespace: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("user namespace: start %s: %w (install util-linux)", unshareTool, err)
	}
	u := &UserNS{HostID: hostID, Size: size, cmd: cmd, stdin: stdin, waitDone: make(chan error, 1)}
	go func() { u.waitDone <- cmd.Wait() }()
	defer func() {
		if err != nil {
			err = errors.Join(err, u.Close())
		}
	}()
	if _, err := io.WriteString(stdin, "ready\n"); err != nil {
		return nil, fmt.Errorf("user namespace: holder: %w", err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		return nil, fmt.Errorf("user namespace: holder did not start (%v): %s", err, strings.TrimSpace(stderr.String()))
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	m := fmt.Sprintf("0 %d %d\n", hostID, size)
	for _, f := range []string{"uid_map", "gid_map"} {
		if err := os.WriteFile("/proc/"+pid+"/"+f, []byte(m), 0); err != nil {
			return nil, fmt.Errorf("user namespace: write %s: %w", f, err)
		}
	}
	return u, nil
}

// Path is the namespace's /proc path for the spec (linux.namespaces user path).
func (u *UserNS) Path() string { return "/proc/" + strconv.Itoa(u.cmd.Process.Pid) + "/ns/user" }

// Close ends the holder; a container that joined keeps the namespace alive. Idempotent.
func (u *UserNS) Close() error {
	if u == nil || u.stdin == nil {
		return nil
	}
	u.stdin.Close()
	u.stdin = nil
	err := <-u.waitDone
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // cat's status on EOF or SIGKILL says nothing about the namespace
	}
	return err
}

// LowerRlimits sets pid's resource limits to rl, acting as uid:gid, which must be pid's
// own real, effective and saved IDs: a process may change the limits of another with the
// same IDs without any capability, so long as it only lowers them. A container's runc
// needs CAP_SYS_RESOURCE over the run's user namespace for the same, which root lacks when
// its own capability sets do.
func LowerRlimits(pid, uid, gid uint32, rl []specs.POSIXRlimit) error {
	args := []string{"--pid", strconv.FormatUint(uint64(pid), 10)}
	for _, r := range rl {
		flag, ok := prlimitFlags[r.Type]
		if !ok {
			return fmt.Errorf("rlimits of pid %d: %s has no prlimit option", pid, r.Type)
		}
		args = append(args, fmt.Sprintf("--%s=%d:%d", flag, r.Soft, r.Hard))
	}
	cmd := exec.Command(prlimitTool, args...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("rlimits of pid %d: %s: %w: %s", pid, prlimitTool, err, strings.TrimSpace(string(out)))
	}
	return nil
}

var prlimitFlags = map[string]string{
	"RLIMIT_NOFILE":     "nofile",
	"RLIMIT_CORE":       "core",
	"RLIMIT_NPROC":      "nproc",
	"RLIMIT_AS":         "as",
	"RLIMIT_FSIZE":      "fsize",
	"RLIMIT_MSGQUEUE":   "msgqueue",
	"RLIMIT_MEMLOCK":    "memlock",
	"RLIMIT_SIGPENDING": "sigpending",
	"RLIMIT_STACK":      "stack",
	"RLIMIT_CPU":        "cpu",
}
