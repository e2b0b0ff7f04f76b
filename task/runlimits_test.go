package task

import (
	"strings"
	"testing"
)

func TestRunLimits(t *testing.T) {
	dir := t.TempDir()
	const gw = "agent: {type: command, command: [x], model: m, gateway: {mode: record}}\n"
	base := "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: a}]\n"
	good := []struct {
		name, doc string
		want      RunLimits
	}{
		{"all five", gw + "run_limits: {max_turns: 30, max_input_tokens: 2000000, max_output_tokens: 100000, max_total_tokens: 2100000, max_usd: 2.5}\n",
			RunLimits{MaxTurns: 30, MaxInputTokens: 2_000_000, MaxOutputTokens: 100_000, MaxTotalTokens: 2_100_000, MaxUSD: 2.5}},
		{"a whole number of dollars", gw + "run_limits: {max_usd: 3}\n", RunLimits{MaxUSD: 3}},
		{"block style", gw + "run_limits:\n  max_turns: 1\n", RunLimits{MaxTurns: 1}},
		{"claude-code has a gateway by default", "agent: {type: claude-code}\nrun_limits: {max_output_tokens: 5}\n", RunLimits{MaxOutputTokens: 5}},
		{"codex with a pinned model may spend dollars", "agent: {type: codex, model: gpt-x}\nrun_limits: {max_usd: 0.01}\n", RunLimits{MaxUSD: 0.01}},
	}
	for _, c := range good {
		tk, err := Parse("task.yaml", dir, []byte(base+c.doc))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if tk.RunLimits == nil || *tk.RunLimits != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, tk.RunLimits, c.want)
		}
	}
	if tk, err := Parse("task.yaml", dir, []byte(base+gw)); err != nil || tk.RunLimits != nil {
		t.Errorf("a task without run_limits: %+v %v", tk.RunLimits, err)
	}

	// Each bad document yields exactly one problem, at FILE:LINE:COL.
	bad := []struct {
		name, doc, want string
	}{
		{"zero turns", gw + "run_limits: {max_turns: 0}\n", "task.yaml:5:25: run_limits.max_turns must be between 1 and 1000000, got 0"},
		{"negative tokens", gw + "run_limits: {max_input_tokens: -5}\n", "task.yaml:5:32: run_limits.max_input_tokens must be between 1 and"},
		{"fractional tokens", gw + "run_limits: {max_output_tokens: 1.5}\n", "task.yaml:5:33: run_limits.max_output_tokens must be a whole number"},
		{"quoted number", gw + "run_limits: {max_total_tokens: \"100\"}\n", "task.yaml:5:32: run_limits.max_total_tokens must be a whole number"},
		{"zero dollars", gw + "run_limits: {max_usd: 0}\n", "task.yaml:5:23: run_limits.max_usd must be more than 0"},
		{"negative dollars", gw + "run_limits: {max_usd: -1}\n", "task.yaml:5:23: run_limits.max_usd must be between 0 and"},
		{"dollars as text", gw + "run_limits: {max_usd: \"$5\"}\n", "task.yaml:5:23: run_limits.max_usd must be a number"},
		{"infinite dollars", gw + "run_limits: {max_usd: .inf}\n", "task.yaml:5:23: run_limits.max_usd must be a number"},
		{"unknown field", gw + "run_limits: {max_cost: 5}\n", "task.yaml:5:14: unknown field \"max_cost\" in run_limits (known fields: max_input_tokens, max_output_tokens, max_total_tokens, max_turns, max_usd)"},
		{"empty", gw + "run_limits: {}\n", "task.yaml:5:13: run_limits is empty"},
		{"not a mapping", gw + "run_limits: 5\n", "task.yaml:5:13: run_limits must be a mapping, got a scalar"},
		{"command without a gateway", "agent: {type: command, command: [x]}\nrun_limits: {max_turns: 3}\n",
			"task.yaml:5:1: run_limits are metered by the model gateway, and this command agent has none: add agent.gateway"},
		{"dollars without a pinned model", "agent: {type: claude-code}\nrun_limits: {max_usd: 1}\n",
			"task.yaml:5:1: run_limits.max_usd needs agent.model"},
	}
	for _, c := range bad {
		_, err := Parse("task.yaml", dir, []byte(base+c.doc))
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		probs, ok := err.(Problems)
		if !ok || len(probs) != 1 || !strings.HasPrefix(probs[0].String(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
	}
}
