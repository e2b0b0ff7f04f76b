package grader

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"ceval.dev/ceval/task"
)

// pythonExecutor is a fakeExecutor that ran Python for commands starting with "python".
type pythonExecutor struct{ fakeExecutor }

func (p *pythonExecutor) Python(c *task.Criterion) *Interpreter {
	if strings.HasPrefix(c.Spec.(*task.RunCommandSpec).Command, "python") {
		return &Interpreter{Name: "test python", SHA256: "abc"}
	}
	return nil
}

func TestResultNamesThePythonThatGradedIt(t *testing.T) {
	s := snap(t, tree{})
	for _, tc := range []struct {
		name     string
		commands []string
		ex       Executor
		want     string
	}{
		{"python ran", []string{"pass", "python3 -c pass"}, &pythonExecutor{}, `"grading":{"python":{"name":"test python","sha256":"abc"}}`},
		{"python ran behind the tiers", []string{"python3 -c pass"}, Tiers{WASM: &pythonExecutor{}}, `"sha256":"abc"`},
		{"no python ran", []string{"pass"}, &pythonExecutor{}, ""},
		{"executor that cannot say", []string{"python3 -c pass"}, &fakeExecutor{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := &task.Task{ID: "t"}
			for _, cmd := range tc.commands {
				tk.Criteria = append(tk.Criteria, task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: cmd}, Weight: 1, PassThreshold: 0.9})
			}
			res := Grade(context.Background(), tk, s, Options{Executor: tc.ex})
			b, _ := json.Marshal(res)
			if tc.want == "" && strings.Contains(string(b), `"grading"`) || tc.want != "" && !strings.Contains(string(b), tc.want) {
				t.Errorf("result %s, want %q", b, tc.want)
			}
		})
	}
}
