package grader

import (
	"context"
	"errors"
	"fmt"

	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// NotGradedError is what an Executor returns when it cannot run a criterion for a reason on
// the user's side that they can fix (no containerd for a verifier container): the criterion
// is NOT_GRADED with Reason, not ERROR.
type NotGradedError struct{ Reason string }

func (e *NotGradedError) Error() string { return e.Reason }

// WorkspaceError is what an Executor (or the agent judge) returns when the workspace it
// grades is the cause: too many files or bytes to hand on, a file it cannot take. The
// workspace is the agent's doing, so the criterion is FAILURE with Reason, never ERROR
// (which is excluded from pass rates and re-run by --resume).
type WorkspaceError struct{ Reason string }

func (e *WorkspaceError) Error() string { return e.Reason }

// workspaceFault reports whether err says the workspace made the criterion fail, and why.
func workspaceFault(err error) (string, bool) {
	var we *WorkspaceError
	if errors.As(err, &we) {
		return we.Reason, true
	}
	return "", false
}

// Tiers is the Executor of a grade: each executing criterion goes to the executor of its
// tier (task.Criterion.Tier), so `ceval run`, `grade` and `regrade` grade both alike.
type Tiers struct {
	WASM      Executor // the WebAssembly sandbox; nil leaves WASM criteria NOT_GRADED
	Container Executor // verifier containers; nil leaves them NOT_GRADED with ContainerMissing
	// ContainerMissing says why Container is nil and what to do about it.
	ContainerMissing string
}

// Execute runs c in its tier's executor.
func (t Tiers) Execute(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot, reference *task.Dir) (Scored, error) {
	switch c.Tier() {
	case task.TierContainer:
		if t.Container == nil {
			why := t.ContainerMissing
			if why == "" {
				why = "no verifier containers in this grade"
			}
			return Scored{}, &NotGradedError{Reason: "sandbox: container: " + why}
		}
		return t.Container.Execute(ctx, c, s, reference)
	case task.TierWASM:
		if t.WASM == nil {
			return Scored{}, &NotGradedError{Reason: "executing criteria run in the WASM sandbox, which this grade has none of"}
		}
		return t.WASM.Execute(ctx, c, s, reference)
	}
	return Scored{}, fmt.Errorf("criterion type %s executes nothing", c.Type)
}

// notGraded reports whether err says the criterion could not be graded, and why.
func notGraded(err error) (string, bool) {
	var ng *NotGradedError
	if errors.As(err, &ng) {
		return ng.Reason, true
	}
	return "", false
}
