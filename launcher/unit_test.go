package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/containerd/cgroups/v3/cgroup1/stats"
	v2 "github.com/containerd/cgroups/v3/cgroup2/stats"
	"github.com/containerd/typeurl/v2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestCappedWriterKeepsCapDiscardsRestAndNeverFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	w, err := createCapped(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 300)
	for range 10 {
		n, err := w.Write(chunk)
		if n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v: a short write or error stops the IO copy and blocks the agent", n, err)
		}
	}
	if !w.Cut() {
		t.Error("Cut false after 3000 bytes into a 1000-byte cap")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	got, _ := os.ReadFile(path)
	want := strings.Repeat("x", 1000) + "\n[ceval: output cut at 1000 bytes]\n"
	if string(got) != want {
		t.Errorf("file = %d bytes ending %q", len(got), got[max(0, len(got)-40):])
	}
}

func TestCappedWriterUnderCapIsUntouched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	w, err := createCapped(path, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("hello\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "hello\n" || w.Cut() {
		t.Errorf("file %q cut %v", got, w.Cut())
	}
}

func TestCappedWriterKeepsReadingAfterAWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	w, err := createCapped(path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	w.f.Close() // every file write now fails, as on a full disk
	for range 3 {
		if n, err := w.Write([]byte("data")); n != 4 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := w.Close(); err == nil {
		t.Error("Close hid the write error")
	}
}

func TestDecodeMetrics(t *testing.T) {
	tests := []struct {
		name string
		msg  any
		want Resources
	}{
		{
			name: "cgroup v1",
			msg: &v1.Metrics{
				Pids:             &v1.PidsStat{Current: 7, Limit: 64},
				Memory:           &v1.MemoryStat{Usage: &v1.MemoryEntry{Usage: 10 << 20, Max: 60 << 20, Limit: 64 << 20}},
				MemoryOomControl: &v1.MemoryOomControl{OomKill: 2},
			},
			want: Resources{MemoryBytes: 10 << 20, MemoryPeakBytes: 60 << 20, MemoryLimitBytes: 64 << 20, OOMKills: 2, Pids: 7, PidsPeak: 7, PidsLimit: 64},
		},
		{
			// Shaped like a cgroup v2 reading with memory.peak (this host is v1: not recorded here).
			name: "cgroup v2 with memory.peak",
			msg: &v2.Metrics{
				Pids:         &v2.PidsStat{Current: 3, Limit: 512},
				Memory:       &v2.MemoryStat{Usage: 4407296, UsageLimit: 2147483648, MaxUsage: 5234688, Anon: 1081344, File: 2162688},
				MemoryEvents: &v2.MemoryEvents{Max: 12, Oom: 1, OomKill: 1},
			},
			want: Resources{MemoryBytes: 4407296, MemoryPeakBytes: 5234688, MemoryLimitBytes: 2147483648, OOMKills: 1, Pids: 3, PidsPeak: 3, PidsLimit: 512},
		},
		{
			name: "cgroup v2 without memory.peak falls back to usage",
			msg: &v2.Metrics{
				Pids:   &v2.PidsStat{Current: 1, Limit: 512},
				Memory: &v2.MemoryStat{Usage: 4096, UsageLimit: 1 << 30},
			},
			want: Resources{MemoryBytes: 4096, MemoryPeakBytes: 4096, MemoryLimitBytes: 1 << 30, Pids: 1, PidsPeak: 1, PidsLimit: 512},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := typeurl.MarshalAny(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeMetrics(a)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeMetricsRejectsUnknownType(t *testing.T) {
	a, err := typeurl.MarshalAny(timestamppb.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeMetrics(a); err == nil || !strings.Contains(err.Error(), "unknown type") {
		t.Fatalf("err = %v", err)
	}
}

func TestCgroupProcs(t *testing.T) {
	write := func(t *testing.T, path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("v1 reads pids and memory", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, "pids/ns/id/cgroup.procs"), "")
		write(t, filepath.Join(root, "memory/ns/id/cgroup.procs"), "42\n")
		procs, err := cgroupProcs(root, "/ns/id")
		if err != nil || len(procs) != 1 || procs[0] != "42" {
			t.Fatalf("procs %q err %v", procs, err)
		}
	})
	t.Run("v2 reads the unified cgroup", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, "cgroup.controllers"), "cpu memory pids\n")
		write(t, filepath.Join(root, "ns/id/cgroup.procs"), "")
		procs, err := cgroupProcs(root, "/ns/id")
		if err != nil || len(procs) != 0 {
			t.Fatalf("procs %q err %v", procs, err)
		}
	})
	t.Run("missing cgroup is an error, not empty", func(t *testing.T) {
		if _, err := cgroupProcs(t.TempDir(), "/ns/id"); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("systemd path is an error", func(t *testing.T) {
		if _, err := cgroupProcs(t.TempDir(), "system.slice:ceval:id"); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("path cannot climb out of the hierarchy", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, "pids/cgroup.procs"), "1\n")
		procs, err := cgroupProcs(root, "../../..")
		if err != nil || len(procs) != 1 {
			t.Fatalf("procs %q err %v: want the hierarchy root, nothing above it", procs, err)
		}
	})
}

func TestChownTreeDoesNotFollowSymlinkOutOfTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("host"), 0o600); err != nil {
		t.Fatal(err)
	}
	outDir := t.TempDir()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "a/b"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "a/b/file"), nil, 0o644))
	must(t, os.Symlink(outside, filepath.Join(dir, "a/link")))
	must(t, os.Symlink(outDir, filepath.Join(dir, "dirlink")))

	if err := ChownTree(dir, 2000, 2000); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".", "a", "a/b", "a/b/file", "a/link", "dirlink"} {
		if uid := owner(t, filepath.Join(dir, p)); uid != 2000 {
			t.Errorf("%s owned by %d, want 2000", p, uid)
		}
	}
	for _, p := range []string{outside, outDir} {
		if uid := owner(t, p); uid != 0 {
			t.Errorf("link target %s chowned to %d", p, uid)
		}
	}
}

func TestMountScratchCapsSizeAndHandsOnlyItsRootToTheAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount needs root")
	}
	dir := t.TempDir()
	unmount, err := MountScratch(dir, 1, 16, 2000, 2000)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unmount(); err != nil {
			t.Error(err)
		}
		if err := unmount(); err != nil {
			t.Errorf("second unmount: %v", err)
		}
	}()
	var st unix.Stat_t
	must(t, unix.Stat(dir, &st))
	if st.Uid != 2000 || st.Gid != 2000 || st.Mode&0o7777 != 0o700 {
		t.Errorf("root uid %d gid %d mode %o", st.Uid, st.Gid, st.Mode&0o7777)
	}
	err = os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writing 2 MiB into 1 MiB: %v, want ENOSPC", err)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if !regexp.MustCompile(regexp.QuoteMeta(dir) + ` .*nosuid,nodev.* - tmpfs ceval-scratch`).Match(mounts) {
		t.Errorf("mount of %s not tmpfs nosuid,nodev", dir)
	}
}

func TestMountScratchRefusesZeroSize(t *testing.T) {
	if _, err := MountScratch(t.TempDir(), 0, 16, 2000, 2000); err == nil {
		t.Fatal("mounted an uncapped tmpfs")
	}
}

func TestBootIDIsAUUID(t *testing.T) {
	id, err := BootID()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("boot id %q", id)
	}
}

// TestExecRunsOnlyTheContainersOwnHardenedProcess keeps the exec path narrow: an exec gets
// whatever capabilities its own process spec asks for, so no method takes one (Task.Exec
// reuses the container's), and Exec refuses a container whose process has a capability or
// lacks no_new_privs.
func TestExecRunsOnlyTheContainersOwnHardenedProcess(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[*Container](), reflect.TypeFor[*Task]()} {
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			for j := range m.Type.NumIn() {
				if in := m.Type.In(j); in == reflect.TypeFor[*specs.Process]() || in == reflect.TypeFor[specs.Process]() {
					t.Errorf("%s.%s takes a process spec", typ, m.Name)
				}
			}
			if strings.Contains(strings.ToLower(m.Name), "exec") && m.Name != "Exec" {
				t.Errorf("%s has method %s", typ, m.Name)
			}
		}
	}
	for name, p := range map[string]*specs.Process{
		"a capability":    {NoNewPrivileges: true, Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_NET_RAW"}}},
		"no no_new_privs": {NoNewPrivileges: false, Capabilities: &specs.LinuxCapabilities{}},
		"an ambient one":  {NoNewPrivileges: true, Capabilities: &specs.LinuxCapabilities{Ambient: []string{"CAP_SYS_ADMIN"}}},
	} {
		tk := &Task{ctr: &Container{spec: Spec{ID: "x"}, process: p}}
		if _, err := tk.Exec(context.Background(), "probe", []string{"true"}, time.Second, nil); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: exec not refused: %v", name, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func owner(t *testing.T, p string) uint32 {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(p, &st))
	return st.Uid
}

// fakeCgroup is a cgroup v1 layout under a temporary root whose pids cgroup.procs lists pids.
func fakeCgroup(t *testing.T, pids ...int) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "pids", "ns", "id")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range pids {
		fmt.Fprintf(&b, "%d\n", p)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// blockedProcess starts a process that runs until release is called, which waits for it.
func blockedProcess(t *testing.T) (pid int, release func()) {
	t.Helper()
	cmd := exec.Command("cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			stdin.Close()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(release)
	return cmd.Process.Pid, release
}

func TestCgroupWaitReportsAProcessThatOutlivesTheInit(t *testing.T) {
	pid, _ := blockedProcess(t)
	err := waitCgroupEmpty(fakeCgroup(t, pid), "/ns/id", 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(pid)) {
		t.Fatalf("a live process in the cgroup: err %v, want one naming PID %d", err, pid)
	}
}

func TestCgroupWaitEndsWhenTheLastProcessExits(t *testing.T) {
	pid, release := blockedProcess(t)
	done := make(chan error, 1)
	go func() { done <- waitCgroupEmpty(fakeCgroup(t, pid), "/ns/id", time.Minute) }()
	release() // the process exits and is reaped; the fake listing keeps naming it
	if err := <-done; err != nil {
		t.Fatalf("the cgroup's last process exited: %v", err)
	}
}

func TestCgroupWaitCountsAnExitedUnreapedProcessAsGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	// Wait for the exit without reaping it: the process stays a zombie.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if err := waitCgroupEmpty(fakeCgroup(t, cmd.Process.Pid), "/ns/id", time.Minute); err != nil {
		t.Fatalf("an exited process awaiting its parent's wait: %v", err)
	}
}

func TestCgroupWaitOnAnEmptyOrMissingCgroup(t *testing.T) {
	if err := waitCgroupEmpty(fakeCgroup(t), "/ns/id", 0); err != nil {
		t.Fatal(err)
	}
	if err := waitCgroupEmpty(t.TempDir(), "/ns/id", time.Minute); err == nil {
		t.Fatal("a missing cgroup counted as empty")
	}
}

func TestRedirectInNetnsRefusesWhatIsNotAnIPv4PortPair(t *testing.T) {
	for _, r := range []Redirect{
		{Addr: netip.MustParseAddr("::1"), Port: 80, ToPort: 8080},
		{Addr: netip.MustParseAddr("127.0.10.1"), Port: 0, ToPort: 8080},
		{Addr: netip.MustParseAddr("127.0.10.1"), Port: 80},
	} {
		if err := RedirectInNetns(uint32(os.Getpid()), []Redirect{r}); err == nil || !strings.Contains(err.Error(), "want an IPv4 address and two ports") {
			t.Errorf("%+v: %v", r, err)
		}
	}
}
