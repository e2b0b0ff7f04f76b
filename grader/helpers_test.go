package grader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// tree describes a workspace: a key ending in "/" is a directory, a value starting with
// "symlink:" is a symlink to the rest, anything else is a regular file's content.
type tree map[string]string

// makeTree writes tr under a fresh directory and returns it.
func makeTree(t *testing.T, tr tree) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "workspace")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, content := range tr {
		p := filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(rel, "/")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(rel, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(content, "symlink:"):
			err = os.Symlink(strings.TrimPrefix(content, "symlink:"), p)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// take snapshots a workspace directory with lim.
func take(t *testing.T, src string, lim snapshot.Limits) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Take(src, filepath.Join(t.TempDir(), "snapshot"), lim)
	if err != nil {
		t.Fatalf("snapshot.Take: %v", err)
	}
	return s
}

// snap builds and snapshots a workspace with the default limits.
func snap(t *testing.T, tr tree) *snapshot.Snapshot {
	t.Helper()
	return take(t, makeTree(t, tr), snapshot.Limits{})
}

// crit fills the defaults task.Load would give a criterion.
func crit(c task.Criterion) task.Criterion {
	if c.Weight == 0 {
		c.Weight = task.DefaultWeight
	}
	if c.PassThreshold == 0 {
		c.PassThreshold = task.DefaultPassThreshold
	}
	return c
}

// informational marks a criterion weight 0 after crit's defaults.
func informational(c task.Criterion) task.Criterion {
	c = crit(c)
	c.Weight = 0
	return c
}

func newTask(cs ...task.Criterion) *task.Task {
	return &task.Task{ID: "t", Criteria: cs}
}

// gradeOne grades a single criterion against s and returns its result.
func gradeOne(t *testing.T, c task.Criterion, s *snapshot.Snapshot) CriterionResult {
	t.Helper()
	r := Grade(context.Background(), newTask(crit(c)), s, Options{})
	if len(r.Criteria) != 1 {
		t.Fatalf("got %d criterion results, want 1", len(r.Criteria))
	}
	return r.Criteria[0]
}

// want checks a criterion result's status, score and (when given) a details fragment.
func want(t *testing.T, got CriterionResult, status Status, score float64, detail string) {
	t.Helper()
	if got.Status != status || !near(got.Score, score) {
		t.Errorf("got %s score %v (%s), want %s score %v", got.Status, got.Score, got.Details, status, score)
	}
	if got.Passed != (status == Pass) {
		t.Errorf("passed = %v with status %s", got.Passed, got.Status)
	}
	if detail != "" && !strings.Contains(got.Details, detail) {
		t.Errorf("details %q do not mention %q", got.Details, detail)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// fakeRewards are the stdouts of the commands "rewards" and "bad-reward" of fakeExecutor.
var fakeRewards = map[string]string{"rewards": `{"correctness": 1, "performance": 0.5}`, "bad-reward": `{"correctness": "high"}`}

// fakeExecutor grades run_command criteria by their command: "pass", "fail", "half",
// "error" (ceval-side failure) or "nan".
type fakeExecutor struct{ references []*task.Dir }

func (f *fakeExecutor) Execute(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot, reference *task.Dir) (Scored, error) {
	f.references = append(f.references, reference)
	switch c.Spec.(*task.RunCommandSpec).Command {
	case "pass":
		return Scored{Score: 1, Details: "ran"}, nil
	case "half":
		return Scored{Score: 0.5, Details: "ran"}, nil
	case "too-much":
		return Scored{Score: 7, Details: "ran"}, nil
	case "error":
		return Scored{}, errors.New("sandbox broke")
	case "workspace":
		return Scored{}, fmt.Errorf("verifier: %w", &WorkspaceError{Reason: "the workspace holds a file too large to copy"})
	case "rewards", "bad-reward":
		return ScoreCommand(c, CommandRun{Stdout: []byte(fakeRewards[c.Spec.(*task.RunCommandSpec).Command])})
	}
	return Scored{Details: "ran"}, nil
}

// snapshotLimits is the default limits with a per-file cap of maxFile bytes.
func snapshotLimits(maxFile int64) snapshot.Limits {
	return snapshot.Limits{MaxFileBytes: maxFile}
}
