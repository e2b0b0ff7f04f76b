package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentGatewaySchema(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "good.jsonl"), []byte(`{"api":"anthropic","depth":0,"status":200,"response":"{}"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte("\n{nope\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "openai.yaml"), []byte("version: 1\napi: openai\nturns: [{text: done}]\n"), 0o644)
	base := "task_id: t\ninitial_prompt: p\nsuccess_criteria: [{type: file_exists, path: a}]\nagent: "
	cases := []struct {
		name, agent, want string // want: the mode, or a problem's text
	}{
		{"claude-code defaults to forward", "{type: claude-code}", "forward"},
		{"codex defaults to forward", "{type: codex}", "forward"},
		{"command has none by default", "{type: command, command: [x]}", ""},
		{"replay with a fixture", "{type: command, command: [x], gateway: {mode: replay, fixture: good.jsonl}}", "replay"},
		{"replay without a fixture", "{type: codex, gateway: {mode: replay}}", "fixture is required"},
		{"fixture outside the task dir", "{type: codex, gateway: {mode: replay, fixture: ../x.jsonl}}", "leaves the task file's directory"},
		{"bad fixture line", "{type: codex, gateway: {mode: replay, fixture: bad.jsonl}}", "bad.jsonl:2:1: gateway fixture"},
		{"fixture outside replay", "{type: codex, gateway: {mode: record, fixture: good.jsonl}}", "only for mode replay"},
		{"unknown mode", "{type: codex, gateway: {mode: proxy}}", "agent.gateway.mode"},
		{"anthropic transcript for claude-code", "{type: claude-code, gateway: {mode: replay, fixture: good.jsonl}}", "replay"},
		{"anthropic transcript for codex", "{type: codex, gateway: {mode: replay, fixture: good.jsonl}}", "task.yaml:4:55: agent.gateway.fixture answers no openai requests, but a codex agent"},
		{"openai script for claude-code", "{type: claude-code, gateway: {mode: replay, fixture: openai.yaml}}", "answers no anthropic requests, but a claude-code agent"},
		{"openai script for codex", "{type: codex, gateway: {mode: replay, fixture: openai.yaml}}", "replay"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, err := Parse("task.yaml", dir, []byte(base+c.agent+"\n"))
			if err != nil {
				if !strings.Contains(err.Error(), c.want) || c.want == "" || c.want == "forward" || c.want == "replay" {
					t.Fatalf("got %v, want %q", err, c.want)
				}
				return
			}
			mode := ""
			if tk.Agent.Gateway != nil {
				mode = tk.Agent.Gateway.Mode
			}
			if mode != c.want {
				t.Fatalf("mode %q, want %q", mode, c.want)
			}
		})
	}
}
