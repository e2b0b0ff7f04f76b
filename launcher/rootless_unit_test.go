package launcher_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"ceval.dev/ceval/launcher"
)

func TestRootlessRunWithoutDelegatedCgroupOrRlimitOptInIsRefused(t *testing.T) {
	_, err := launcher.RootlessLimits("", false)
	if !errors.Is(err, launcher.ErrRootlessLimits) {
		t.Fatalf("RootlessLimits(no subtree, not allowed) = %v, want ErrRootlessLimits", err)
	}
}

func TestRootlessLimitModesSayWhatEnforcesEachLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		delegated string
		allow     bool
		pids, cpu string
		memory    string
	}{
		{"delegated cgroup", "ceval-rootless-u", false, launcher.EnforcedByCgroup, launcher.EnforcedByCgroup, launcher.EnforcedByCgroup},
		{"delegated wins over rlimits", "ceval-rootless-u", true, launcher.EnforcedByCgroup, launcher.EnforcedByCgroup, launcher.EnforcedByCgroup},
		{"rlimits allowed", "", true, launcher.EnforcedByRlimitNproc, launcher.NotEnforced, launcher.EnforcedByRlimitAS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := launcher.RootlessLimits(tc.delegated, tc.allow)
			if err != nil {
				t.Fatal(err)
			}
			if got.Pids != tc.pids || got.CPU != tc.cpu || got.Memory != tc.memory || got.Disk != launcher.EnforcedByTmpfs {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestRootlessSpecWithoutDelegationHasNoCgroupLimitsAndAnRlimitNproc(t *testing.T) {
	s := &specs.Spec{
		Process: &specs.Process{Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NPROC", Hard: 1 << 20, Soft: 1 << 20}, {Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}}},
		Linux:   &specs.Linux{CgroupsPath: "/ceval/run1", Resources: &specs.LinuxResources{Pids: &specs.LinuxPids{}}},
	}
	if err := launcher.WithRootlessLimits("", "run1", 64)(context.Background(), nil, &containers.Container{}, s); err != nil {
		t.Fatal(err)
	}
	if s.Linux.CgroupsPath != "" || s.Linux.Resources != nil {
		t.Fatalf("cgroup path %q, resources %+v: rootless runc refuses both", s.Linux.CgroupsPath, s.Linux.Resources)
	}
	want := []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}, {Type: "RLIMIT_NPROC", Hard: 64, Soft: 64}}
	if len(s.Process.Rlimits) != 2 || s.Process.Rlimits[0] != want[0] || s.Process.Rlimits[1] != want[1] {
		t.Fatalf("rlimits %+v, want %+v", s.Process.Rlimits, want)
	}
	if err := launcher.WithRootlessLimits("", "run1", 0)(context.Background(), nil, &containers.Container{}, s); err == nil {
		t.Fatal("a zero pids limit without a delegated cgroup was accepted: nothing would hold a fork bomb")
	}
}

func TestRootlessSpecWithDelegationKeepsLimitsUnderTheSubtree(t *testing.T) {
	res := &specs.LinuxResources{Pids: &specs.LinuxPids{}}
	s := &specs.Spec{Process: &specs.Process{}, Linux: &specs.Linux{CgroupsPath: "/ceval/run1", Resources: res}}
	if err := launcher.WithRootlessLimits("ceval-rootless-u", "run1", 64)(context.Background(), nil, &containers.Container{}, s); err != nil {
		t.Fatal(err)
	}
	if s.Linux.CgroupsPath != "/ceval-rootless-u/run1" || s.Linux.Resources != res {
		t.Fatalf("cgroup path %q, resources %+v", s.Linux.CgroupsPath, s.Linux.Resources)
	}
}

func TestDelegatedCgroupNeedsEveryControllersSubtree(t *testing.T) {
	root := t.TempDir()
	name := launcher.DelegatedCgroupName("u")
	for _, c := range []string{"pids", "memory"} {
		if err := os.MkdirAll(filepath.Join(root, c, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, why := launcher.DelegatedCgroup(root, "u"); got != "" || why == "" {
		t.Fatalf("without cpu's subtree: %q (%s), want none", got, why)
	}
	if err := os.MkdirAll(filepath.Join(root, "cpu", name), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, why := launcher.DelegatedCgroup(root, "u"); got != name {
		t.Fatalf("with every subtree: %q (%s), want %q", got, why, name)
	}
}
