package launcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"ceval.dev/ceval/policy"
	"github.com/containerd/containerd/v2/core/containers"
	ctroci "github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// RootlessAddressEnv names the socket of a rootless containerd (scripts/containerd.sh
// rootless-start prints it); its rootlesskit state is in the "rootlesskit" directory beside it.
const RootlessAddressEnv = "CEVAL_ROOTLESS_ADDRESS"

// nsenterTool joins rootlesskit's namespaces for the steps that need its privileges.
var nsenterTool = "/usr/bin/nsenter"

// ErrNotRootless says the socket has no rootlesskit state beside it: a rootful daemon.
var ErrNotRootless = errors.New("no rootlesskit state beside the socket")

// RootlessDaemon is a containerd that runs inside rootlesskit as this process's user. Its
// shims, FIFOs and mounts live in rootlesskit's user and mount namespaces: the steps that
// need root there (mounting capped scratch filesystems) run through nsenter into them, the
// way nerdctl does, never on the host.
type RootlessDaemon struct {
	Address  string // the daemon's socket
	StateDir string // rootlesskit's --state-dir
	ChildPID int    // rootlesskit's child: its namespaces are the daemon's
}

// DetectRootless reads the rootlesskit state beside address (the layout of
// scripts/containerd.sh rootless-start) and checks that its child runs as this user in a
// user namespace of its own. ErrNotRootless when there is no such state.
func DetectRootless(address string) (*RootlessDaemon, error) {
	state := filepath.Join(filepath.Dir(address), "rootlesskit")
	b, err := os.ReadFile(filepath.Join(state, "child_pid"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotRootless
	}
	if err != nil {
		return nil, fmt.Errorf("rootless containerd at %s: %w", address, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("rootless containerd at %s: %s/child_pid holds %q, not a PID (restart it: scripts/containerd.sh rootless-start)", address, state, b)
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.Itoa(pid), &st); err != nil {
		return nil, fmt.Errorf("rootless containerd at %s: rootlesskit child %d is gone (restart it: scripts/containerd.sh rootless-start): %w", address, pid, err)
	}
	if int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("rootless containerd at %s: rootlesskit child %d runs as UID %d, not as this user (%d): run ceval as that user", address, pid, st.Uid, os.Geteuid())
	}
	own, err1 := os.Readlink("/proc/self/ns/user")
	theirs, err2 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/user")
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("rootless containerd at %s: user namespaces: %w", address, err)
	}
	if own == theirs {
		return nil, fmt.Errorf("rootless containerd at %s: rootlesskit child %d shares this process's user namespace: not a rootlesskit child", address, pid)
	}
	return &RootlessDaemon{Address: address, StateDir: state, ChildPID: pid}, nil
}

// RootlessIDLockDir is where ceval processes driving the rootless daemon at address lock
// their runs' ID slices: beside the socket, shared by every one of them, writable by the user.
func RootlessIDLockDir(address string) string {
	return filepath.Join(filepath.Dir(address), "idslots")
}

// FIFODir is where a client of the daemon must make its task FIFOs: outside /run, which
// rootlesskit copies up (the shim would not find a FIFO in the host's /run).
func (d *RootlessDaemon) FIFODir() string { return filepath.Join(filepath.Dir(d.Address), "fifo") }

// Command runs name inside the daemon's user and mount namespaces, with this process's
// credentials there (root of that namespace: the user's own UID outside).
func (d *RootlessDaemon) Command(name string, args ...string) *exec.Cmd {
	a := append([]string{"-U", "-m", "--preserve-credentials", "-t", strconv.Itoa(d.ChildPID), "--", name}, args...)
	cmd := exec.Command(nsenterTool, a...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Dir = "/"
	return cmd
}

// MountScratch is launcher.MountScratch for a rootless daemon: a tmpfs of sizeMB MiB and at
// most inodes files on dir, its root owned by uid:gid as the daemon's user namespace numbers
// them. It exists only in the daemon's mount namespace (the host sees dir empty), so what
// fills it is read back through Command too. unmount is idempotent.
func (d *RootlessDaemon) MountScratch(dir string, sizeMB, inodes int64, uid, gid int) (unmount func() error, err error) {
	if sizeMB <= 0 || inodes <= 0 {
		return nil, fmt.Errorf("mount scratch on %s: size %d MiB and inodes %d must be positive", dir, sizeMB, inodes)
	}
	opts := fmt.Sprintf("size=%dm,nr_inodes=%d,mode=0700,uid=%d,gid=%d,nosuid,nodev", sizeMB, inodes, uid, gid)
	if out, err := d.Command("mount", "-t", "tmpfs", "-o", opts, "ceval-scratch", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mount scratch on %s in the rootless daemon's namespaces: %w: %s", dir, err, strings.TrimSpace(string(out)))
	}
	done := false
	var uerr error
	return func() error {
		if done {
			return uerr
		}
		done = true
		if out, err := d.Command("umount", dir).CombinedOutput(); err != nil {
			if out2, err2 := d.Command("umount", "-l", dir).CombinedOutput(); err2 != nil {
				uerr = fmt.Errorf("unmount scratch %s: %w: %s; %s", dir, err, strings.TrimSpace(string(out)), strings.TrimSpace(string(out2)))
			}
		}
		return uerr
	}, nil
}

// ErrRootlessLimits says a rootless run would have no mechanism for its limits.
var ErrRootlessLimits = errors.New("rootless: no cgroup subtree is delegated to this user and rlimit-based limits were not allowed")

// RootlessLimits decides how a rootless run's limits hold: by cgroup when a subtree is
// delegated to the user (delegated != ""), else by rlimits only when the user allowed it
// (allowRlimit: --allow-rlimit-limits or the config file, never a task), else not at all:
// ErrRootlessLimits, wrapped with both fixes.
func RootlessLimits(delegated string, allowRlimit bool) (policy.LimitsEnforcedBy, error) {
	switch {
	case delegated != "":
		return policy.RootfulLimits, nil
	case allowRlimit:
		return policy.LimitsEnforcedBy{Pids: policy.EnforcedByRlimitNproc, Memory: policy.EnforcedByRlimitAS, CPU: policy.NotEnforced, Disk: policy.EnforcedByTmpfs}, nil
	}
	return policy.LimitsEnforcedBy{}, fmt.Errorf("%w: ask an admin to run `ceval rootless setup --user %s` once (cgroup limits as rootful), or pass --allow-rlimit-limits (pids by RLIMIT_NPROC, memory per process by RLIMIT_AS, cpu not enforced)", ErrRootlessLimits, currentUser())
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return strconv.Itoa(os.Getuid())
}

// DelegatedCgroupName is the cgroup v1 subtree SetupDelegatedCgroup (`ceval rootless setup`)
// makes for user in every hierarchy.
func DelegatedCgroupName(user string) string { return "ceval-rootless-" + user }

// limitControllers are the hierarchies a delegated subtree must cover for the limits.
var limitControllers = []string{"pids", "memory", "cpu"}

// DelegatedCgroup returns the subtree name when user's subtree exists, writable by this
// process, in every cgroup v1 hierarchy under root (normally /sys/fs/cgroup: runc makes the
// container's cgroup in each one, not only in pids, memory and cpu, which must be there);
// "" and the reason otherwise.
func DelegatedCgroup(root, user string) (name, why string) {
	name = DelegatedCgroupName(user)
	hier := map[string]bool{}
	for _, c := range limitControllers {
		hier[c] = true
	}
	hs, err := v1Hierarchies(root)
	if err != nil {
		return "", err.Error()
	}
	for _, h := range hs {
		hier[h] = true
	}
	for h := range hier {
		d := filepath.Join(root, h, name)
		if err := unix.Access(d, unix.W_OK|unix.X_OK); err != nil {
			return "", fmt.Sprintf("%s: %v", d, err)
		}
	}
	return name, ""
}

// SubordinateIDs returns the first range of user's (or uid's) subordinate IDs in an
// /etc/subuid- or /etc/subgid-format file, and how many per-run slices of slice IDs it holds
// beyond the first slice (rootlesskit maps the first to the daemon's own IDs).
func SubordinateIDs(data []byte, user string, uid int, slice uint32) (start, count uint32, runs int, err error) {
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Split(strings.TrimSpace(line), ":")
		if len(f) != 3 || (f[0] != user && f[0] != strconv.Itoa(uid)) {
			continue
		}
		s, err1 := strconv.ParseUint(f[1], 10, 32)
		n, err2 := strconv.ParseUint(f[2], 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, 0, fmt.Errorf("line %d: %w", i+1, err)
		}
		if n <= uint64(slice) {
			return uint32(s), uint32(n), 0, nil
		}
		return uint32(s), uint32(n), int((n - uint64(slice)) / uint64(slice)), nil
	}
	return 0, 0, 0, fmt.Errorf("no subordinate IDs for %s (run as root once: scripts/containerd.sh rootless-start %s DIR)", user, user)
}

// RlimitNproc is the pids limit as an rlimit: RLIMIT_NPROC counts the processes of the
// agent's UID in the run's own user namespace, so runs with distinct host UIDs do not share it.
func RlimitNproc(pids int64) specs.POSIXRlimit {
	return specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: uint64(pids), Soft: uint64(pids)}
}

// WithRootlessLimits adapts a hardened spec to a rootless runc. With a delegated cgroup
// (delegated != "") the container's cgroup goes under that subtree and every cgroup limit
// stays. Without one, runc refuses any cgroup limit and the default cgroup path, so they are
// removed and pids is held by RLIMIT_NPROC instead (memory by RLIMIT_AS is the init's job:
// runc's own setup needs more address space than an agent's cap). Only with the limits a
// RootlessLimits decision allowed.
func WithRootlessLimits(delegated, id string, pids int64) ctroci.SpecOpts {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		if delegated != "" {
			s.Linux.CgroupsPath = "/" + delegated + "/" + id
			return nil
		}
		if pids <= 0 {
			return fmt.Errorf("rootless limits: pids %d: want a positive limit for RLIMIT_NPROC", pids)
		}
		s.Linux.CgroupsPath = ""
		s.Linux.Resources = nil
		rl := s.Process.Rlimits[:0:0]
		for _, r := range s.Process.Rlimits {
			if r.Type != "RLIMIT_NPROC" {
				rl = append(rl, r)
			}
		}
		s.Process.Rlimits = append(rl, RlimitNproc(pids))
		return nil
	}
}

// rootlessSlice is the ID count of one run's user namespace in rootless mode.
const rootlessSlice = 1 << 16

// RootlessSliceHostID is where run slot's IDs start in the rootless daemon's user namespace:
// rootlesskit maps its IDs 1.. to the user's subordinate range and the first 65536 of them stay
// the daemon's own, so slot k gets IDs (k+1)*65536 .. (k+2)*65536-1 there.
func RootlessSliceHostID(slot int) uint32 { return uint32(slot+1) * rootlessSlice }

// WithRootlessRunIDs gives the container a user namespace of its own that maps its IDs
// 0..65535 to run slot's slice (RootlessSliceHostID), so no two concurrent runs share a host
// UID: RLIMIT_NPROC and the kernel's other per-UID counts are each run's own, and one run's
// agent cannot signal or ptrace another's. runc makes the namespace (it is root in the
// daemon's); the daemon's directory must be traversable by the slice (scripts/containerd.sh
// makes it 0711).
func WithRootlessRunIDs(slot int) ctroci.SpecOpts {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		if slot < 0 {
			return fmt.Errorf("rootless run IDs: slot %d: want 0 or more", slot)
		}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		ns := s.Linux.Namespaces[:0:0]
		for _, n := range s.Linux.Namespaces {
			if n.Type != specs.UserNamespace {
				ns = append(ns, n)
			}
		}
		s.Linux.Namespaces = append(ns, specs.LinuxNamespace{Type: specs.UserNamespace})
		m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: RootlessSliceHostID(slot), Size: rootlessSlice}}
		s.Linux.UIDMappings, s.Linux.GIDMappings = m, m
		return nil
	}
}
