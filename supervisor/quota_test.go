package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/task"
)

// buildQuotaHold builds testdata/quotahold, static, for the agent containers.
func buildQuotaHold(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "quotahold")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/quotahold")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build quotahold: %v\n%s", err, out)
	}
	return bin
}

// quotaSandbox creates a sandbox whose agent is quotahold with args.
func quotaSandbox(t *testing.T, ctx context.Context, cfg sandbox.Config, bin string, args ...string) *local.Sandbox {
	t.Helper()
	cfg.Argv = append([]string{"/opt/quotahold"}, args...)
	cfg.Mounts = []oci.Mount{{Source: bin, Destination: "/opt/quotahold"}}
	cfg.Dir = filepath.Join(t.TempDir(), "scratch")
	cfg.StdoutPath = filepath.Join(t.TempDir(), "stdout")
	cfg.StderrPath = cfg.StdoutPath + ".err"
	sb, err := local.NewSandbox(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sb.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return sb
}

// Per-UID kernel quotas are the run's own: while one run holds every inotify instance and
// all the message-queue bytes its user may have, a second run at the same time still gets
// all of its own. With runs sharing host UID 2000 (no user namespace), or user namespaces
// made by runc (owned by root, which the kernel charges for everything inside them), the
// second run gets none.
func TestConcurrentRunsEachGetTheirFullInotifyAndMqueueQuota(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	raw, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
	if err != nil {
		t.Fatal(err)
	}
	limit := strings.TrimSpace(string(raw))
	if _, err := images.Resolve(ctx, c, images.DefaultName, nil, ""); err != nil {
		t.Fatal(err)
	}
	bin := buildQuotaHold(t)
	base := sandbox.Config{
		Client: c, Image: images.DefaultName, Grace: time.Second,
		Limits: task.Limits{Timeout: time.Minute, MemoryMB: 256, Pids: 64, CPUs: 1, DiskMB: 16},
	}

	a := base
	a.ID = "quota-a-" + strconv.Itoa(os.Getpid())
	sbA := quotaSandbox(t, ctx, a, bin, limit, "hold")
	type done struct {
		out *sandbox.Outcome
		err error
	}
	doneA := make(chan done, 1)
	go func() {
		out, err := sbA.Run(ctx, nil)
		doneA <- done{out, err}
	}()
	// A holds its whole quota once /workspace/held exists (or it ended early: then fail).
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(sbA.Workspace, "held")); err == nil {
			break
		}
		select {
		case d := <-doneA:
			t.Fatalf("run A ended before holding its quota: %+v %v: %s", d.out, d.err, readFile(sbA.Config().StdoutPath, sbA.Config().StderrPath))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("run A did not take its quota within a minute")
		}
	}

	b := base
	b.ID = "quota-b-" + strconv.Itoa(os.Getpid())
	sbB := quotaSandbox(t, ctx, b, bin, limit)
	outB, err := sbB.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	gotB := readFile(sbB.Config().StdoutPath, sbB.Config().StderrPath)

	if err := os.WriteFile(filepath.Join(sbA.Workspace, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dA := <-doneA
	if dA.err != nil {
		t.Fatal(dA.err)
	}
	gotA := readFile(sbA.Config().StdoutPath, sbA.Config().StderrPath)
	t.Logf("run A: %s; run B: %s", gotA, gotB)
	if dA.out.Exit.Code != 0 || !strings.HasPrefix(gotA, "inotify "+limit+" ") {
		t.Fatalf("run A alone did not get the full quota (exit %d): %s", dA.out.Exit.Code, gotA)
	}
	if outB.Exit.Code != 0 {
		t.Fatalf("run B was denied its quota while run A held A's (exit %d): %s", outB.Exit.Code, gotB)
	}
	if firstLine(gotA) != firstLine(gotB) {
		t.Fatalf("run B got %q while run A held %q: the runs share a quota", firstLine(gotB), firstLine(gotA))
	}
	if dA.out.Isolation.HostUID == outB.Isolation.HostUID {
		t.Errorf("both runs' agents are host UID %d", dA.out.Isolation.HostUID)
	}
}

func readFile(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			b.WriteString(err.Error())
		}
		b.Write(data)
	}
	return b.String()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
