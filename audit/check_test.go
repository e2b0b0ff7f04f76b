package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/supervisor"
)

// A task every audit run would refuse (a simulated_user with no judge) is refused whole,
// before any run starts: no containerd client is given, so a run that started would fail
// on ceval's side instead, run by run.
func TestAuditRefusesABadTaskBeforeAnyRunStarts(t *testing.T) {
	good := load(t, "../examples/audit/sound/task.yaml")
	bad := load(t, writeTask(t, "task_id: asks\ninitial_prompt: p\nagent: {type: command, command: [true]}\n"+
		"simulated_user: {instructions: be a user, max_turns: 2}\nsuccess_criteria: [{type: file_exists, path: x}]\n", map[string]string{}))
	runs := t.TempDir()
	ran := 0
	reps, err := Audit(context.Background(), []Target{{Task: good}, {Task: bad}}, Options{
		Run:      supervisor.Options{RunsDir: runs, RunID: "r"},
		Progress: func(Target, Run) { ran++ },
	})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || reps != nil || !strings.Contains(err.Error(), bad.Path+": ") || !strings.Contains(err.Error(), "simulated_user") {
		t.Fatalf("Audit = %d reports, %v; want none and an InputError naming %s and simulated_user", len(reps), err, bad.Path)
	}
	if ran != 0 {
		t.Errorf("%d runs went before the refusal", ran)
	}
	if left, _ := os.ReadDir(filepath.Join(runs)); len(left) != 0 {
		t.Errorf("the refused audit wrote %v", left)
	}
}
