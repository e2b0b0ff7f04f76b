package grader

import (
	"context"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

func TestTiersSendEachCriterionToItsTier(t *testing.T) {
	s := snap(t, tree{"a.txt": "x"})
	wasmCrit := crit(task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "pass"}})
	ctrCrit := crit(task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "half", GraderTier: task.GraderTier{Verifier: &task.Verifier{Image: "i"}}}})
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
		{"exit 0 passes", task.Criterion{Spec: &task.RunCommandSpec{}}, CommandRun{}, 1, "exit code 0"},
		{"another exit code fails", task.Criterion{Spec: &task.RunCommandSpec{}}, CommandRun{ExitCode: 1, Stderr: []byte("boom\n")}, 0, `exit code 1, want 0; stdout ""; stderr "boom"`},
		{"the expected exit code", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ExpectedExitCode: 3}}}, CommandRun{ExitCode: 3}, 1, "exit code 3"},
		{"a limit scores 0 whatever the exit", task.Criterion{Spec: &task.RunCommandSpec{}}, CommandRun{Limit: "timeout: still running after 1s; stopped"}, 0, "timeout"},
		{"exact stdout ignores trailing newlines", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ExpectedStdout: str("ok")}}}, CommandRun{Stdout: []byte("ok\n\n")}, 1, "matches (exact)"},
		{"contains", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ExpectedStdout: str("3 passed"), StdoutMatch: "contains"}}}, CommandRun{Stdout: []byte("== 3 passed ==")}, 1, "contains"},
		{"regex mismatch", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ExpectedStdout: str(`^\d+ passed$`), StdoutMatch: "regex"}}}, CommandRun{Stdout: []byte("1 failed")}, 0, "does not match (regex)"},
		{"score from stdout", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, CommandRun{Stdout: []byte("0.25\nrest")}, 0.25, "score 0.25"},
		{"score from stdout out of range", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, CommandRun{Stdout: []byte("7")}, 0, "not a number from 0 to 1"},
		{"named rewards score their mean", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, CommandRun{Stdout: []byte(`{"correctness": 1, "performance": 0.5}`)}, 0.75, `rewards "correctness"=1, "performance"=0.5; score 0.75 (mean of 2)`},
		{"named rewards scored by reward_key", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true, RewardKey: "performance"}}}, CommandRun{Stdout: []byte("{\"correctness\": 1,\n \"performance\": 0.5}\n")}, 0.5, "(reward_key performance)"},
		{"a reward_key not among the rewards", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true, RewardKey: "speed"}}}, CommandRun{Stdout: []byte(`{"correctness": 1}`)}, 0, `reward_key "speed" is not among`},
		{"a non-numeric reward", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, CommandRun{Stdout: []byte(`{"correctness": "1"}`)}, 0, `reward "correctness" is the string "1"`},
		{"a NaN reward", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, CommandRun{Stdout: []byte(`{"correctness": NaN}`)}, 0, "named rewards: invalid character"},
		{"a reward out of range", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, CommandRun{Stdout: []byte(`{"correctness": 1, "performance": 1.5}`)}, 0, `reward "performance" is 1.5, not a number from 0 to 1`},
		{"a reward given twice", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, CommandRun{Stdout: []byte(`{"a": 1, "a": 0}`)}, 0, "given twice"},
		{"no named reward", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, CommandRun{Stdout: []byte(`{}`)}, 0, "no named reward"},
		{"text after the rewards", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, CommandRun{Stdout: []byte(`{"a": 1} 1`)}, 0, "more after the object"},
		{"notes are kept", task.Criterion{Spec: &task.RunCommandSpec{}}, CommandRun{Notes: []string{"stdout over the 1 MiB cap was cut"}}, 1, "cap was cut"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := ScoreCommand(&tt.c, tt.run)
			if err != nil || !near(sc.Score, tt.score) || !strings.Contains(sc.Details, tt.detail) {
				t.Errorf("got %v %q %v, want %v mentioning %q", sc.Score, sc.Details, err, tt.score, tt.detail)
			}
			if tt.c.StdoutScoring().ScoreFromStdout && tt.score == 0 && !sc.Invalid {
				t.Errorf("%q scored 0 but not Invalid: a pass_threshold of 0 would pass it", tt.run.Stdout)
			}
		})
	}
}
