package grader

import (
	"context"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

func TestTiersSendEachCriterionToItsTier(t *testing.T) {
	s := snap(t, tree{"a.txt": "x"})
	wasmCrit := crit(task.Criterion{Type: task.RunCommand, Command: "pass"})
	ctrCrit := crit(task.Criterion{Type: task.RunCommand, Command: "half", Verifier: &task.Verifier{Image: "i"}})
	wasmEx, ctrEx := &fakeExecutor{}, &fakeExecutor{}

	r := Grade(context.Background(), newTask(wasmCrit, ctrCrit), s, Options{Executor: Tiers{WASM: wasmEx, Container: ctrEx}})
	want(t, r.Criteria[0], Pass, 1, "ran")
	want(t, r.Criteria[1], Fail, 0.5, "ran")
	if len(wasmEx.references) != 1 || len(ctrEx.references) != 1 {
		t.Errorf("WASM ran %d criteria, the container tier %d; want 1 each", len(wasmEx.references), len(ctrEx.references))
	}

	t.Run("a grade without containerd leaves container criteria NOT_GRADED with the reason", func(t *testing.T) {
		r := Grade(context.Background(), newTask(wasmCrit, ctrCrit), s, Options{Executor: Tiers{WASM: &fakeExecutor{}, ContainerMissing: "containerd is not reachable at /x.sock: start it"}})
		want(t, r.Criteria[0], Pass, 1, "")
		want(t, r.Criteria[1], NotGraded, 0, "containerd is not reachable at /x.sock: start it")
		if r.Status != TaskNotGraded {
			t.Errorf("task status %s, want %s", r.Status, TaskNotGraded)
		}
	})
}

func TestScoreCommand(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name   string
		c      task.Criterion
		run    CommandRun
		score  float64
		detail string
	}{
		{"exit 0 passes", task.Criterion{}, CommandRun{}, 1, "exit code 0"},
		{"another exit code fails", task.Criterion{}, CommandRun{ExitCode: 1, Stderr: []byte("boom\n")}, 0, `exit code 1, want 0; stdout ""; stderr "boom"`},
		{"the expected exit code", task.Criterion{ExpectedExitCode: 3}, CommandRun{ExitCode: 3}, 1, "exit code 3"},
		{"a limit scores 0 whatever the exit", task.Criterion{}, CommandRun{Limit: "timeout: still running after 1s; stopped"}, 0, "timeout"},
		{"exact stdout ignores trailing newlines", task.Criterion{ExpectedStdout: str("ok")}, CommandRun{Stdout: []byte("ok\n\n")}, 1, "matches (exact)"},
		{"contains", task.Criterion{ExpectedStdout: str("3 passed"), StdoutMatch: "contains"}, CommandRun{Stdout: []byte("== 3 passed ==")}, 1, "contains"},
		{"regex mismatch", task.Criterion{ExpectedStdout: str(`^\d+ passed$`), StdoutMatch: "regex"}, CommandRun{Stdout: []byte("1 failed")}, 0, "does not match (regex)"},
		{"score from stdout", task.Criterion{ScoreFromStdout: true}, CommandRun{Stdout: []byte("0.25\nrest")}, 0.25, "score 0.25"},
		{"score from stdout out of range", task.Criterion{ScoreFromStdout: true}, CommandRun{Stdout: []byte("7")}, 0, "not a number from 0 to 1"},
		{"notes are kept", task.Criterion{}, CommandRun{Notes: []string{"stdout over the 1 MiB cap was cut"}}, 1, "cap was cut"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			score, details, err := ScoreCommand(&tt.c, tt.run)
			if err != nil || !near(score, tt.score) || !strings.Contains(details, tt.detail) {
				t.Errorf("got %v %q %v, want %v mentioning %q", score, details, err, tt.score, tt.detail)
			}
		})
	}
}
