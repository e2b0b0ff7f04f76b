package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/internal/ctrtest"
)

// kill -9 of ceval mid-run: the container's init sees its supervisor's FIFO close and kills
// every process in the container within 5 s, with nobody calling gc; gc then removes the
// container, task, snapshot, lease, scratch mounts and the FIFO.
func TestKill9OfCevalKillsItsAgentWithin5s(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	cmd, runs := startSleeper(t, ctx, c, "orphan")
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		ceval(t, "gc", "--namespace", ctrtest.Namespace) // whatever a failed check left
	})
	cgroup := agentCgroup(t, ctx, c)
	// The agent (sleep) runs beside the init: two processes in the container's cgroup.
	for end := time.Now().Add(20 * time.Second); len(cgroupProcs(t, cgroup)) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the agent is not running: cgroup %s holds %v", cgroup, cgroupProcs(t, cgroup))
		}
	}

	killed := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	var left []string
	for {
		if left = cgroupProcs(t, cgroup); len(left) == 0 {
			break
		}
		if time.Since(killed) > 5*time.Second {
			t.Fatalf("processes %v still run in the container 5s after kill -9 of ceval", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("kill -9 of ceval -> container empty: %v", time.Since(killed))

	r := ceval(t, "gc", "--namespace", ctrtest.Namespace)
	if r.code != 0 {
		t.Fatalf("gc: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"removed task", "removed container", "removed lease", "removed mount", "removed fifo"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("gc output lacks %q:\n%s", want, r.stdout)
		}
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("after gc: %v", err)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), runs) {
		t.Errorf("scratch mounts under %s left", runs)
	}
	_ = filepath.WalkDir(runs, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type() == fs.ModeNamedPipe {
			t.Errorf("FIFO %s left", p)
		}
		return nil
	})
}

// agentCgroup returns the cgroup path in the spec of the namespace's only container.
func agentCgroup(t *testing.T, ctx context.Context, c *client.Client) string {
	t.Helper()
	ctrs, err := c.Containers(ctx)
	if err != nil || len(ctrs) != 1 {
		t.Fatalf("want the run's one container: %d, %v", len(ctrs), err)
	}
	spec, err := ctrs[0].Spec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Linux == nil || spec.Linux.CgroupsPath == "" || strings.Contains(spec.Linux.CgroupsPath, ":") {
		t.Fatalf("container %s: want a cgroupfs path in its spec", ctrs[0].ID())
	}
	return spec.Linux.CgroupsPath
}

// cgroupProcs lists the PIDs in the cgroup's pids hierarchy (v1) or unified one (v2); a
// removed cgroup holds none.
func cgroupProcs(t *testing.T, cgroupsPath string) []string {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup", cgroupsPath)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		dir = filepath.Join("/sys/fs/cgroup/pids", cgroupsPath)
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}
