package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/policy"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	ctroci "github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

var update = flag.Bool("update", false, "rewrite testdata/*.spec.json from the current code")

// reference is the golden file's config: every default, fixed paths and IDs.
func reference() Config {
	return Config{
		RunID:          "hello",
		PID:            4242,
		BootID:         "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
		Args:           []string{"sh", "-c", "echo hello"},
		WorkspaceDir:   "/var/lib/ceval/runs/hello/workspace",
		HomeDir:        "/var/lib/ceval/runs/hello/home",
		InitPath:       "/var/lib/ceval/bin/ceval-init",
		SupervisorFIFO: "/var/lib/ceval/runs/hello/supervisor",
		UserNS:         UserNS{Path: "/proc/4343/ns/user", HostID: 1 << 31},
	}
}

// baseSpec is containerd's default spec, the one every option is applied on.
func baseSpec(t *testing.T) *specs.Spec {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), "ceval")
	s, err := ctroci.GenerateSpec(ctx, nil, &containers.Container{ID: "base"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func apply(t *testing.T, s *specs.Spec, opt ctroci.SpecOpts) {
	t.Helper()
	if err := opt(context.Background(), nil, &containers.Container{ID: "base"}, s); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

func generate(t *testing.T, cfg Config) *specs.Spec {
	t.Helper()
	s, err := Generate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mountAt(s *specs.Spec, dst string) *specs.Mount {
	for i := range s.Mounts {
		if s.Mounts[i].Destination == dst {
			return &s.Mounts[i]
		}
	}
	return nil
}

func hasNamespace(s *specs.Spec, typ specs.LinuxNamespaceType) bool {
	return slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == typ })
}

// TestEachOptionSetsItsKnob applies every option alone on containerd's default spec, made
// as hostile as the base allows, and checks the one field it owns.
func TestEachOptionSetsItsKnob(t *testing.T) {
	cfg := reference().withDefaults()
	cfg.Env = []string{"FOO=bar", "PATH=/opt/agent/bin:/usr/bin"}
	cfg.ExtraMounts = []Mount{{Source: "/srv/ref", Destination: "/opt/ref"}}
	tests := []struct {
		name  string
		prep  func(*specs.Spec)
		opt   ctroci.SpecOpts
		check func(*testing.T, *specs.Spec)
	}{
		{
			name: "user is 2000:2000 with no supplementary groups",
			prep: func(s *specs.Spec) { s.Process.User = specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0, 27}} },
			opt:  withUser(policy.AgentUID),
			check: func(t *testing.T, s *specs.Spec) {
				u := s.Process.User
				if u.UID != 2000 || u.GID != 2000 || len(u.AdditionalGids) != 0 || u.Username != "" {
					t.Errorf("user = %+v", u)
				}
			},
		},
		{
			name: "a verifier's user is the grader's 3000:3000, not the agent's",
			prep: func(s *specs.Spec) { s.Process.User = specs.User{UID: 2000, GID: 2000, AdditionalGids: []uint32{2000}} },
			opt:  withUser(policy.GraderUID),
			check: func(t *testing.T, s *specs.Spec) {
				u := s.Process.User
				if u.UID != 3000 || u.GID != 3000 || len(u.AdditionalGids) != 0 {
					t.Errorf("user = %+v", u)
				}
			},
		},
		{
			name: "env is HOME USER PATH plus the config's, image and base env dropped",
			prep: func(s *specs.Spec) { s.Process.Env = []string{"PATH=/evil", "LD_PRELOAD=/x.so"} },
			opt:  withEnv("agent", cfg.Env),
			check: func(t *testing.T, s *specs.Spec) {
				want := []string{"HOME=/home/agent", "USER=agent", "PATH=/opt/agent/bin:/usr/bin", "FOO=bar"}
				if !slices.Equal(s.Process.Env, want) {
					t.Errorf("env = %q, want %q", s.Process.Env, want)
				}
			},
		},
		{
			name: "a service's USER is its own",
			opt:  withEnv("service", nil),
			check: func(t *testing.T, s *specs.Spec) {
				if !slices.Contains(s.Process.Env, "USER=service") || slices.Contains(s.Process.Env, "USER=agent") {
					t.Errorf("env = %q", s.Process.Env)
				}
			},
		},
		{
			name: "cwd is the workspace",
			opt:  withCwd(WorkspacePath),
			check: func(t *testing.T, s *specs.Spec) {
				if s.Process.Cwd != "/workspace" {
					t.Errorf("cwd = %q", s.Process.Cwd)
				}
			},
		},
		{
			name: "args run the agent under the init with a later backstop, watching the supervisor's FIFO",
			opt:  withInitArgs(cfg),
			check: func(t *testing.T, s *specs.Spec) {
				want := []string{"/.ceval/init", "--timeout", "30m40s", "--grace", "10s", "--supervisor-fifo", "/.ceval/supervisor", "--", "sh", "-c", "echo hello"}
				if !slices.Equal(s.Process.Args, want) {
					t.Errorf("args = %q, want %q", s.Process.Args, want)
				}
			},
		},
		{
			name: "WaitForGo makes the init wait for the host's go-ahead",
			opt:  withInitArgs(func() Config { c := cfg; c.WaitForGo = true; return c }()),
			check: func(t *testing.T, s *specs.Spec) {
				want := []string{"/.ceval/init", "--timeout", "30m40s", "--grace", "10s", "--supervisor-fifo", "/.ceval/supervisor", "--wait-go", "--", "sh", "-c", "echo hello"}
				if !slices.Equal(s.Process.Args, want) {
					t.Errorf("args = %q, want %q", s.Process.Args, want)
				}
			},
		},
		{
			name: "all five capability sets are empty, ambient included",
			prep: func(s *specs.Spec) {
				s.Process.Capabilities.Ambient = []string{"CAP_SYS_ADMIN"}
				s.Process.Capabilities.Inheritable = []string{"CAP_SYS_ADMIN"}
			},
			opt: withNoCapabilities(),
			check: func(t *testing.T, s *specs.Spec) {
				c := s.Process.Capabilities
				if c == nil {
					t.Fatal("capabilities nil: runc would keep its own defaults")
				}
				for name, set := range map[string][]string{"bounding": c.Bounding, "effective": c.Effective, "permitted": c.Permitted, "inheritable": c.Inheritable, "ambient": c.Ambient} {
					if len(set) != 0 {
						t.Errorf("%s = %q", name, set)
					}
				}
			},
		},
		{
			name: "no new privileges",
			prep: func(s *specs.Spec) { s.Process.NoNewPrivileges = false },
			opt:  withNoNewPrivileges(),
			check: func(t *testing.T, s *specs.Spec) {
				if !s.Process.NoNewPrivileges {
					t.Error("noNewPrivileges false")
				}
			},
		},
		{
			name: "default masked and read-only proc paths are restored",
			prep: func(s *specs.Spec) { s.Linux.MaskedPaths = nil; s.Linux.ReadonlyPaths = []string{"/proc/bus"} },
			opt:  withProcMasks(),
			check: func(t *testing.T, s *specs.Spec) {
				for _, p := range []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/sys/firmware", "/proc/acpi", "/proc/scsi"} {
					if !slices.Contains(s.Linux.MaskedPaths, p) {
						t.Errorf("%s not masked", p)
					}
				}
				if !slices.Equal(s.Linux.ReadonlyPaths, []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}) {
					t.Errorf("readonly = %q", s.Linux.ReadonlyPaths)
				}
			},
		},
		{
			name: "pids limit",
			opt:  withPidsLimit(64),
			check: func(t *testing.T, s *specs.Spec) {
				if p := s.Linux.Resources.Pids; p == nil || p.Limit == nil || *p.Limit != 64 {
					t.Errorf("pids = %+v", p)
				}
			},
		},
		{
			name: "memory limit with swap equal to it",
			opt:  withMemoryNoSwap(64 << 20),
			check: func(t *testing.T, s *specs.Spec) {
				m := s.Linux.Resources.Memory
				if m == nil || m.Limit == nil || m.Swap == nil || *m.Limit != 64<<20 || *m.Swap != *m.Limit {
					t.Errorf("memory = %+v", m)
				}
			},
		},
		{
			name: "cpu quota is cpus times the period",
			opt:  withCPUQuota(1.5),
			check: func(t *testing.T, s *specs.Spec) {
				c := s.Linux.Resources.CPU
				if c == nil || c.Quota == nil || c.Period == nil || *c.Quota != 150000 || *c.Period != 100000 {
					t.Errorf("cpu = %+v", c)
				}
			},
		},
		{
			name: "the spec carries no rlimits (the launcher lowers them from outside)",
			prep: func(s *specs.Spec) {
				s.Process.Rlimits = append(s.Process.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: 10, Soft: 10})
			},
			opt: withRlimits(),
			check: func(t *testing.T, s *specs.Spec) {
				if len(s.Process.Rlimits) != 0 {
					t.Errorf("rlimits = %+v", s.Process.Rlimits)
				}
			},
		},
		{
			name: "user namespace is the run's own, mapping 0..65535 to its host range",
			prep: func(s *specs.Spec) {
				s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
				s.Linux.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
			},
			opt: withUserNamespace(cfg.UserNS),
			check: func(t *testing.T, s *specs.Spec) {
				var users []specs.LinuxNamespace
				for _, n := range s.Linux.Namespaces {
					if n.Type == specs.UserNamespace {
						users = append(users, n)
					}
				}
				if len(users) != 1 || users[0].Path != "/proc/4343/ns/user" {
					t.Errorf("user namespaces = %+v", users)
				}
				want := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 31, Size: 65536}}
				if !slices.Equal(s.Linux.UIDMappings, want) || !slices.Equal(s.Linux.GIDMappings, want) {
					t.Errorf("uid mappings %+v, gid mappings %+v, want %+v", s.Linux.UIDMappings, s.Linux.GIDMappings, want)
				}
			},
		},
		{
			name: "rootfs is read-only",
			opt:  withReadonlyRootfs(),
			check: func(t *testing.T, s *specs.Spec) {
				if !s.Root.Readonly {
					t.Error("rootfs writable")
				}
			},
		},
		{
			name: "mounts: capped tmpfs, rw binds nosuid nodev, ro init and extras",
			prep: func(s *specs.Spec) {
				s.Mounts = append(s.Mounts, specs.Mount{Destination: "/host", Type: "bind", Source: "/", Options: []string{"rbind", "rw"}})
			},
			opt: withMounts(cfg),
			check: func(t *testing.T, s *specs.Spec) {
				want := map[string]struct {
					typ, src string
					opts     []string
				}{
					"/tmp":               {"tmpfs", "tmpfs", []string{"nosuid", "nodev", "mode=1777", "size=256m"}},
					"/dev/shm":           {"tmpfs", "shm", []string{"nosuid", "noexec", "nodev", "mode=1777", "size=64m"}},
					"/workspace":         {"bind", cfg.WorkspaceDir, []string{"bind", "rw", "nosuid", "nodev"}},
					"/home/agent":        {"bind", cfg.HomeDir, []string{"bind", "rw", "nosuid", "nodev"}},
					"/.ceval/init":       {"bind", cfg.InitPath, []string{"bind", "ro", "nosuid", "nodev"}},
					"/.ceval/supervisor": {"bind", cfg.SupervisorFIFO, []string{"bind", "ro", "nosuid", "nodev", "noexec"}},
					"/opt/ref":           {"bind", "/srv/ref", []string{"bind", "ro", "nosuid", "nodev"}},
					"/sys":               {"sysfs", "sysfs", []string{"nosuid", "noexec", "nodev", "ro"}},
				}
				for dst, w := range want {
					m := mountAt(s, dst)
					if m == nil {
						t.Errorf("no mount at %s", dst)
						continue
					}
					if m.Type != w.typ || m.Source != w.src || !slices.Equal(m.Options, w.opts) {
						t.Errorf("mount %s = %+v, want %+v", dst, *m, w)
					}
				}
				if mountAt(s, "/host") != nil {
					t.Error("a mount the options do not own survived")
				}
				if len(s.Mounts) != 13 {
					t.Errorf("%d mounts, want 13", len(s.Mounts))
				}
			},
		},
		{
			name: "network none keeps a network namespace of its own",
			prep: func(s *specs.Spec) {
				s.Linux.Namespaces = slices.DeleteFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.NetworkNamespace })
			},
			opt: withNetwork(policy.NetworkNone),
			check: func(t *testing.T, s *specs.Spec) {
				i := slices.IndexFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.NetworkNamespace })
				if i < 0 || s.Linux.Namespaces[i].Path != "" {
					t.Errorf("namespaces = %+v", s.Linux.Namespaces)
				}
			},
		},
		{
			name: "network none replaces a joined namespace path",
			prep: func(s *specs.Spec) {
				s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: "/proc/1/ns/net"})
			},
			opt: withNetwork(policy.NetworkNone),
			check: func(t *testing.T, s *specs.Spec) {
				for _, n := range s.Linux.Namespaces {
					if n.Type == specs.NetworkNamespace && n.Path != "" {
						t.Errorf("joins %s", n.Path)
					}
				}
			},
		},
		{
			name: "network host shares the host's namespace",
			opt:  withNetwork(policy.NetworkHost),
			check: func(t *testing.T, s *specs.Spec) {
				if hasNamespace(s, specs.NetworkNamespace) {
					t.Error("network namespace still there")
				}
				for _, typ := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.MountNamespace, specs.IPCNamespace, specs.UTSNamespace} {
					if !hasNamespace(s, typ) {
						t.Errorf("lost %s namespace", typ)
					}
				}
			},
		},
		{
			name: "hostname in its own UTS namespace",
			opt:  withHostname(Hostname),
			check: func(t *testing.T, s *specs.Spec) {
				if s.Hostname != "ceval" || !hasNamespace(s, specs.UTSNamespace) {
					t.Errorf("hostname %q, namespaces %+v", s.Hostname, s.Linux.Namespaces)
				}
			},
		},
		{
			name: "no terminal",
			prep: func(s *specs.Spec) { s.Process.Terminal = true },
			opt:  withoutTerminal(),
			check: func(t *testing.T, s *specs.Spec) {
				if s.Process.Terminal {
					t.Error("terminal true")
				}
			},
		},
		{
			name: "annotations tie the container to its run",
			prep: func(s *specs.Spec) { s.Annotations = map[string]string{"other": "kept"} },
			opt:  withRunAnnotations(cfg),
			check: func(t *testing.T, s *specs.Spec) {
				want := map[string]string{"other": "kept", LabelRunID: "hello", LabelPID: "4242", LabelBootID: cfg.BootID}
				if len(s.Annotations) != len(want) {
					t.Errorf("annotations = %v", s.Annotations)
				}
				for k, v := range want {
					if s.Annotations[k] != v {
						t.Errorf("annotation %s = %q, want %q", k, s.Annotations[k], v)
					}
				}
			},
		},
		{
			name: "default seccomp profile, errno by default",
			opt:  withDefaultSeccomp(),
			check: func(t *testing.T, s *specs.Spec) {
				sc := s.Linux.Seccomp
				if sc == nil || sc.DefaultAction != specs.ActErrno || len(sc.Syscalls) == 0 {
					t.Fatalf("seccomp = %+v", sc)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSpec(t)
			if tt.prep != nil {
				tt.prep(s)
			}
			apply(t, s, tt.opt)
			tt.check(t, s)
		})
	}
}

func TestSpecOptsRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"missing run id", func(c *Config) { c.RunID = "" }, "run id"},
		{"run id with a slash", func(c *Config) { c.RunID = "../x" }, "run id"},
		{"missing pid", func(c *Config) { c.PID = 0 }, "pid"},
		{"missing boot id", func(c *Config) { c.BootID = "" }, "boot id"},
		{"no command", func(c *Config) { c.Args = nil }, "args"},
		{"env without =", func(c *Config) { c.Env = []string{"FOO"} }, "env[0]"},
		{"env key with a space", func(c *Config) { c.Env = []string{"A B=1"} }, "env[0]"},
		{"env key set twice", func(c *Config) { c.Env = []string{"A=1", "A=2"} }, "set twice"},
		{"env value with NUL", func(c *Config) { c.Env = []string{"A=\x00"} }, "NUL"},
		{"relative workspace", func(c *Config) { c.WorkspaceDir = "ws" }, "workspace dir"},
		{"unclean home", func(c *Config) { c.HomeDir = "/a/../b" }, "home dir"},
		{"missing init", func(c *Config) { c.InitPath = "" }, "init path"},
		{"missing supervisor FIFO", func(c *Config) { c.SupervisorFIFO = "" }, "supervisor FIFO"},
		{"extra mount over the supervisor FIFO", func(c *Config) { c.ExtraMounts = []Mount{{"/srv", SupervisorFIFOPath}} }, "overlaps"},
		{"extra mount over the workspace", func(c *Config) { c.ExtraMounts = []Mount{{"/srv", "/workspace"}} }, "overlaps"},
		{"extra mount inside the workspace", func(c *Config) { c.ExtraMounts = []Mount{{"/srv", "/workspace/ref"}} }, "overlaps"},
		{"extra mount covering home", func(c *Config) { c.ExtraMounts = []Mount{{"/srv", "/home"}} }, "overlaps"},
		{"extra mount covering the init", func(c *Config) { c.ExtraMounts = []Mount{{"/srv", "/.ceval"}} }, "overlaps"},
		{"extra mount on proc", func(c *Config) { c.ExtraMounts = []Mount{{"/srv", "/proc/sys"}} }, "overlaps"},
		{"extra mount on the root", func(c *Config) { c.ExtraMounts = []Mount{{"/srv", "/"}} }, "rootfs"},
		{"output over the workspace", func(c *Config) { c.Outputs = []Mount{{"/srv/o", "/workspace/out"}} }, "overlaps"},
		{"output covering home", func(c *Config) { c.Outputs = []Mount{{"/srv/o", "/home"}} }, "overlaps"},
		{"output on the root", func(c *Config) { c.Outputs = []Mount{{"/srv/o", "/"}} }, "rootfs"},
		{"outputs nested", func(c *Config) { c.Outputs = []Mount{{"/srv/o", "/out"}, {"/srv/p", "/out/a"}} }, "overlaps output"},
		{"output over a read-only mount", func(c *Config) {
			c.ExtraMounts = []Mount{{"/srv", "/opt/ref"}}
			c.Outputs = []Mount{{"/srv/o", "/opt"}}
		}, "overlaps the read-only mount"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "timeout"},
		{"tiny memory", func(c *Config) { c.MemoryMB = 1 }, "memory"},
		{"negative cpus", func(c *Config) { c.CPUs = -1 }, "cpus"},
		{"tiny pids", func(c *Config) { c.Pids = 2 }, "pids"},
		{"unknown network", func(c *Config) { c.Network = "bridge" }, "network"},
		{"no user namespace", func(c *Config) { c.UserNS = UserNS{} }, "user namespace"},
		{"host root in the range", func(c *Config) { c.UserNS.HostID = 0 }, "host's root"},
		{"range past 2^32-2", func(c *Config) { c.UserNS.HostID = 1<<32 - 65536 }, "largest valid ID"},
		{"relative namespace path", func(c *Config) { c.UserNS.Path = "proc/1/ns/user" }, "user namespace: path"},
		{"relative working directory", func(c *Config) { c.Cwd = "srv" }, "working directory"},
		{"user name with a newline", func(c *Config) { c.UserName = "a\nPATH=/evil" }, "user name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := reference()
			tt.mutate(&cfg)
			_, err := SpecOpts(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestSpecClearsAmbientCapabilities(t *testing.T) {
	s := generate(t, reference())
	c := s.Process.Capabilities
	if c == nil || len(c.Ambient)+len(c.Inheritable)+len(c.Bounding)+len(c.Effective)+len(c.Permitted) != 0 {
		t.Fatalf("capabilities = %+v", c)
	}
}

func TestSpecGIDIsNotRootWithoutPasswdEntry(t *testing.T) {
	s := generate(t, reference())
	if s.Process.User.GID == 0 || s.Process.User.GID != 2000 || s.Process.User.UID != 2000 {
		t.Fatalf("user = %+v", s.Process.User)
	}
}

func TestRlimitsAreNOFILEAndCORE0NeverNPROC(t *testing.T) {
	want := []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}, {Type: "RLIMIT_CORE"}}
	if got := Rlimits(); !slices.Equal(got, want) {
		t.Fatalf("rlimits = %+v, want %+v", got, want)
	}
}

func TestSpecSwapEqualsMemorySoAMemoryBombCannotSwap(t *testing.T) {
	cfg := reference()
	cfg.MemoryMB = 64
	m := generate(t, cfg).Linux.Resources.Memory
	if *m.Limit != 64<<20 || *m.Swap != *m.Limit {
		t.Fatalf("limit %d swap %d", *m.Limit, *m.Swap)
	}
}

func TestSpecRootfsIsReadOnly(t *testing.T) {
	if !generate(t, reference()).Root.Readonly {
		t.Fatal("rootfs writable")
	}
}

func TestSpecDoesNotLeakHostEnvironment(t *testing.T) {
	t.Setenv("CEVAL_CANARY", "leaked-from-host")
	cfg := reference()
	cfg.Env = []string{"OPENAI_BASE_URL=http://127.0.0.1"}
	s := generate(t, cfg)
	want := []string{"HOME=/home/agent", "USER=agent", "PATH=" + DefaultPATH, "OPENAI_BASE_URL=http://127.0.0.1"}
	if !slices.Equal(s.Process.Env, want) {
		t.Fatalf("env = %q, want %q", s.Process.Env, want)
	}
	raw, _ := json.Marshal(s)
	if bytes.Contains(raw, []byte("leaked-from-host")) || bytes.Contains(raw, []byte("CEVAL_CANARY")) {
		t.Fatal("host env canary is in the spec")
	}
}

func TestSpecNetworkDefaultsToNone(t *testing.T) {
	if !hasNamespace(generate(t, reference()), specs.NetworkNamespace) {
		t.Fatal("no network namespace by default")
	}
	cfg := reference()
	cfg.Network = policy.NetworkHost
	if hasNamespace(generate(t, cfg), specs.NetworkNamespace) {
		t.Fatal("network host still has a namespace")
	}
}

// runc cannot mount a sysfs in the run's user namespace over the host's network namespace
// (EPERM): with the host's network /sys is the host's, read-only; otherwise a sysfs.
func TestSpecSysIsAReadOnlyHostBindOnlyWithHostNetwork(t *testing.T) {
	if m := mountAt(generate(t, reference()), "/sys"); m == nil || m.Type != "sysfs" || !slices.Contains(m.Options, "ro") {
		t.Fatalf("network none: /sys %+v, want a read-only sysfs", m)
	}
	cfg := reference()
	cfg.Network = policy.NetworkHost
	m := mountAt(generate(t, cfg), "/sys")
	if m == nil || m.Type != "bind" || m.Source != "/sys" || !slices.Contains(m.Options, "ro") || !slices.Contains(m.Options, "nosuid") {
		t.Fatalf("network host: /sys %+v, want a read-only bind of the host's", m)
	}
}

func TestSpecSeccompFollowsEmptyCapabilities(t *testing.T) {
	// The default profile allows mount, bpf, setns and unshare only for CAP_SYS_ADMIN (or
	// CAP_BPF) in the bounding set; with no caps none of them may be allowed.
	s := generate(t, reference())
	for _, sc := range s.Linux.Seccomp.Syscalls {
		if sc.Action != specs.ActAllow {
			continue
		}
		for _, n := range sc.Names {
			if n == "mount" || n == "bpf" || n == "setns" || n == "unshare" {
				t.Errorf("%s allowed", n)
			}
		}
	}
}

func TestConfigBackstopIsLaterThanTheHostDeadline(t *testing.T) {
	cfg := reference()
	cfg.Timeout, cfg.Grace = time.Minute, 5*time.Second
	if got := cfg.Backstop(); got != time.Minute+5*time.Second+BackstopMargin {
		t.Fatalf("backstop = %s", got)
	}
}

func TestLabelsEqualAnnotations(t *testing.T) {
	cfg := reference()
	s := generate(t, cfg)
	for k, v := range Labels(cfg) {
		if s.Annotations[k] != v {
			t.Errorf("annotation %s = %q, label %q", k, s.Annotations[k], v)
		}
	}
}

// hostSpecific are masked paths containerd adds only where the host has them.
var hostSpecific = regexp.MustCompile(`^/sys/devices/system/cpu/cpu\d+/thermal_throttle$`)

func TestGoldenSpec(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("golden spec is for amd64 (the seccomp profile lists arches); this is %s", runtime.GOARCH)
	}
	s := generate(t, reference())
	s.Linux.MaskedPaths = slices.DeleteFunc(s.Linux.MaskedPaths, hostSpecific.MatchString)
	got, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "hello.spec.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./oci -run TestGoldenSpec -update)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("spec drifted from %s at line %d:\n got: %s\nwant: %s\n(if intended, run go test ./oci -run TestGoldenSpec -update and review the diff)", path, i+1, g, w)
			}
		}
	}
}

// An output is a read-write bind of its scratch directory; one at /tmp replaces the tmpfs,
// so the agent's /tmp is the capped directory ceval copies out.
func TestOutputsAreReadWriteBindsAndTmpReplacesTheTmpfs(t *testing.T) {
	cfg := reference().withDefaults()
	cfg.Outputs = []Mount{{Source: "/srv/out-tmp", Destination: TmpPath}, {Source: "/srv/out-o", Destination: "/output"}}
	s := &specs.Spec{Process: &specs.Process{}, Linux: &specs.Linux{}}
	if err := withMounts(cfg)(context.Background(), nil, nil, s); err != nil {
		t.Fatal(err)
	}
	var tmp, out []specs.Mount
	for _, m := range s.Mounts {
		switch m.Destination {
		case TmpPath:
			tmp = append(tmp, m)
		case "/output":
			out = append(out, m)
		}
	}
	if len(tmp) != 1 || tmp[0].Type != "bind" || tmp[0].Source != "/srv/out-tmp" || !slices.Contains(tmp[0].Options, "rw") {
		t.Errorf("/tmp mounts = %+v, want the one rw bind of the output", tmp)
	}
	if len(out) != 1 || out[0].Source != "/srv/out-o" || !slices.Equal(out[0].Options, []string{"bind", "rw", "nosuid", "nodev"}) {
		t.Errorf("/output mounts = %+v", out)
	}
	if err := cfg.validate(); err != nil {
		t.Errorf("valid outputs refused: %v", err)
	}
}
