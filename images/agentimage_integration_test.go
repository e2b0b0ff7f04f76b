package images_test

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/task"
)

// logWriter sends a build's progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestAgentImageRunsRealCLIsInSandbox builds the agent image with both real CLIs (from the
// download cache, downloading on first use), then runs them in exactly the sandbox an
// agent gets, as UID 2000.
func TestAgentImageRunsRealCLIsInSandbox(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	for _, p := range []string{images.DefaultBusybox, images.MuslLoader, images.BashStatic} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true and %s is missing: apt-get install busybox-static musl bash-static (make setup)", p)
			}
			t.Skipf("%s missing: apt-get install busybox-static musl bash-static", p)
		}
	}
	name := "ceval.local/test-agent:latest"
	t.Cleanup(func() {
		if err := c.ImageService().Delete(ctx, name, ctrimages.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
			t.Errorf("delete %s: %v", name, err)
		}
	})

	start := time.Now()
	built, err := images.BuildAgent(ctx, c, images.AgentOptions{Name: name, Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("build: %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	kept, err := images.BuildAgent(ctx, c, images.AgentOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second build (kept): %s", time.Since(start).Round(time.Millisecond))
	if !kept.Kept || kept.Image != built.Image || kept.Inputs != built.Inputs {
		t.Fatalf("second build with the same inputs: %+v, want the first image (%+v) kept", kept, built)
	}

	start = time.Now()
	pc, err := images.NewPreflightCache("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := images.Resolve(ctx, c, name, pc, ""); err != nil {
		t.Fatalf("the agent image does not pass the preflight a run does: %v", err)
	}
	t.Logf("preflight: %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	var stdout, stderr bytes.Buffer
	script := `set -e
echo "claude: $(claude --version)"
echo "codex: $(codex --version)"
echo "bash: $(bash --version | head -n 1)"
echo "rg: $(rg --version | head -n 1)"
echo "id: $(id -u):$(id -g)"`
	s, err := local.NewSandbox(ctx, sandbox.Config{
		Client: c, Image: name, ID: "agent-image-" + record.NewRunID(time.Now()),
		Argv:    []string{"/bin/sh", "-c", script},
		Env:     []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"},
		Limits:  task.Limits{Timeout: time.Minute, MemoryMB: policy.DefaultMemoryMB, CPUs: policy.DefaultCPUs, Pids: policy.DefaultPids, DiskMB: policy.DefaultDiskMB},
		Network: policy.NetworkNone, Dir: t.TempDir() + "/scratch",
		Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(ctx, nil)
	if cerr := s.Close(ctx); cerr != nil {
		t.Errorf("close sandbox: %v", cerr)
	}
	if err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	t.Logf("sandbox run: %s", time.Since(start).Round(time.Millisecond))
	if out.Exit.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", out.Exit.Code, &stdout, &stderr)
	}
	if out.Isolation == nil || out.Isolation.UID != policy.AgentUID {
		t.Fatalf("isolation attestation %+v, want UID %d", out.Isolation, policy.AgentUID)
	}
	for _, want := range []string{
		`(?m)^claude: 2\.1\.332 \(Claude Code\)$`,
		`(?m)^codex: codex-cli 0\.169\.0$`,
		`(?m)^bash: GNU bash, version 5\.`,
		`(?m)^rg: ripgrep \d+\.`,
		`(?m)^id: 2000:2000$`,
	} {
		if !regexp.MustCompile(want).Match(stdout.Bytes()) {
			t.Errorf("output lacks %s\nstdout:\n%s\nstderr:\n%s", want, &stdout, &stderr)
		}
	}
}
