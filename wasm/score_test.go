package wasm

import (
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

var _ grader.Executor = (*Executor)(nil)

func TestScore(t *testing.T) {
	str := func(s string) *string { return &s }
	opts, _ := Options{CacheDir: "/x"}.withDefaults()
	tests := []struct {
		name    string
		c       task.Criterion
		r       wire.RunReply
		want    float64
		details string
	}{
		{"exit 0 passes", task.Criterion{Spec: &task.RunCommandSpec{}}, wire.RunReply{}, 1, "exit code 0"},
		{"exit 1 fails", task.Criterion{Spec: &task.RunCommandSpec{}}, wire.RunReply{ExitCode: 1, Stderr: []byte("boom\n")}, 0, `exit code 1, want 0; stdout ""; stderr "boom"`},
		{"expected exit code", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ExpectedExitCode: 3}}}, wire.RunReply{ExitCode: 3}, 1, "exit code 3"},
		{"exact ignores trailing newlines", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ExpectedStdout: str("hi\n\n"), StdoutMatch: "exact"}}}, wire.RunReply{Stdout: []byte("hi\n")}, 1, "matches (exact)"},
		{"exact keeps leading space", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ExpectedStdout: str("hi"), StdoutMatch: "exact"}}}, wire.RunReply{Stdout: []byte(" hi")}, 0, "does not match"},
		{"contains", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ExpectedStdout: str("ok"), StdoutMatch: "contains"}}}, wire.RunReply{Stdout: []byte("all ok\n")}, 1, "contains"},
		{"regex", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ExpectedStdout: str(`^\d+ passed`), StdoutMatch: "regex"}}}, wire.RunReply{Stdout: []byte("12 passed\n")}, 1, "regex"},
		{"stdout checked only after the exit code", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ExpectedStdout: str("ok"), StdoutMatch: "contains"}}}, wire.RunReply{ExitCode: 2, Stdout: []byte("ok")}, 0, "exit code 2"},
		{"score from stdout", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, wire.RunReply{Stdout: []byte(" 0.5 \nrest")}, 0.5, "score 0.5"},
		{"score above 1", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, wire.RunReply{Stdout: []byte("1.5")}, 0, "not a number from 0 to 1"},
		{"score NaN", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, wire.RunReply{Stdout: []byte("NaN")}, 0, "not a number"},
		{"score garbage", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, wire.RunReply{Stdout: []byte("PASS")}, 0, "not a number"},
		{"score empty", task.Criterion{Spec: &task.RunCommandSpec{StdoutScoring: task.StdoutScoring{ScoreFromStdout: true}}}, wire.RunReply{}, 0, "not a number"},
		{"timeout", task.Criterion{Spec: &task.RunCommandSpec{}}, wire.RunReply{Limit: wire.LimitTimeout}, 0, "timeout: still running after the 2s limit"},
		{"memory", task.Criterion{Spec: &task.RunCommandSpec{}}, wire.RunReply{Limit: wire.LimitMemory, ExitCode: 2}, 0, "memory limit: the guest needed more than the 256 MiB limit"},
		{"stdout flood", task.Criterion{Spec: &task.RunCommandSpec{}}, wire.RunReply{Limit: wire.LimitStdout, StdoutCut: 7}, 0, "stdout limit: more than 1 MiB written (7 bytes over)"},
		{"stderr flood", task.Criterion{Spec: &task.RunCommandSpec{}}, wire.RunReply{Limit: wire.LimitStderr}, 0, "stderr limit"},
		{"trap", task.Criterion{Spec: &task.RunCommandSpec{}}, wire.RunReply{Trap: "wasm error: unreachable\nstack"}, 0, "trapped: wasm error: unreachable"},
		{"tmp full noted", task.Criterion{Spec: &task.RunCommandSpec{}}, wire.RunReply{ExitCode: 1, TmpFull: true}, 0, "/tmp reached its 64 MiB cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := score(&tt.c, &tt.r, opts, 2*time.Second)
			got, details := sc.Score, sc.Details
			if err != nil || got != tt.want || !strings.Contains(details, tt.details) {
				t.Errorf("score = %v, %q, %v; want %v with %q", got, details, err, tt.want, tt.details)
			}
		})
	}
}
