package grader

import (
	"context"
	"fmt"
	"testing"

	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// An executor that could not take the workspace (its size or shape: the agent's doing) fails
// the criterion with the reason; it is not ERROR, which pass rates leave out.
func TestWorkspaceFaultOfAnExecutorIsFailure(t *testing.T) {
	s := snap(t, tree{"a": "x"})
	c := crit(task.Criterion{Type: task.RunCommand, Command: "workspace"})
	r := Grade(context.Background(), newTask(c), s, Options{Executor: &fakeExecutor{}})
	want(t, r.Criteria[0], Fail, 0, "too large to copy")
}

type workspaceFaultJudge struct{}

func (workspaceFaultJudge) RunAgentJudge(context.Context, *task.Criterion, *snapshot.Snapshot) (*judge.Verdict, error) {
	return nil, fmt.Errorf("judge: %w", &WorkspaceError{Reason: "the workspace is too large to hand to a judge agent"})
}

// An agent_judge whose workspace is too large to hand to the judge fails with the reason.
func TestWorkspaceFaultOfTheAgentJudgeIsFailure(t *testing.T) {
	s := snap(t, tree{"a": "x"})
	c := crit(task.Criterion{Type: task.AgentJudge, Rubric: "r"})
	r := Grade(context.Background(), newTask(c), s, Options{AgentJudge: workspaceFaultJudge{}})
	want(t, r.Criteria[0], Fail, 0, "too large to hand to a judge agent")
}
