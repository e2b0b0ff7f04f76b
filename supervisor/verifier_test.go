package supervisor

import (
	"context"
	"testing"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// containersAtGrade records, for each criterion it grades, the containers that exist then.
type containersAtGrade struct {
	c    *client.Client
	seen [][]string
}

func (e *containersAtGrade) Execute(ctx context.Context, _ *task.Criterion, _ *snapshot.Snapshot, _ *task.Dir) (grader.Scored, error) {
	cs, err := e.c.Containers(ctx)
	if err != nil {
		return grader.Scored{}, err
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID())
	}
	e.seen = append(e.seen, ids)
	return grader.Scored{Score: 1, Details: "ran"}, nil
}

// A verifier container must never meet the agent's: the agent's container is deleted (its
// processes, mounts and scratch filesystems gone) before a container-tier criterion runs.
func TestVerifierStartsOnlyAfterTheAgentsContainerIsDeleted(t *testing.T) {
	c, _ := ctrtest.Connect(t)
	ex := &containersAtGrade{c: c}
	doc := agentTask("verifier-after-agent", "echo done > out.txt; sleep 1000 & exit 0",
		"  - {type: run_command, sandbox: container, command: 'cat out.txt'}\n")
	res, err := runTask(t, doc, nil, Options{Executor: ex})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != grader.TaskSuccess || len(ex.seen) != 1 {
		t.Fatalf("status %s, graded %d criteria", res.Status, len(ex.seen))
	}
	if len(ex.seen[0]) != 0 {
		t.Errorf("containers alive while the verifier criterion was graded: %v", ex.seen[0])
	}
}
