package grader

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// An executor that could not take the workspace (its size or shape: the agent's doing) fails
// the criterion with the reason; it is not ERROR, which pass rates leave out.
func TestWorkspaceFaultOfAnExecutorIsFailure(t *testing.T) {
	s := snap(t, tree{"a": "x"})
	c := crit(task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: "workspace"}})
	r := Grade(context.Background(), newTask(c), s, Options{Executor: &fakeExecutor{}})
	want(t, r.Criteria[0], Fail, 0, "too large to copy")
}

type workspaceFaultJudge struct{}

func (workspaceFaultJudge) RunAgentJudge(context.Context, *task.AgentJudgeSpec, *snapshot.Snapshot) (*judge.Verdict, error) {
	return nil, fmt.Errorf("judge: %w", &WorkspaceError{Reason: "the workspace is too large to hand to a judge agent"})
}

// An agent_judge whose workspace is too large to hand to the judge fails with the reason.
func TestWorkspaceFaultOfTheAgentJudgeIsFailure(t *testing.T) {
	s := snap(t, tree{"a": "x"})
	c := crit(task.Criterion{Type: task.AgentJudge, Spec: &task.AgentJudgeSpec{Rubric: "r"}})
	r := Grade(context.Background(), newTask(c), s, Options{AgentJudge: workspaceFaultJudge{}})
	want(t, r.Criteria[0], Fail, 0, "too large to hand to a judge agent")
}

// An llm_judge whose files (the workspace's, up to 512 KiB: enough tokens to pass a model's
// context when written for it) the judge model refuses as too long fails with the reason; a
// model refusing for another reason (here a wrong model name) is still ERROR.
func TestLLMJudgeInputOverTheModelsContextIsFailure(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   Status
	}{
		{"anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 262144 tokens > 200000 maximum"}}`, Fail},
		{"openai", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}`, Fail},
		{"too large", 413, `request_too_large`, Fail},
		{"another refusal", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"model: no-such-model"}}`, Error},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			j := judge.New(judge.Config{API: judge.Anthropic, Model: "m", BaseURL: srv.URL, Key: "k", Timeout: 5 * time.Second, MaxCalls: 4}, io.Discard, nil)
			c := crit(task.Criterion{Type: task.LLMJudge, Spec: &task.LLMJudgeSpec{Rubric: "r", Files: []string{"a"}, MaxFileBytes: task.DefaultJudgeFileBytes}})
			r := Grade(context.Background(), newTask(c), snap(t, tree{"a": strings.Repeat("a ", 1000)}), Options{Judge: j})
			if got := r.Criteria[0].Status; got != tc.want {
				t.Errorf("status %s (%s), want %s", got, r.Criteria[0].Details, tc.want)
			}
		})
	}
}
