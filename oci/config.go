package oci

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"ceval.dev/ceval/internal/lazyregexp"
	"ceval.dev/ceval/policy"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Fixed places inside the container.
const (
	WorkspacePath = "/workspace"
	HomePath      = "/home/agent"
	InitPath      = "/.ceval/init"
	TmpPath       = "/tmp"
	ShmPath       = "/dev/shm"
)

// SupervisorFIFOPath is where the init finds the supervisor's FIFO (see Config.SupervisorFIFO).
const SupervisorFIFOPath = "/.ceval/supervisor"

// Hostname is the container's UTS hostname.
const Hostname = "ceval"

// Labels and annotations that tie a container to the ceval run that made it, so a sweeper
// can tell a live run's container from one a crashed or rebooted ceval left behind.
const (
	LabelRunID  = "dev.ceval.run-id"
	LabelPID    = "dev.ceval.pid"
	LabelBootID = "dev.ceval.boot-id"
)

// Defaults applied to zero fields of Config.
const (
	DefaultTmpMB  = 256
	DefaultShmMB  = 64
	DefaultNoFile = 1024
)

// BackstopMargin is how much later than the host's own deadline (Timeout + Grace) the init
// inside the container kills everything: the host acts first, the init only if it could not.
const BackstopMargin = 30 * time.Second

// cpuPeriod is the CFS period in microseconds; the quota is CPUs times it.
const cpuPeriod = 100000

// Config is everything the spec depends on, filled by the supervisor from the task. Zero
// numeric and duration fields take the defaults above; paths are host paths and must be
// absolute.
type Config struct {
	RunID  string // required; container label dev.ceval.run-id (Generate also uses it as container ID)
	PID    int    // ceval's own PID, label dev.ceval.pid; required
	BootID string // the host's boot id, label dev.ceval.boot-id; required (see launcher.BootID)

	Args []string // the agent command, run as the init's child; required
	Env  []string // KEY=VALUE added to HOME, USER and PATH (a same-named key replaces those)

	WorkspaceDir string  // host dir bound read-write at /workspace
	HomeDir      string  // host dir bound read-write at /home/agent
	InitPath     string  // host path of the static init, bound read-only at /.ceval/init
	ExtraMounts  []Mount // more read-only binds
	// Outputs are read-write binds of capped host scratch directories (sandbox.outputs); one
	// at TmpPath replaces the /tmp tmpfs.
	Outputs []Mount

	// SupervisorFIFO is the host path of a FIFO only the supervisor holds open for writing,
	// bound read-only at SupervisorFIFOPath; the init kills everything when it closes, so
	// the agent cannot outlive a killed ceval. Required.
	SupervisorFIFO string

	// WaitForGo makes the init wait for "go\n" on stdin before it starts the agent, so the
	// host can attest the container after the init's execve and before any agent code runs.
	WaitForGo bool

	Timeout time.Duration // the host's deadline for the agent
	Grace   time.Duration // SIGTERM to SIGKILL

	MemoryMB int64   // memory limit; swap is held to the same value (no swap)
	CPUs     float64 // CFS quota in CPUs
	Pids     int64   // pids limit
	TmpMB    int64   // size of the /tmp tmpfs
	ShmMB    int64   // size of the /dev/shm tmpfs

	Network string // policy.NetworkNone ("" too) or policy.NetworkHost

	// UserNS is the container's own user namespace; required. Container UIDs and GIDs
	// 0..IDRangeSize-1 map to HostID..HostID+IDRangeSize-1, a range no other live run and no
	// host account uses, so per-UID kernel quotas are the run's alone.
	UserNS UserNS

	// UID is the process's UID and GID inside the user namespace: 0 means AgentUID (the
	// agent's container); a verifier sets GraderUID, or RootInUserNS.
	UID uint32

	// Cwd is the process's working directory: "" = WorkspacePath (a service names its own).
	Cwd string
	// UserName is USER in the environment: "" = "agent".
	UserName string
	// RootInUserNS runs the process as UID 0 of its user namespace with VerifierRootCaps
	// over RootPath, a writable root filesystem the caller mounted (the image's layers
	// idmapped to the namespace under a capped tmpfs: launcher.MountRootOverlay): root
	// only over what the namespace maps, so only over its own copy. A verifier's, never
	// the agent's. UID is then ignored.
	RootInUserNS bool
	RootPath     string
}

// VerifierRootCaps are the capabilities of a RootInUserNS process, all relative to its
// user namespace: what a package manager needs to install into its root (own and chown
// files, set their modes and file capabilities, drop to a helper user, signal its
// children). Never CAP_SYS_ADMIN (mounts), CAP_MKNOD, CAP_NET_RAW or CAP_NET_ADMIN.
var VerifierRootCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP",
}

// IDRangeSize is how many UIDs (and as many GIDs) a container's user namespace maps: all
// of 0..65535, so every ID an image's files or tools may name exists inside.
const IDRangeSize = 65536

// UserNS is a container's user namespace: the host IDs it maps and the namespace to join.
type UserNS struct {
	// Path is the namespace to join (/proc/PID/ns/user of the process holding it). The
	// caller makes it with the mappings below and an owner of its own, because the kernel
	// charges inotify instances and message-queue bytes of everything inside a namespace to
	// its owner as well: one runc makes would be owned by root, and all runs would share
	// root's quota.
	Path string
	// HostID is the host UID and GID that container ID 0 maps to.
	HostID uint32
}

// Mappings returns the namespace's UID mappings (the GID mappings are the same).
func (u UserNS) Mappings() []specs.LinuxIDMapping {
	return []specs.LinuxIDMapping{{ContainerID: 0, HostID: u.HostID, Size: IDRangeSize}}
}

// HostUID is the host UID of the agent (AgentUID inside); HostGID its host GID.
func (u UserNS) HostUID() uint32 { return u.HostID + policy.AgentUID }

// HostGID is the host GID of the agent (AgentGID inside).
func (u UserNS) HostGID() uint32 { return u.HostID + policy.AgentGID }

// Mount is a read-only bind of a host path into the container.
type Mount struct {
	Source      string // absolute host path
	Destination string // absolute container path
}

var (
	envKey = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*$`)
	idRe   = lazyregexp.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

// withDefaults returns cfg with zero fields set to their defaults.
func (cfg Config) withDefaults() Config {
	if cfg.Timeout == 0 {
		cfg.Timeout = policy.DefaultTimeout
	}
	if cfg.Grace == 0 {
		cfg.Grace = policy.DefaultGrace
	}
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = policy.DefaultMemoryMB
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = policy.DefaultCPUs
	}
	if cfg.Pids == 0 {
		cfg.Pids = policy.DefaultPids
	}
	if cfg.TmpMB == 0 {
		cfg.TmpMB = DefaultTmpMB
	}
	if cfg.ShmMB == 0 {
		cfg.ShmMB = DefaultShmMB
	}
	if cfg.Network == "" {
		cfg.Network = policy.NetworkNone
	}
	if cfg.UID == 0 {
		cfg.UID = policy.AgentUID
	}
	if cfg.Cwd == "" {
		cfg.Cwd = WorkspacePath
	}
	if cfg.UserName == "" {
		cfg.UserName = "agent"
	}
	return cfg
}

// Backstop is the deadline handed to the init: Timeout + Grace + BackstopMargin, after
// defaults.
func (cfg Config) Backstop() time.Duration {
	cfg = cfg.withDefaults()
	return cfg.Timeout + cfg.Grace + BackstopMargin
}

// validate checks a Config that already has its defaults.
func (cfg Config) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if !idRe.MatchString(cfg.RunID) {
		bad("run id %q: want 1-64 of [A-Za-z0-9_.-], starting alphanumeric", cfg.RunID)
	}
	if cfg.PID <= 0 {
		bad("pid %d: want ceval's PID", cfg.PID)
	}
	if cfg.BootID == "" || strings.ContainsAny(cfg.BootID, "\x00\n") {
		bad("boot id %q: want the host's boot id", cfg.BootID)
	}
	if len(cfg.Args) == 0 || cfg.Args[0] == "" {
		bad("args: want a command")
	}
	for i, a := range cfg.Args {
		if strings.ContainsRune(a, 0) {
			bad("args[%d]: contains NUL", i)
		}
	}
	seen := map[string]bool{}
	for i, kv := range cfg.Env {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || !envKey.MatchString(k):
			bad("env[%d] %q: want KEY=VALUE with KEY of [A-Za-z0-9_] not starting with a digit", i, kv)
		case strings.ContainsRune(v, 0):
			bad("env[%d] %s: value contains NUL", i, k)
		case seen[k]:
			bad("env[%d] %s: set twice", i, k)
		}
		seen[k] = true
	}
	for _, p := range []struct{ name, path string }{
		{"workspace dir", cfg.WorkspaceDir},
		{"home dir", cfg.HomeDir},
		{"init path", cfg.InitPath},
		{"supervisor FIFO", cfg.SupervisorFIFO},
	} {
		if err := checkAbs(p.path); err != nil {
			bad("%s: %v", p.name, err)
		}
	}
	if err := checkAbs(cfg.Cwd); err != nil {
		bad("working directory: %v", err)
	}
	if !envKey.MatchString(cfg.UserName) {
		bad("user name %q: want [A-Za-z0-9_]", cfg.UserName)
	}
	for i, m := range cfg.ExtraMounts {
		if err := checkAbs(m.Source); err != nil {
			bad("extra mount %d source: %v", i, err)
		}
		if err := checkAbs(m.Destination); err != nil {
			bad("extra mount %d destination: %v", i, err)
			continue
		}
		if err := checkExtraDestination(m.Destination); err != nil {
			bad("extra mount %d destination: %v", i, err)
		}
	}
	for i, m := range cfg.Outputs {
		if err := checkAbs(m.Source); err != nil {
			bad("output %d source: %v", i, err)
		}
		if err := checkAbs(m.Destination); err != nil {
			bad("output %d destination: %v", i, err)
			continue
		}
		if err := checkOutputDestination(m.Destination); err != nil {
			bad("output %d destination: %v", i, err)
		}
		for _, o := range cfg.Outputs[:i] {
			if o.Destination == m.Destination || within(o.Destination, m.Destination) || within(m.Destination, o.Destination) {
				bad("output %d destination %q: overlaps output %s", i, m.Destination, o.Destination)
			}
		}
		for _, x := range cfg.ExtraMounts {
			if x.Destination == m.Destination || within(x.Destination, m.Destination) || within(m.Destination, x.Destination) {
				bad("output %d destination %q: overlaps the read-only mount %s", i, m.Destination, x.Destination)
			}
		}
	}
	if cfg.Timeout < 0 {
		bad("timeout %s: negative", cfg.Timeout)
	}
	if cfg.Grace < 0 {
		bad("grace %s: negative", cfg.Grace)
	}
	if cfg.MemoryMB < 16 {
		bad("memory %d MiB: want at least 16", cfg.MemoryMB)
	}
	if cfg.CPUs < 0.01 {
		bad("cpus %g: want at least 0.01", cfg.CPUs)
	}
	if cfg.Pids < 8 {
		bad("pids %d: want at least 8", cfg.Pids)
	}
	if cfg.TmpMB < 1 {
		bad("tmp %d MiB: want at least 1", cfg.TmpMB)
	}
	if cfg.ShmMB < 1 {
		bad("shm %d MiB: want at least 1", cfg.ShmMB)
	}
	if err := cfg.UserNS.check(); err != nil {
		bad("user namespace: %v", err)
	}
	switch {
	case cfg.RootInUserNS:
		if err := checkAbs(cfg.RootPath); err != nil {
			bad("root path: %v (root in the user namespace runs over a root filesystem of its own)", err)
		}
	case cfg.RootPath != "":
		bad("root path %s: only for root in the user namespace", cfg.RootPath)
	}
	if cfg.Network != policy.NetworkNone && cfg.Network != policy.NetworkHost {
		bad("network %q: want %q or %q", cfg.Network, policy.NetworkNone, policy.NetworkHost)
	}
	if len(errs) > 0 {
		return fmt.Errorf("sandbox config: %w", errors.Join(errs...))
	}
	return nil
}

// check refuses a range that maps host root or reaches (uid_t)-1, and a path that is not
// absolute.
func (u UserNS) check() error {
	if u.HostID == 0 {
		return errors.New("host ID 0: the container's root would be the host's root; give the run a range of its own")
	}
	if uint64(u.HostID)+IDRangeSize > 1<<32-1 {
		return fmt.Errorf("host IDs %d..%d: past the largest valid ID %d", u.HostID, uint64(u.HostID)+IDRangeSize-1, uint32(1<<32-2))
	}
	if err := checkAbs(u.Path); err != nil {
		return fmt.Errorf("path: %v", err)
	}
	return nil
}

func checkAbs(p string) error {
	if p == "" {
		return errors.New("empty")
	}
	if !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("%q: want an absolute, clean path", p)
	}
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("%q: contains NUL", p)
	}
	return nil
}

// reserved are the container paths the spec itself mounts; an extra mount may neither
// replace, cover nor sit inside one of them.
var reserved = []string{WorkspacePath, HomePath, InitPath, SupervisorFIFOPath, TmpPath, "/proc", "/sys", "/dev", "/run"}

// CevalRunPath is the one extra mount allowed inside /run: the read-only directory holding
// the protected mock server's socket (package mockd).
const CevalRunPath = "/run/ceval"

func checkExtraDestination(dst string) error {
	if dst == CevalRunPath {
		return nil
	}
	if dst == "/" {
		return errors.New(`"/": the rootfs`)
	}
	for _, r := range reserved {
		if dst == r || within(dst, r) || within(r, dst) {
			return fmt.Errorf("%q: overlaps %s", dst, r)
		}
	}
	return nil
}

// checkOutputDestination is checkExtraDestination but for /tmp and below, which an output
// may take.
func checkOutputDestination(dst string) error {
	if dst == "/" {
		return errors.New(`"/": the rootfs`)
	}
	for _, r := range reserved {
		if r == TmpPath && (dst == r || within(dst, r)) {
			continue
		}
		if dst == r || within(dst, r) || within(r, dst) {
			return fmt.Errorf("%q: overlaps %s", dst, r)
		}
	}
	return nil
}

// within reports whether p lies strictly below dir (both clean and absolute, not "/").
func within(p, dir string) bool {
	return strings.HasPrefix(p, dir+"/")
}
