package oci

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"ceval.dev/ceval/policy"
	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	ctroci "github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DefaultPATH is the agent's PATH unless Config.Env sets its own.
const DefaultPATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// generateNamespace is the containerd namespace Generate assumes when ctx names none; it
// only shows in the spec's cgroups path.
const generateNamespace = "ceval"

// SpecOpts validates cfg and returns the options that build the agent container's spec, in
// the order they must apply (seccomp last: containerd derives it from the capability sets).
// They overwrite every field they own, so they do not depend on containerd's defaults.
func SpecOpts(cfg Config) ([]ctroci.SpecOpts, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	user, caps, root := withUser(cfg.UID), withNoCapabilities(), withReadonlyRootfs()
	if cfg.RootInUserNS {
		user, caps, root = withUser(0), withCapabilities(VerifierRootCaps), withWritableRoot(cfg.RootPath)
	}
	return []ctroci.SpecOpts{
		user,
		withEnv(cfg.UserName, cfg.Env),
		withCwd(cfg.Cwd),
		withInitArgs(cfg),
		caps,
		withNoNewPrivileges(),
		withProcMasks(),
		withPidsLimit(cfg.Pids),
		withMemoryNoSwap(cfg.MemoryMB << 20),
		withCPUQuota(cfg.CPUs),
		withRlimits(),
		root,
		withMounts(cfg),
		withNetwork(cfg.Network),
		withCgroupNamespace(),
		withUserNamespace(cfg.UserNS),
		withHostname(Hostname),
		withoutTerminal(),
		withRunAnnotations(cfg),
		withDefaultSeccomp(),
	}, nil
}

// Generate builds the full spec for cfg the way containerd does at container creation,
// with no client: the container ID is cfg.RunID and, when ctx carries no containerd
// namespace, the namespace is "ceval" (both only show in the cgroups path).
func Generate(ctx context.Context, cfg Config) (*specs.Spec, error) {
	opts, err := SpecOpts(cfg)
	if err != nil {
		return nil, err
	}
	if _, ok := namespaces.Namespace(ctx); !ok {
		ctx = namespaces.WithNamespace(ctx, generateNamespace)
	}
	s, err := ctroci.GenerateSpec(ctx, nil, &containers.Container{ID: cfg.RunID}, opts...)
	if err != nil {
		return nil, fmt.Errorf("generate spec for run %s: %w", cfg.RunID, err)
	}
	return s, nil
}

// Labels returns the container labels that tie a container to cfg's run; they equal the
// annotations the spec carries.
func Labels(cfg Config) map[string]string {
	return map[string]string{
		LabelRunID:  cfg.RunID,
		LabelPID:    strconv.Itoa(cfg.PID),
		LabelBootID: cfg.BootID,
	}
}

type specOpt = ctroci.SpecOpts

func ensureProcess(s *specs.Spec) {
	if s.Process == nil {
		s.Process = &specs.Process{}
	}
}

func ensureResources(s *specs.Spec) {
	if s.Linux == nil {
		s.Linux = &specs.Linux{}
	}
	if s.Linux.Resources == nil {
		s.Linux.Resources = &specs.LinuxResources{}
	}
}

// withUser runs the process as uid:uid (AgentUID:AgentGID for the agent, GraderUID for a
// verifier) with no supplementary groups. Unlike containerd's WithUserID it looks nothing
// up, so it cannot fall back to GID 0.
func withUser(uid uint32) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureProcess(s)
		s.Process.User = specs.User{UID: uid, GID: uid}
		return nil
	}
}

// withEnv sets the whole environment: HOME, USER, PATH, then extra (a same-named key
// replaces the base value in place). Nothing comes from the host or the image.
func withEnv(user string, extra []string) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureProcess(s)
		env := []string{"HOME=" + HomePath, "USER=" + user, "PATH=" + DefaultPATH}
		for _, kv := range extra {
			k, _, _ := strings.Cut(kv, "=")
			i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
			if i >= 0 {
				env[i] = kv
			} else {
				env = append(env, kv)
			}
		}
		s.Process.Env = env
		return nil
	}
}

func withCwd(dir string) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureProcess(s)
		s.Process.Cwd = dir
		return nil
	}
}

// withInitArgs makes the static init PID 1, with the agent command as its child, a backstop
// deadline later than the host's, and the supervisor's FIFO to watch.
func withInitArgs(cfg Config) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureProcess(s)
		args := []string{InitPath, "--timeout", cfg.Backstop().String(), "--grace", cfg.Grace.String(),
			"--supervisor-fifo", SupervisorFIFOPath}
		if cfg.WaitForGo {
			args = append(args, "--wait-go")
		}
		args = append(args, "--")
		s.Process.Args = append(args, cfg.Args...)
		return nil
	}
}

// withNoCapabilities empties all five capability sets. containerd's WithCapabilities(nil)
// leaves the ambient set alone.
func withNoCapabilities() specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureProcess(s)
		s.Process.Capabilities = &specs.LinuxCapabilities{
			Bounding:    []string{},
			Effective:   []string{},
			Permitted:   []string{},
			Inheritable: []string{},
			Ambient:     []string{},
		}
		return nil
	}
}

// withCapabilities gives the bounding, permitted and effective sets caps; inheritable and
// ambient stay empty, so nothing the process execs gains a capability it did not have.
func withCapabilities(caps []string) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureProcess(s)
		c := func() []string { return append([]string{}, caps...) }
		s.Process.Capabilities = &specs.LinuxCapabilities{
			Bounding: c(), Effective: c(), Permitted: c(), Inheritable: []string{}, Ambient: []string{},
		}
		return nil
	}
}

func withNoNewPrivileges() specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureProcess(s)
		s.Process.NoNewPrivileges = true
		return nil
	}
}

// maskedPaths and readonlyPaths are containerd's defaults (runc masks a path the host
// lacks by skipping it).
var (
	maskedPaths = []string{
		"/proc/acpi",
		"/proc/asound",
		"/proc/interrupts",
		"/proc/kcore",
		"/proc/keys",
		"/proc/latency_stats",
		"/proc/timer_list",
		"/proc/timer_stats",
		"/proc/sched_debug",
		"/sys/firmware",
		"/sys/devices/virtual/powercap",
		"/proc/scsi",
	}
	readonlyPaths = []string{
		"/proc/bus",
		"/proc/fs",
		"/proc/irq",
		"/proc/sys",
		"/proc/sysrq-trigger",
	}
)

// withProcMasks makes sure the default masked and read-only paths are in the spec; it keeps
// any host-specific ones containerd added (its per-CPU thermal_throttle masks).
func withProcMasks() specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		s.Linux.MaskedPaths = union(maskedPaths, s.Linux.MaskedPaths)
		s.Linux.ReadonlyPaths = union(readonlyPaths, s.Linux.ReadonlyPaths)
		return nil
	}
}

func union(base, more []string) []string {
	out := slices.Clone(base)
	for _, p := range more {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func withPidsLimit(n int64) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureResources(s)
		s.Linux.Resources.Pids = &specs.LinuxPids{Limit: &n}
		return nil
	}
}

// withMemoryNoSwap caps memory at bytes and memory+swap at the same value, so a memory
// bomb is killed rather than swapped out.
func withMemoryNoSwap(bytes int64) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureResources(s)
		limit, swap := bytes, bytes
		s.Linux.Resources.Memory = &specs.LinuxMemory{Limit: &limit, Swap: &swap}
		return nil
	}
}

func withCPUQuota(cpus float64) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureResources(s)
		quota := int64(cpus * cpuPeriod)
		period := uint64(cpuPeriod)
		s.Linux.Resources.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
		return nil
	}
}

// Rlimits are the agent's resource limits: exactly RLIMIT_NOFILE and RLIMIT_CORE. Never
// RLIMIT_NPROC: the pids cgroup limit holds fork bombs. The spec carries none: runc sets a
// spec's rlimits with prlimit from outside the container, which needs CAP_SYS_RESOURCE over
// the run's user namespace, and root has it there only through its own capability sets
// (the namespace is not root's; see UserNS.Path). The launcher lowers them before the
// container starts, as the container's own host UID, which needs no capability.
func Rlimits() []specs.POSIXRlimit {
	return []specs.POSIXRlimit{
		{Type: "RLIMIT_NOFILE", Hard: DefaultNoFile, Soft: DefaultNoFile},
		{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
	}
}

// withRlimits leaves the spec without rlimits (see Rlimits); containerd's default spec
// has one.
func withRlimits() specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureProcess(s)
		s.Process.Rlimits = nil
		return nil
	}
}

// withUserNamespace joins the run's own user namespace, mapping container IDs 0..65535 to
// the run's host range. The mappings are in the spec too: runc needs them to know the host
// IDs of the container's root, and they must equal the namespace's own (the attestation
// checks the live ones).
func withUserNamespace(u UserNS) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		ns := slices.DeleteFunc(slices.Clone(s.Linux.Namespaces), func(n specs.LinuxNamespace) bool {
			return n.Type == specs.UserNamespace
		})
		s.Linux.Namespaces = append(ns, specs.LinuxNamespace{Type: specs.UserNamespace, Path: u.Path})
		s.Linux.UIDMappings = u.Mappings()
		s.Linux.GIDMappings = u.Mappings()
		return nil
	}
}

func withReadonlyRootfs() specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Root == nil {
			s.Root = &specs.Root{Path: "rootfs"}
		}
		s.Root.Readonly = true
		return nil
	}
}

// withWritableRoot roots the container at path (absolute: a root filesystem the caller
// mounted, not a containerd snapshot), writable.
func withWritableRoot(path string) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		s.Root = &specs.Root{Path: path}
		return nil
	}
}

// withMounts sets the whole mount table: the kernel filesystems (sysfs read-only), the
// capped tmpfs /tmp and /dev/shm, the read-write workspace and home binds, the read-only
// init and extra binds. Nothing else in the container is writable by the agent: /dev and
// /run are root's, mode 755. With the host's network, /sys is the host's, bound read-only.
func withMounts(cfg Config) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		mounts := []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
			{Destination: ShmPath, Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", fmt.Sprintf("size=%dm", cfg.ShmMB)}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: "/run", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: TmpPath, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", fmt.Sprintf("size=%dm", cfg.TmpMB)}},
			{Destination: WorkspacePath, Type: "bind", Source: cfg.WorkspaceDir, Options: []string{"bind", "rw", "nosuid", "nodev"}},
			{Destination: HomePath, Type: "bind", Source: cfg.HomeDir, Options: []string{"bind", "rw", "nosuid", "nodev"}},
			{Destination: InitPath, Type: "bind", Source: cfg.InitPath, Options: []string{"bind", "ro", "nosuid", "nodev"}},
			{Destination: SupervisorFIFOPath, Type: "bind", Source: cfg.SupervisorFIFO, Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}},
		}
		if cfg.Network == policy.NetworkHost {
			// A sysfs mount needs a network namespace the container's user namespace owns;
			// the host's is not. The host's /sys, read-only, as a user-namespaced Docker does.
			i := slices.IndexFunc(mounts, func(m specs.Mount) bool { return m.Destination == "/sys" })
			mounts[i] = specs.Mount{Destination: "/sys", Type: "bind", Source: "/sys", Options: []string{"rbind", "nosuid", "noexec", "nodev", "ro"}}
		}
		for _, m := range cfg.ExtraMounts {
			mounts = append(mounts, specs.Mount{Destination: m.Destination, Type: "bind", Source: m.Source, Options: []string{"bind", "ro", "nosuid", "nodev"}})
		}
		for _, m := range cfg.Outputs {
			out := specs.Mount{Destination: m.Destination, Type: "bind", Source: m.Source, Options: []string{"bind", "rw", "nosuid", "nodev"}}
			if i := slices.IndexFunc(mounts, func(x specs.Mount) bool { return x.Destination == m.Destination }); i >= 0 {
				mounts[i] = out // /tmp: the output's capped scratch instead of the tmpfs
				continue
			}
			mounts = append(mounts, out)
		}
		s.Mounts = mounts
		return nil
	}
}

// withNetwork gives the container a network namespace of its own (loopback only) for
// NetworkNone, or none (the host's) for NetworkHost.
func withNetwork(mode string) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		ns := slices.DeleteFunc(slices.Clone(s.Linux.Namespaces), func(n specs.LinuxNamespace) bool {
			return n.Type == specs.NetworkNamespace
		})
		switch mode {
		case policy.NetworkNone:
			ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace})
		case policy.NetworkHost:
		default:
			return fmt.Errorf("network %q: want %q or %q", mode, policy.NetworkNone, policy.NetworkHost)
		}
		s.Linux.Namespaces = ns
		return nil
	}
}

// withCgroupNamespace gives the container a cgroup namespace of its own: the agent sees its
// cgroup as "/" in /proc/self/cgroup, not the host's hierarchy with the run's ID in it. The
// host still reads the real path from /proc/<pid>/cgroup (attestation, metrics).
func withCgroupNamespace() specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if !slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.CgroupNamespace }) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.CgroupNamespace})
		}
		return nil
	}
}

// withHostname sets the hostname in a UTS namespace of the container's own.
func withHostname(name string) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if !slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.UTSNamespace }) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UTSNamespace})
		}
		s.Hostname = name
		return nil
	}
}

func withoutTerminal() specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		ensureProcess(s)
		s.Process.Terminal = false
		s.Process.ConsoleSize = nil
		return nil
	}
}

// withRunAnnotations adds the run's labels as spec annotations.
func withRunAnnotations(cfg Config) specOpt {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		for k, v := range Labels(cfg) {
			s.Annotations[k] = v
		}
		return nil
	}
}

// withDefaultSeccomp applies containerd's default seccomp profile. It must follow
// withNoCapabilities: the profile allows extra syscalls for capabilities in the bounding set.
func withDefaultSeccomp() specOpt {
	inner := seccomp.WithDefaultProfile()
	return func(ctx context.Context, c ctroci.Client, ctr *containers.Container, s *specs.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		ensureProcess(s)
		if s.Process.Capabilities == nil {
			s.Process.Capabilities = &specs.LinuxCapabilities{}
		}
		return inner(ctx, c, ctr, s)
	}
}
