package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// loopingAgent calls the gateway for ever, ignoring every refusal, and appends each answer
// it gets to answers.txt: only ceval can end it. With TERM ignored, only the SIGKILL after
// the grace can.
const loopingAgent = `printf '%s' '{"model":"any","max_tokens":100,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash","input_schema":{}}]}' > /tmp/req.json
while :; do
  if wget -q -O /tmp/answer --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages"; then
    cat /tmp/answer >> /workspace/answers.txt; echo >> /workspace/answers.txt
  fi
done`

// loopFixture answers every call with 11 input and 5 output tokens.
const loopFixture = `{"api":"anthropic","depth":0,"tools":true,"status":200,"content_type":"application/json","response":"{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"replayed-answer\"}],\"usage\":{\"input_tokens\":11,\"output_tokens\":5}}"}` + "\n"

// A budget test per limit: an agent that never stops calling the model is ended by ceval
// as soon as the gateway sees the budget exceeded (well before the task's 60s timeout), the
// run gets the limit's status, the workspace is still graded, and nothing is left in
// containerd.
func TestEachRunLimitEndsALoopingAgent(t *testing.T) {
	prices := map[string]gateway.Price{"claude-pinned": {Input: 1000, Output: 2000}} // $0.021 a call
	cases := []struct {
		name, limits, status, limit string
		answered                    int
		ignoreTerm                  bool
	}{
		{"max_turns", "{max_turns: 2}", record.StatusMaxTurns, "max_turns 2", 2, false},
		{"max_input_tokens", "{max_input_tokens: 30}", record.StatusTokenBudget, "max_input_tokens 30", 3, false},
		{"max_output_tokens", "{max_output_tokens: 12}", record.StatusTokenBudget, "max_output_tokens 12", 3, true},
		{"max_total_tokens", "{max_total_tokens: 40}", record.StatusTokenBudget, "max_total_tokens 40", 3, false},
		{"max_usd", "{max_usd: 0.05}", record.StatusCostBudget, "max_usd 0.05", 3, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c0, ctx := ctrtest.Connect(t)
			script := loopingAgent
			if c.ignoreTerm {
				script = "trap '' TERM\n" + script
			}
			doc := agentTask("budget-"+strings.ReplaceAll(c.name, "_", "-"), script,
				"  - {type: file_contains, path: answers.txt, includes: [replayed-answer]}\n", "run_limits: "+c.limits+"\n")
			doc = strings.Replace(doc, "  type: command\n", "  type: command\n  model: claude-pinned\n  gateway: {mode: replay, fixture: calls.jsonl}\n", 1)
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "calls.jsonl"), []byte(loopFixture), 0o644)
			os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(doc), 0o644)
			tk, err := task.Load(filepath.Join(dir, "task.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := runLoaded(t, ctx, c0, tk, Options{Grace: time.Second, Prices: prices,
				LookupEnv: func(string) (string, bool) { return "", false }})
			if err != nil {
				t.Fatal(err)
			}
			elapsed := time.Since(start)
			if res.Status != c.status || res.Agent.TimedOut || !strings.Contains(res.Agent.StoppedBy, c.limit) {
				t.Fatalf("status %s, timed out %v, stopped by %q after %v; want %s stopped by %s",
					res.Status, res.Agent.TimedOut, res.Agent.StoppedBy, elapsed, c.status, c.limit)
			}
			if elapsed > 25*time.Second {
				t.Errorf("took %v to end the agent; the timeout is 60s", elapsed)
			}
			g := res.Gateway
			if g.Turns != c.answered || g.ExceededLimit != c.limit {
				t.Errorf("gateway %+v: want %d answers and %s exceeded", g, c.answered, c.limit)
			}
			if c.name == "max_usd" && (g.Exceeded != gateway.ExceededCost || g.CostUSD < 0.062 || g.CostUSD > 0.064) {
				t.Errorf("cost %v (%s), want 3 calls at $0.021", g.CostUSD, g.Exceeded)
			}
			// Graded on the snapshot: the agent saw exactly the answers the gateway metered.
			if res.Score != 1 || len(res.Criteria) != 1 || !res.Complete {
				t.Errorf("the snapshot was not graded: score %v %+v", res.Score, res.Criteria)
			}
			answers, _ := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, "answers.txt"))
			// A token or cost budget is exceeded by an answer the agent may be ended before
			// it writes down; max_turns is exceeded by the call after the last answer.
			n := strings.Count(string(answers), "replayed-answer")
			if n > c.answered || n < c.answered-1 || c.status == record.StatusMaxTurns && n != c.answered {
				t.Errorf("the agent wrote %d answers, the gateway metered %d", n, c.answered)
			}
			m := readResult(t, res)
			gw, _ := m["gateway"].(map[string]any)
			agent, _ := m["agent"].(map[string]any)
			if m["status"] != c.status || gw["budget_exceeded_limit"] != c.limit || agent["stopped_by"] == nil {
				t.Errorf("result.json does not say which limit: status %v gateway %v agent %v", m["status"], gw, agent)
			}
			if err := ctrtest.Leftovers(ctx, c0); err != nil {
				t.Errorf("left running after the budget stop: %v", err)
			}
		})
	}
}

// A cost budget the gateway cannot price is refused before anything starts, naming the
// config key to add.
func TestCostBudgetWithoutAPriceIsRefused(t *testing.T) {
	tk := &task.Task{ID: "t", RunLimits: &task.RunLimits{MaxUSD: 1},
		Agent: &task.Agent{Type: task.AgentCommand, Command: []string{"true"}, Model: "claude-x", Gateway: &task.Gateway{Mode: task.GatewayForward}}}
	runs := t.TempDir()
	_, err := Run(t.Context(), tk, Options{RunsDir: runs, Prices: map[string]gateway.Price{"other": {Input: 1, Output: 1}}})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `no price for model "claude-x"`) || !strings.Contains(err.Error(), "prices:") {
		t.Fatalf("want an InputError naming prices, got %v", err)
	}
	if entries, _ := os.ReadDir(runs); len(entries) != 0 {
		t.Fatalf("a refused run left %d entries in the runs directory", len(entries))
	}
	tk.Agent.Gateway = nil
	if err := CheckRunLimits(tk, nil); err == nil || !strings.Contains(err.Error(), "agent.gateway") {
		t.Fatalf("run_limits without a gateway: %v", err)
	}
}
