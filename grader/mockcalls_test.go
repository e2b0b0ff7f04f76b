package grader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

func TestMockCallCriteria(t *testing.T) {
	log := filepath.Join(t.TempDir(), "mock_calls.jsonl")
	lines := []string{
		`{"tool":"gh","argv":["pr","list","--state=open"],"exit_code":0}`,
		`{"tool":"gh","argv":["pr","list","--limit","5","--web"],"exit_code":0}`,
		`{"tool":"kubectl","argv":["get","pods"],"exit_code":127}`,
		`{"argv":[],"error":"refused: peer uid 2001","exit_code":69}`,
	}
	os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	cli := func(min, max int, pos []string, flags ...task.FlagCheck) *task.Criterion {
		return &task.Criterion{Type: task.CLICalled, Spec: &task.CLICalledSpec{Tool: "gh", Positional: pos, Flags: flags, CallCount: task.CallCount{MinCount: min, MaxCount: max}}}
	}
	tests := []struct {
		name string
		c    *task.Criterion
		want Status
	}{
		{"positional prefix counts both", cli(2, 2, []string{"pr", "list"}), Pass},
		{"flag equals through --flag=value", cli(1, 1, nil, task.FlagCheck{Flag: "--state", Op: "equals", Value: "open"}), Pass},
		{"flag regex", cli(1, -1, nil, task.FlagCheck{Flag: "--limit", Op: "regex", Value: `^\d+$`}), Pass},
		{"absent flag", cli(1, 1, []string{"pr"}, task.FlagCheck{Flag: "--web", Op: "absent"}), Pass},
		{"max_count exceeded", cli(0, 1, []string{"pr", "list"}), Fail},
		{"wrong positional", cli(1, -1, []string{"list"}), Fail},
		{"other tool not counted", &task.Criterion{Type: task.CLICalled, Spec: &task.CLICalledSpec{Tool: "gh", Positional: []string{"get"}, CallCount: task.CallCount{MinCount: 1, MaxCount: -1}}}, Fail},
		{"command_executed regex", &task.Criterion{Type: task.CommandExecuted, Spec: &task.CommandExecutedSpec{Pattern: `^kubectl get pods$`, CallCount: task.CallCount{MinCount: 1, MaxCount: -1}}}, Pass},
		{"refused connections are not calls", &task.Criterion{Type: task.CommandExecuted, Spec: &task.CommandExecutedSpec{Pattern: `.*`, CallCount: task.CallCount{MinCount: 0, MaxCount: 3}}}, Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Weight, tt.c.PassThreshold = 1, 1
			got := finish(tt.c, mockCalls(tt.c.Spec, log))
			if got.Status != tt.want {
				t.Errorf("status %s (%s), want %s", got.Status, got.Details, tt.want)
			}
		})
	}
	c := cli(1, -1, nil)
	if v := mockCalls(c.Spec, ""); v.forced != NotGraded {
		t.Errorf("without a log: %+v", v)
	}
}
