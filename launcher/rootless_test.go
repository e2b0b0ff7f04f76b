package launcher_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cio"
	ctroci "github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/launcher"
)

// rootlessDaemon returns the rootless containerd at CEVAL_ROOTLESS_ADDRESS and a client of
// it. These tests run as the unprivileged user that owns it (.ci/run runs them so); as root
// they skip, because root is not rootless. Without the daemon they fail under CI=true.
func rootlessDaemon(t *testing.T) (*launcher.RootlessDaemon, *client.Client, context.Context) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Skip("rootless tests run as the daemon's unprivileged user (.ci/run: scripts/containerd.sh rootless-start, then go test as that user)")
	}
	addr := os.Getenv(launcher.RootlessAddressEnv)
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and a rootless containerd is required: set %s (scripts/containerd.sh rootless-start USER DIR prints it)", launcher.RootlessAddressEnv)
		}
		t.Skipf("no rootless containerd: set %s", launcher.RootlessAddressEnv)
	}
	d, err := launcher.DetectRootless(addr)
	if err != nil {
		t.Fatal(err)
	}
	c, ctx, err := launcher.Connect(context.Background(), addr, ctrtest.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.FIFODir(), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer c.Close()
		if err := ctrtest.Leftovers(ctx, c); err != nil {
			t.Errorf("left behind in namespace %s: %v", ctrtest.Namespace, err)
		}
	})
	return d, c, ctx
}

// withNoCapabilities clears all five capability sets by hand: rootless tools differ in
// whether "ALL" is honoured, and WithCapabilities(nil) keeps the ambient set.
func withNoCapabilities(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
	s.Process.Capabilities = &specs.LinuxCapabilities{Bounding: []string{}, Effective: []string{}, Permitted: []string{}, Inheritable: []string{}, Ambient: []string{}}
	return nil
}

func withAgentIDs(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
	s.Process.User = specs.User{UID: 2000, GID: 2000}
	s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	return nil
}

// runRootless runs script in a hardened container of the rootless daemon with the limit
// options limits(id) gives; before sees the init's host PID before it starts, during sees the running init's host PID, then the container is
// killed (a script given a during ends in a long sleep).
func runRootless(t *testing.T, d *launcher.RootlessDaemon, c *client.Client, ctx context.Context, script string, limits func(id string) []ctroci.SpecOpts, before, during func(pid uint32)) string {
	t.Helper()
	img := busyboxImage(t, c, ctx)
	id := runID(t)
	opts := []ctroci.SpecOpts{
		ctroci.WithImageConfig(img),
		ctroci.WithProcessArgs("/bin/sh", "-c", script),
		withAgentIDs,
		withNoCapabilities,
		ctroci.WithNoNewPrivileges,
		ctroci.WithRootFSReadonly(),
	}
	opts = append(opts, limits(id)...)
	opts = append(opts, seccomp.WithDefaultProfile())
	ctr, err := c.NewContainer(ctx, id, client.WithNewSnapshot(id, img), client.WithNewSpec(opts...))
	if err != nil {
		t.Fatal(err)
	}
	defer ctr.Delete(ctx, client.WithSnapshotCleanup)
	out := &markedWriter{ready: make(chan struct{})}
	tk, err := ctr.NewTask(ctx, cio.NewCreator(cio.WithStreams(nil, out, out), cio.WithFIFODir(d.FIFODir())))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Rootless runc without a cgroup path fails kill --all (WithProcessKill): kill the init.
		if _, err := tk.Delete(ctx); err == nil || errdefs.IsNotFound(err) {
			return
		}
		exited, err := tk.Wait(ctx)
		if err == nil && tk.Kill(ctx, syscall.SIGKILL) == nil {
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
			}
		}
		if _, err := tk.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
			t.Errorf("delete task %s: %v", id, err)
		}
	}()
	exitCh, err := tk.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(tk.Pid())
	}
	if err := tk.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if during != nil {
		select {
		case <-out.ready:
		case <-exitCh:
			t.Fatalf("container exited before it printed %q: %q", readyMark, out.String())
		case <-time.After(60 * time.Second):
			t.Fatalf("no %q in 60 s: %q", readyMark, out.String())
		}
		during(tk.Pid())
		// SIGKILL to the init empties its PID namespace. Not WithKillAll: rootless runc
		// without a cgroup path fails it ("lstat : no such file or directory").
		if err := tk.Kill(ctx, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case st := <-exitCh:
		t.Logf("exit %d %v", st.ExitCode(), st.Error())
	case <-time.After(60 * time.Second):
		t.Fatal("container did not exit in 60 s")
	}
	if _, err := tk.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// rlimitMode holds pids at 64 without any cgroup.
func rlimitMode(id string) []ctroci.SpecOpts {
	return []ctroci.SpecOpts{launcher.WithRootlessLimits("", id, 64)}
}

// delegatedCgroup returns the cgroup subtree root delegated to this user
// (ceval rootless setup, which .ci/run runs): skipped without one
// outside CI, failed under CI=true.
func delegatedCgroup(t *testing.T) string {
	t.Helper()
	name, why := launcher.DelegatedCgroup("/sys/fs/cgroup", os.Getenv("USER"))
	if name == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and a delegated cgroup subtree is required (as root: ceval rootless setup --user USER): %s", why)
		}
		t.Skipf("no delegated cgroup subtree: %s", why)
	}
	return name
}

// readyMark is what a script given a during prints when it has said everything and waits.
const readyMark = "ceval-ready\n"

// markedWriter collects a container's output and closes ready when readyMark shows.
type markedWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	seen  bool
}

func (w *markedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.seen && strings.Contains(w.buf.String(), readyMark) {
		w.seen = true
		close(w.ready)
	}
	return len(p), nil
}

func (w *markedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// procCount reads the "procs=N" line a fork-bomb script prints.
func procCount(t *testing.T, out string) int {
	t.Helper()
	i := strings.LastIndex(out, "procs=")
	if i < 0 {
		t.Fatalf("no process count in the output %q", out)
	}
	line, _, _ := strings.Cut(out[i+len("procs="):], "\n")
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	return n
}

func procStatus(t *testing.T, pid uint32) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		m[k] = strings.Join(strings.Fields(v), " ")
	}
	return m
}

func TestRootlessAgentRunsAsSubordinateUIDWithNoCapsNNPSeccompReadonlyRootfsAndOnlyLo(t *testing.T) {
	d, c, ctx := rootlessDaemon(t)
	own, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]string
	var netns string
	out := runRootless(t, d, c, ctx, `id -u; ls /sys/class/net; touch /rootfs-write 2>/dev/null || echo rootfs-readonly; echo ceval-ready; exec sleep 600`, rlimitMode, nil, func(pid uint32) {
		st = procStatus(t, pid)
		netns, _ = os.Readlink("/proc/" + strconv.Itoa(int(pid)) + "/ns/net")
	})
	hostUID, _, _ := strings.Cut(st["Uid"], " ")
	if hostUID == strconv.Itoa(os.Getuid()) || hostUID == "0" || hostUID == "2000" {
		t.Errorf("agent's host UID %s: want one of the user's subordinate IDs", hostUID)
	}
	for k, want := range map[string]string{"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapInh": "0000000000000000", "CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"} {
		if st[k] != want {
			t.Errorf("%s = %q, want %q", k, st[k], want)
		}
	}
	if netns == "" || netns == own {
		t.Errorf("container network namespace %q: want its own, not the host's %q", netns, own)
	}
	if f := strings.Fields(out); len(f) < 3 || f[0] != "2000" || f[1] != "lo" || f[2] != "rootfs-readonly" {
		t.Errorf("inside: %q, want UID 2000, only lo, a read-only rootfs", out)
	}
}

func TestRootlessForkBombIsHeldByRlimitNproc(t *testing.T) {
	d, c, ctx := rootlessDaemon(t)
	// The bomb runs in a subshell (ash exits when a fork fails); the count and the kill are
	// builtins, so they need no process of their own once the limit is reached.
	out := runRootless(t, d, c, ctx, `(i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done) 2>/dev/null; n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo procs=$n; kill -9 -1`, rlimitMode, nil, nil)
	got := procCount(t, out)
	t.Logf("%d processes in the container after 200 forks", got)
	if got > 64 {
		t.Fatalf("%d processes of the agent's UID: RLIMIT_NPROC=64 did not hold the fork bomb", got)
	}
}

func TestRootlessScratchCapStopsWritesPastItsSize(t *testing.T) {
	d, _, _ := rootlessDaemon(t)
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	unmount, err := d.MountScratch(dir, 1, 64, 2000, 2000)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unmount(); err != nil {
			t.Error(err)
		}
	}()
	out, err := d.Command("dd", "if=/dev/zero", "of="+dir+"/fill", "bs=1M", "count=4").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "No space left") {
		t.Fatalf("4 MiB into a 1 MiB scratch: err %v, %s; want ENOSPC", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "fill")); !os.IsNotExist(err) {
		t.Fatalf("the scratch's file shows on the host (%v): the mount must stay in the daemon's namespace", err)
	}
}

func TestRootlessForkBombIsHeldByTheDelegatedCgroupsPidsLimit(t *testing.T) {
	d, c, ctx := rootlessDaemon(t)
	delegated := delegatedCgroup(t)
	var pidsMax []byte
	var cg string
	out := runRootless(t, d, c, ctx, `(i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done) 2>/dev/null; n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo procs=$n; echo ceval-ready; exec sleep 600`,
		func(id string) []ctroci.SpecOpts {
			cg = filepath.Join("/sys/fs/cgroup/pids", delegated, id)
			t.Cleanup(func() { os.Remove(cg) })
			return []ctroci.SpecOpts{ctroci.WithPidsLimit(64), launcher.WithRootlessLimits(delegated, id, 64)}
		}, nil,
		func(uint32) {
			var err error
			pidsMax, err = os.ReadFile(filepath.Join(cg, "pids.max"))
			if err != nil {
				t.Error(err)
			}
		})
	if strings.TrimSpace(string(pidsMax)) != "64" {
		t.Errorf("pids.max of the run's cgroup under the delegated subtree = %q, want 64", pidsMax)
	}
	if got := procCount(t, out); got > 64 {
		t.Fatalf("%d processes in the container: the delegated cgroup's pids.max did not hold the fork bomb", got)
	}
}

func TestRootlessGatewayListenerServesOnlyInsideTheContainersLoopback(t *testing.T) {
	d, c, ctx := rootlessDaemon(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var srv *http.Server
	out := runRootless(t, d, c, ctx, `wget -q -O - http://127.0.0.1:80/ 2>&1; echo; echo ceval-ready; exec sleep 600`, rlimitMode,
		func(pid uint32) {
			l, err := launcher.ListenInNetns(pid, "127.0.0.1:80", self)
			if err != nil {
				t.Fatal(err)
			}
			srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "served-in-netns") })}
			go srv.Serve(l)
		}, func(uint32) {})
	srv.Close()
	if !strings.Contains(out, "served-in-netns") {
		t.Fatalf("the container's wget of 127.0.0.1:80: %q, want the host's listener's answer", out)
	}
}

func TestRootlessListenInTheNetnsOfAProcessNotOursIsRefused(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may enter any namespace")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if l, err := launcher.ListenInNetns(1, "127.0.0.1:0", self); err == nil {
		l.Close()
		t.Fatal("a non-root user listened in PID 1's network namespace")
	}
}

// slotMode is rlimitMode in run slot's own ID slice.
func slotMode(slot int) func(id string) []ctroci.SpecOpts {
	return func(id string) []ctroci.SpecOpts {
		return append(rlimitMode(id), launcher.WithRootlessRunIDs(slot))
	}
}

func TestRootlessRunsInDistinctSlicesHaveDistinctHostUIDs(t *testing.T) {
	d, c, ctx := rootlessDaemon(t)
	uids := map[int]int{}
	for _, slot := range []int{0, 1} {
		runRootless(t, d, c, ctx, `echo ceval-ready; exec sleep 600`, slotMode(slot), nil, func(pid uint32) {
			u, _, _ := strings.Cut(procStatus(t, pid)["Uid"], " ")
			uids[slot], _ = strconv.Atoi(u)
		})
	}
	data, err := os.ReadFile("/etc/subuid")
	if err != nil {
		t.Fatal(err)
	}
	base, _, _, err := launcher.SubordinateIDs(data, os.Getenv("USER"), os.Getuid(), 65536)
	if err != nil {
		t.Fatal(err)
	}
	// rootlesskit maps its ID n (n >= 1) to base+n-1; the agent is 2000 in its slice.
	for slot, got := range uids {
		if want := int(base) + int(launcher.RootlessSliceHostID(slot)) + 2000 - 1; got != want {
			t.Errorf("slot %d: agent's host UID %d, want %d (its own slice of %s's subordinate range)", slot, got, want, os.Getenv("USER"))
		}
	}
}

// TestRootlessForkBombInOneRunDoesNotStarveAnother: RLIMIT_NPROC counts per UID, so a run
// that holds its whole limit must not leave a concurrent run unable to fork.
func TestRootlessForkBombInOneRunDoesNotStarveAnother(t *testing.T) {
	d, c, ctx := rootlessDaemon(t)
	bomb := `(i=0; while [ $i -lt 200 ]; do sleep 600 & i=$((i+1)); done) 2>/dev/null; echo ceval-ready; exec sleep 600`
	var out string
	runRootless(t, d, c, ctx, bomb, slotMode(0), nil, func(uint32) {
		out = runRootless(t, d, c, ctx, `n=0; for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1 & n=$((n+1)); done; wait; echo forked=$n`, slotMode(1), nil, nil)
	})
	if !strings.Contains(out, "forked=10") {
		t.Fatalf("a run beside a fork bomb at its limit: %q, want 10 forks", out)
	}
}

func TestRootlessMemoryHogIsStoppedByTheDelegatedCgroupsMemoryLimit(t *testing.T) {
	d, c, ctx := rootlessDaemon(t)
	delegated := delegatedCgroup(t)
	var cg string
	// 256 MB into one shell variable, against a 64 MiB limit.
	out := runRootless(t, d, c, ctx, `x=$(head -c 268435456 /dev/zero | tr '\0' a); echo survived ${#x}`,
		func(id string) []ctroci.SpecOpts {
			cg = filepath.Join("/sys/fs/cgroup/memory", delegated, id)
			return []ctroci.SpecOpts{ctroci.WithMemoryLimit(64 << 20), launcher.WithRootlessLimits(delegated, id, 64)}
		}, nil, nil)
	if strings.Contains(out, "survived") {
		t.Fatalf("the hog survived a 64 MiB limit: %q (cgroup %s)", out, cg)
	}
}
