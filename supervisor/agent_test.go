package supervisor

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/task"
)

func hostEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestAgentArgvPerType(t *testing.T) {
	tests := []struct {
		agent task.Agent
		want  string
	}{
		{task.Agent{Type: task.AgentCommand, Command: []string{"/bin/sh", "-c", "x"}, Args: []string{"y"}}, "/bin/sh -c x y"},
		{task.Agent{Type: task.AgentClaudeCode, Model: "m1", Args: []string{"--max-turns", "3"}},
			"claude -p PROMPT --output-format stream-json --verbose --dangerously-skip-permissions --model m1 --max-turns 3"},
		{task.Agent{Type: task.AgentCodex, Model: "m2"},
			"codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -C /workspace --model m2 PROMPT"},
	}
	for _, tc := range tests {
		tk := &task.Task{ID: "t", Prompt: "PROMPT", Agent: &tc.agent}
		argv, err := AgentArgv(tk)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(argv, " "); got != tc.want {
			t.Errorf("%s: argv = %q, want %q", tc.agent.Type, got, tc.want)
		}
	}
	if _, err := AgentArgv(&task.Task{ID: "t"}); err == nil {
		t.Error("a task without agent got an argv")
	}
}

// A task may only receive host variables the user allowed; everything else is absent.
func TestAgentEnvPassesOnlyAllowedVariables(t *testing.T) {
	host := hostEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-canary-123", "MY_TOKEN": "tok-canary", "HOME": "/root", "PLAIN": "v"})
	tk := &task.Task{ID: "t", Agent: &task.Agent{Type: task.AgentClaudeCode, EnvPassthrough: []string{"MY_TOKEN", "PLAIN"}}}

	_, _, err := AgentEnv(tk, Allow{Env: []string{"PLAIN"}}, host)
	if err == nil || !strings.HasSuffix(err.Error(), "allow them with --allow-env MY_TOKEN") {
		t.Fatalf("want refusal naming the flags, got %v", err)
	}
	env, secrets, err := AgentEnv(tk, Allow{Env: []string{"PLAIN", "MY_TOKEN", "ANTHROPIC_API_KEY"}}, host)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(env, "\n")
	for _, want := range []string{"MY_TOKEN=tok-canary", "PLAIN=v", "CEVAL_PROMPT_FILE=/home/agent/.ceval/prompt.md"} {
		if !strings.Contains(joined, want) {
			t.Errorf("env lacks %s:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "HOME=/root") {
		t.Error("host HOME leaked")
	}
	// The provider credential stays in ceval (the model gateway holds it), yet is redacted.
	if strings.Contains(joined, "sk-canary-123") {
		t.Error("the real provider key reached the agent's env")
	}
	red := Redactor(secrets)("key sk-canary-123 and tok-canary and v")
	if strings.Contains(red, "canary") || !strings.Contains(red, "and v") {
		t.Errorf("redaction = %q", red)
	}
}

func TestHostNetworkNeedsUserPermission(t *testing.T) {
	tk := &task.Task{ID: "t", Sandbox: task.Sandbox{Network: policy.NetworkHost}}
	if err := CheckNetwork(tk, Allow{}); err == nil || !strings.Contains(err.Error(), "--allow-host-network") {
		t.Fatalf("got %v", err)
	}
	if err := CheckNetwork(tk, Allow{HostNetwork: true}); err != nil {
		t.Fatal(err)
	}
}

func TestParseUsage(t *testing.T) {
	claude := `{"type":"system","subtype":"init"}
not json
{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":3}}}
{"type":"result","num_turns":2,"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":7},"total_cost_usd":0.01}
`
	u := ParseUsage(task.AgentClaudeCode, strings.NewReader(claude))
	if u == nil || u.Turns != 2 || u.Tokens["input_tokens"] != 10 || u.Tokens["output_tokens"] != 5 || u.Tokens["cache_read_input_tokens"] != 7 {
		t.Errorf("claude usage = %+v", u)
	}
	codex := `{"type":"thread.started"}
{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":20,"output_tokens":8}}
{"type":"turn.completed","usage":{"input_tokens":50,"output_tokens":2}}
`
	u = ParseUsage(task.AgentCodex, strings.NewReader(codex))
	if u == nil || u.Turns != 2 || u.Tokens["input_tokens"] != 150 || u.Tokens["output_tokens"] != 10 {
		t.Errorf("codex usage = %+v", u)
	}
	if ParseUsage(task.AgentCommand, strings.NewReader(claude)) != nil {
		t.Error("command agents report no usage")
	}
	if u := ParseUsage(task.AgentClaudeCode, strings.NewReader(`{"type":"result","usage":{"input_tokens":-5,"x":"y"}}`)); u == nil || len(u.Tokens) != 0 {
		t.Errorf("hostile numbers kept: %+v", u)
	}
}

func TestRunsDirIsMadeAbsolute(t *testing.T) {
	o := Options{RunsDir: "relative/runs"}.WithDefaults(time.Now())
	if !filepath.IsAbs(o.RunsDir) {
		t.Errorf("RunsDir %q is not absolute: the sandbox needs absolute mount paths", o.RunsDir)
	}
}
