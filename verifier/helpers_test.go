package verifier

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// newExecutor connects to the test containerd and returns an Executor over the default
// image.
func newExecutor(t *testing.T) (*Executor, *client.Client, context.Context) {
	t.Helper()
	c, ctx := ctrtest.Connect(t)
	if _, err := images.EnsureDefault(ctx, c, images.DefaultOptions{}); err != nil {
		t.Fatalf("default image: %v", err)
	}
	e, err := New(Options{Client: c, Grace: 500 * time.Millisecond, ScratchDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, c, ctx
}

// snap snapshots a workspace holding files (path -> content; a path ending in "*" is made
// executable).
func snap(t *testing.T, files map[string]string) *snapshot.Snapshot {
	t.Helper()
	src := t.TempDir()
	for p, content := range files {
		mode := os.FileMode(0o644)
		if p[len(p)-1] == '*' {
			p, mode = p[:len(p)-1], 0o755
		}
		full := filepath.Join(src, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	s, err := snapshot.Take(src, filepath.Join(t.TempDir(), "snap"), snapshot.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// container is a container-tier run_command with the defaults task.Load gives it.
func container(command string) *task.Criterion {
	return &task.Criterion{
		Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: command, Execution: task.Execution{Timeout: 20 * time.Second}, GraderTier: task.GraderTier{Verifier: &task.Verifier{Image: images.DefaultName, Network: policy.NetworkNone,
			MemoryMB: 256, Pids: 64, DiskMB: 64}}}, Weight: 1, PassThreshold: task.DefaultPassThreshold,
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func scoreOf(c *task.Criterion, r *Run) (float64, string, error) {
	return scoreParts(grader.ScoreCommand(c, r.CommandRun))
}

// scoreParts splits a grader.Scored for tests that check its score and details.
func scoreParts(sc grader.Scored, err error) (float64, string, error) {
	return sc.Score, sc.Details, err
}
