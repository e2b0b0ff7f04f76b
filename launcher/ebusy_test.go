package launcher_test

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
)

// TestDeleteRidesOutAHolderOfTheRootfs holds the task's rootfs mount busy with an fd for 3 s
// while the container is deleted, as a host tool that walks every mount does (stress-ng --io's
// syncfs, updatedb): the shim's unmount fails with EBUSY for longer than containerd's own
// retries (2.5 s), yet Delete succeeds once the holder lets go and leaves no task, container,
// lease or mount.
func TestDeleteRidesOutAHolderOfTheRootfs(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	s := newSandbox(t, "sleep", "1000")
	opts, err := oci.SpecOpts(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := launcher.Create(ctx, c, launcher.Spec{ID: s.cfg.RunID, Image: busyboxImage(t, c, ctx), Opts: opts, Labels: oci.Labels(s.cfg)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctr.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rootfs := rootfsMount(t, s.cfg.RunID)
	f, err := os.Open(rootfs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	held := time.AfterFunc(3*time.Second, func() { f.Close() })
	defer held.Stop()
	start := time.Now()
	if err := ctr.Delete(ctx); err != nil {
		t.Fatalf("delete while the rootfs was held for 3 s: %v", err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("delete took %s: the rootfs was not held (the test proves nothing)", took)
	}
	if _, err := c.LoadContainer(ctx, s.cfg.RunID); !errdefs.IsNotFound(err) {
		t.Errorf("container %s left (load: %v)", s.cfg.RunID, err)
	}
	noLeases(t, c, ctx)
	if mounted(t, rootfs) {
		t.Errorf("rootfs %s still mounted", rootfs)
	}
}

// rootfsMount finds the mount point of the rootfs the shim mounted for container id.
func rootfsMount(t *testing.T, id string) string {
	t.Helper()
	for _, m := range mountPoints(t) {
		if strings.HasSuffix(m, "/"+id+"/rootfs") {
			return m
		}
	}
	t.Fatalf("no rootfs mount of %s in /proc/self/mountinfo", id)
	return ""
}

func mounted(t *testing.T, dir string) bool {
	for _, m := range mountPoints(t) {
		if m == dir {
			return true
		}
	}
	return false
}

func mountPoints(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Error(err) // not Fatal: a timer's goroutine calls it too
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 {
			out = append(out, fields[4])
		}
	}
	return out
}

// TestScratchUnmountWaitsForAHolderToLetGo holds a scratch filesystem busy with an fd for 2 s
// while it is unmounted: the unmount waits for the holder (the filesystem stays mounted, not
// lazily detached under it), then succeeds and leaves nothing mounted.
func TestScratchUnmountWaitsForAHolderToLetGo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	unmount, err := launcher.MountScratch(dir, 1, 100, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unmount() })
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stillMounted := make(chan bool, 1)
	time.AfterFunc(time.Second, func() { stillMounted <- mounted(t, dir) })
	time.AfterFunc(2*time.Second, func() { f.Close() })
	start := time.Now()
	if err := unmount(); err != nil {
		t.Fatalf("unmount while held for 2 s: %v", err)
	}
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Errorf("unmount returned after %s, while the scratch was still held: detached under its holder", took)
	}
	if !<-stillMounted {
		t.Errorf("scratch %s detached while held (1 s in), not unmounted once let go", dir)
	}
	if mounted(t, dir) {
		t.Errorf("scratch %s still mounted", dir)
	}
}
