package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// Fake agent CLIs baked into a test image: each records the argv, environment and stdin it
// received into the workspace and prints stream output recorded from the real CLI's format.
const fakeClaude = `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done > /workspace/argv.txt
env | sort > /workspace/env.txt
cat > /workspace/stdin.txt
cat <<'JSON'
{"type":"system","subtype":"init","session_id":"s1","model":"claude-test-1"}
{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","name":"Write","input":{"file_path":"/workspace/hello.txt"}}],"usage":{"input_tokens":12,"output_tokens":1}}}
{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}
{"type":"assistant","message":{"id":"msg_2","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":30,"output_tokens":1}}}
{"type":"result","subtype":"success","is_error":false,"num_turns":2,"duration_ms":900,"total_cost_usd":0.0012,"usage":{"input_tokens":42,"cache_creation_input_tokens":0,"cache_read_input_tokens":10,"output_tokens":17},"result":"Done."}
JSON
echo 'Hello, ceval!' > /workspace/hello.txt
`

const fakeCodex = `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done > /workspace/argv.txt
env | sort > /workspace/env.txt
cat > /workspace/stdin.txt
cat <<'JSON'
{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"/bin/sh -lc 'echo hi > hello.txt'","exit_code":0}}
{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":20,"output_tokens":8,"reasoning_output_tokens":3}}
JSON
echo 'Hello, ceval!' > /workspace/hello.txt
`

const fakeAgentsImage = "ceval.local/fake-agents:test"

func TestClaudeCodeAndCodexAgentsGetTheirArgvAndEnv(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: fakeAgentsImage, Extra: []images.File{
		{Path: "usr/local/bin/claude", Mode: 0o755, Data: []byte(fakeClaude)},
		{Path: "usr/local/bin/codex", Mode: 0o755, Data: []byte(fakeCodex)},
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, fakeAgentsImage) })
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
	t.Setenv("OPENAI_API_KEY", "sk-openai-test-secret")
	t.Setenv("UNRELATED_HOST_VAR", "must-not-leak")

	tests := []struct {
		agent     string
		allow     string
		wantArgv  []string
		wantEnv   []string
		turns     int
		tokenKey  string
		tokens    int
		secretEnv string
	}{
		{
			agent: "claude-code", allow: "ANTHROPIC_API_KEY",
			wantArgv: []string{"-p", "Write hello.txt.\n", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--model", "m-test", "--max-turns", "5"},
			wantEnv: []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:80", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "HOME=/home/agent",
				"USER=agent", "CEVAL_PROMPT_FILE=/home/agent/.ceval/prompt.md"},
			turns: 2, tokenKey: "input_tokens", tokens: 42, secretEnv: "sk-ant-test-secret",
		},
		{
			agent: "codex", allow: "OPENAI_API_KEY",
			wantArgv: []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-C", "/workspace", "--model", "m-test", "--max-turns", "5", "Write hello.txt.\n"},
			wantEnv:  []string{"CEVAL_GATEWAY_URL=http://127.0.0.1:80", "CODEX_HOME=/home/agent/.codex", "HOME=/home/agent"},
			turns:    1, tokenKey: "cached_input_tokens", tokens: 20, secretEnv: "sk-openai-test-secret",
		},
	}
	for _, tc := range tests {
		t.Run(tc.agent, func(t *testing.T) {
			dir := t.TempDir()
			doc := "task_id: fake-" + tc.agent + "\ninitial_prompt: |\n  Write hello.txt.\nagent: {type: " + tc.agent + ", model: m-test, args: [--max-turns, \"5\"]}\n" +
				"sandbox: {image: \"" + fakeAgentsImage + "\", limits: {timeout: 60s, memory_mb: 256, pids: 128, disk_mb: 16}}\n" +
				"success_criteria: [{type: file_contains, path: hello.txt, includes: [Hello]}]\n"
			p := filepath.Join(dir, "task.yaml")
			os.WriteFile(p, []byte(doc), 0o644)
			tk, err := task.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(ctx, tk, Options{Client: c, RunsDir: t.TempDir(), Allow: Allow{Env: []string{tc.allow}}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != "SUCCESS" {
				t.Fatalf("status %s: %+v", res.Status, res.Criteria)
			}
			ws := filepath.Join(res.Dir, record.WorkspaceDir)
			argv, _ := os.ReadFile(filepath.Join(ws, "argv.txt"))
			if got := strings.Join(tc.wantArgv, "\n") + "\n"; string(argv) != got {
				t.Errorf("argv =\n%s\nwant\n%s", argv, got)
			}
			env, _ := os.ReadFile(filepath.Join(ws, "env.txt"))
			for _, w := range tc.wantEnv {
				if !strings.Contains(string(env), w+"\n") {
					t.Errorf("env lacks %s:\n%s", w, env)
				}
			}
			if strings.Contains(string(env), "must-not-leak") {
				t.Error("an unrelated host variable reached the agent")
			}
			if strings.Contains(string(env), tc.secretEnv) {
				t.Error("the real provider key reached the agent: the model gateway holds it")
			}
			if stdin, _ := os.ReadFile(filepath.Join(ws, "stdin.txt")); len(stdin) != 0 {
				t.Errorf("the agent's stdin was not empty: %q", stdin)
			}
			if res.Agent.Turns != tc.turns || res.Agent.Tokens[tc.tokenKey] != tc.tokens || res.Agent.Model != "m-test" {
				t.Errorf("agent result = %+v", res.Agent)
			}
			data, _ := os.ReadFile(filepath.Join(res.Dir, record.ResultFile))
			if strings.Contains(string(data), tc.secretEnv) {
				t.Error("result.json holds the credential")
			}
		})
	}
}
