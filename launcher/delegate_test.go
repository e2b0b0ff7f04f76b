package launcher_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ceval.dev/ceval/launcher"
)

func TestDelegatedCgroupSetupRefusesCgroupV2AndMissingControllers(t *testing.T) {
	v2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("pids memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := launcher.SetupDelegatedCgroup(v2, "u", 4242, 4242); err == nil || !strings.Contains(err.Error(), "systemd") {
		t.Fatalf("cgroup v2: %v, want a refusal naming systemd's delegation", err)
	}
	v1 := t.TempDir()
	for _, h := range []string{"pids", "memory"} {
		if err := os.MkdirAll(filepath.Join(v1, h), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v1, h, "cgroup.procs"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if made, err := launcher.SetupDelegatedCgroup(v1, "u", 4242, 4242); err == nil || !strings.Contains(err.Error(), "no cpu hierarchy") || len(made) != 0 {
		t.Fatalf("without cpu: %v (made %v), want a refusal before anything is made", err, made)
	}
}

// TestDelegatedCgroupSetupOnTheHostGivesEveryHierarchyToTheUserAndTeardownRemovesIt runs
// on the host's own cgroup v1 hierarchies, as root, for a made-up user ID.
func TestDelegatedCgroupSetupOnTheHostGivesEveryHierarchyToTheUserAndTeardownRemovesIt(t *testing.T) {
	const root = "/sys/fs/cgroup"
	if os.Geteuid() != 0 {
		t.Skip("needs root (it is what `ceval rootless setup` runs as)")
	}
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		t.Skip("cgroup v2 host: delegation is systemd's")
	}
	user := fmt.Sprintf("ceval-test-%d", os.Getpid())
	made, err := launcher.SetupDelegatedCgroup(root, user, 4242, 4243)
	t.Cleanup(func() { _ = launcher.TeardownDelegatedCgroup(root, user) })
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range made {
		for _, p := range []string{d, filepath.Join(d, "cgroup.procs")} {
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err != nil {
				t.Fatal(err)
			}
			if st.Uid != 4242 || st.Gid != 4243 {
				t.Errorf("%s is %d:%d, want the user's 4242:4243", p, st.Uid, st.Gid)
			}
		}
		if strings.Contains(d, "/cpuset/") {
			if b, _ := os.ReadFile(filepath.Join(d, "cpuset.cpus")); strings.TrimSpace(string(b)) == "" {
				t.Errorf("%s/cpuset.cpus is empty: no task could join it", d)
			}
		}
	}
	if name, why := launcher.DelegatedCgroup(root, user); name == "" {
		t.Fatalf("after setup DelegatedCgroup says none: %s", why)
	}
	run := filepath.Join(made[0], "run1") // a run's cgroup under the subtree
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := launcher.TeardownDelegatedCgroup(root, user); err != nil {
		t.Fatal(err)
	}
	for _, d := range made {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there after teardown (%v)", d, err)
		}
	}
}
