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
	"ceval.dev/ceval/policy"
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
		{"delegated cgroup", "ceval-rootless-u", false, policy.EnforcedByCgroup, policy.EnforcedByCgroup, policy.EnforcedByCgroup},
		{"delegated wins over rlimits", "ceval-rootless-u", true, policy.EnforcedByCgroup, policy.EnforcedByCgroup, policy.EnforcedByCgroup},
		{"rlimits allowed", "", true, policy.EnforcedByRlimitNproc, policy.NotEnforced, policy.EnforcedByRlimitAS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := launcher.RootlessLimits(tc.delegated, tc.allow)
			if err != nil {
				t.Fatal(err)
			}
			if got.Pids != tc.pids || got.CPU != tc.cpu || got.Memory != tc.memory || got.Disk != policy.EnforcedByTmpfs {
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

func TestDelegatedCgroupNeedsTheSubtreeInEveryHierarchy(t *testing.T) {
	root := t.TempDir()
	name := launcher.DelegatedCgroupName("u")
	mk := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []string{"pids", "memory", "cpu", "cpuset", "unified"} {
		mk(h)
		if err := os.WriteFile(filepath.Join(root, h, "cgroup.procs"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "unified", "cgroup.controllers"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"pids", "memory", "cpu"} {
		mk(filepath.Join(h, name))
	}
	if got, why := launcher.DelegatedCgroup(root, "u"); got != "" || why == "" {
		t.Fatalf("without cpuset's subtree: %q (%s), want none (runc makes a cgroup in every hierarchy)", got, why)
	}
	mk(filepath.Join("cpuset", name))
	if got, why := launcher.DelegatedCgroup(root, "u"); got != name {
		t.Fatalf("with every v1 hierarchy's subtree: %q (%s), want %q (the v2 mount is not needed)", got, why, name)
	}
	if err := os.RemoveAll(filepath.Join(root, "cpu", name)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "cpu", "cgroup.procs"))
	if got, _ := launcher.DelegatedCgroup(root, "u"); got != "" {
		t.Fatalf("without cpu's subtree: %q, want none (cpu limits need it)", got)
	}
}

func TestSubordinateIDsCountPerRunSlices(t *testing.T) {
	data := []byte("other:100000:65536\nu:131072:1114112\n")
	start, count, runs, err := launcher.SubordinateIDs(data, "u", 1001, 65536)
	if err != nil || start != 131072 || count != 1114112 || runs != 16 {
		t.Fatalf("got %d %d %d %v, want 131072 1114112 16", start, count, runs, err)
	}
	if _, _, runs, err := launcher.SubordinateIDs([]byte("1001:100000:65536\n"), "u", 1001, 65536); err != nil || runs != 0 {
		t.Fatalf("by UID, one slice: runs %d %v, want 0 (the daemon's own slice only)", runs, err)
	}
	if _, _, _, err := launcher.SubordinateIDs(data, "nobody", 5, 65536); err == nil {
		t.Fatal("a user without subordinate IDs was accepted")
	}
}
