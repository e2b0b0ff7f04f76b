package supervisor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// mcpTask is a task whose two services are MCP servers (testdata/mcp/mcp.sh, busybox sh in
// the default image): calc over streamable HTTP (a busybox httpd CGI), notes over stdio
// (served by ceval-init --mcp-serve in its own container). The model script has the CLI write to
// ceval's MCP configuration, then call one tool of each server.
func mcpTask(t *testing.T, agentType, api, model, shellTool, shellInput, secret string, search bool) (string, map[string]string) {
	t.Helper()
	server, err := os.ReadFile("testdata/mcp/mcp.sh")
	if err != nil {
		t.Fatal(err)
	}
	// Claude Code names a server's tools mcp__SERVER__TOOL; Codex puts them in a Responses
	// API namespace mcp__SERVER.
	cfg, mcpCalls := ClaudeMCPConfigPath, "{name: mcp__calc__add, input: {a: 2, b: 40}}, {name: mcp__notes__secret, input: {}}"
	if agentType == task.AgentCodex {
		cfg, mcpCalls = CodexManagedConfig, "{namespace: mcp__calc, name: add, input: {a: 2, b: 40}}, {namespace: mcp__notes, name: secret, input: {}}"
	}
	probe := `(echo '{}' > ` + cfg + `) 2> /workspace/write.txt; echo done >> /workspace/write.txt; cat ` + cfg + ` > /workspace/config.txt`
	files := map[string]string{
		"svc/mcp.sh":          string(server),
		"svc/www/cgi-bin/rpc": string(server),
		"model.yaml": "version: 1\napi: " + api + "\nturns:\n" +
			"  - tool_calls: [{name: " + shellTool + ", input: {" + shellInput + ": " + quote(probe) + "}}]\n    usage: {input_tokens: 10, output_tokens: 5}\n" +
			searchTurn(search) +
			"  - tool_calls: [" + mcpCalls + "]\n    usage: {input_tokens: 20, output_tokens: 5}\n" +
			"  - text: Done.\n    usage: {input_tokens: 30, output_tokens: 2}\n",
	}
	svc := func(name, cmd, mcp string, port int) string {
		return "  - name: " + name + "\n    files: svc\n    command: " + cmd + "\n" +
			"    env: {SECRET: " + secret + "}\n    ports: [" + strconv.Itoa(port) + "]\n    ready: {tcp: " + strconv.Itoa(port) + "}\n    mcp: " + mcp + "\n"
	}
	doc := "task_id: mcp-" + agentType + "\ninitial_prompt: use the tools\n" +
		"agent:\n  type: " + agentType + "\n  model: " + model + "\n  gateway: {mode: replay, fixture: model.yaml}\n" +
		"sandbox:\n  image: " + images.AgentName + "\n  limits: {timeout: 3m, memory_mb: 1024, pids: 128, disk_mb: 64}\n" +
		"services:\n" +
		svc("calc", `[sh, -c, "chmod +x www/cgi-bin/rpc && exec httpd -f -p 8000 -h www"]`, "{transport: http, port: 8000, path: /cgi-bin/rpc}", 8000) +
		svc("notes", "[sh, mcp.sh]", "{transport: stdio, port: 7000}", 7000) +
		"success_criteria:\n" +
		"  - {type: tool_called, tool: mcp__calc__add, outcome: ok}\n" +
		"  - {type: tool_called, tool: mcp__notes__secret, outcome: ok}\n" +
		"  - {type: file_contains, path: write.txt, includes: [Read-only, done]}\n" +
		"  - {type: file_contains, path: config.txt, includes: [calc, notes]}\n"
	return doc, files
}

// searchTurn is the turn in which the model has Codex search the MCP tools it defers (with a
// model its catalogue says searches tools: they are not offered before); "" without.
func searchTurn(search bool) string {
	if !search {
		return ""
	}
	return "  - tool_calls: [{name: tool_search, type: tool_search, input: {query: add secret, limit: 8}}]\n    usage: {input_tokens: 15, output_tokens: 5}\n"
}

// The real Claude Code and Codex CLIs, configured by ceval, list and call the tools of a
// task's MCP servers (streamable HTTP and stdio) through the gateway in replay: each server
// got its call (its log), the model got each server's answer back (the transcript's next
// request), result.json attributes the calls to their servers, and the CLI's configuration
// is read-only to the agent.
func TestRealCLIsCallTheTasksMCPServers(t *testing.T) {
	withAgentImage(t)
	for _, ex := range []struct {
		name, agentType, api, model, tool, input string
		search                                   bool
	}{
		{"claude-code", task.AgentClaudeCode, "anthropic", "claude-sonnet-4-5", "Bash", "command", false},
		// A model outside Codex's catalogue gets each server's tools as a namespace at once.
		{"codex", task.AgentCodex, "openai", "gpt-4.1", "exec_command", "cmd", false},
		// One in it (gpt-5.5) finds them with Codex's own tool_search first.
		{"codex-tool-search", task.AgentCodex, "openai", "gpt-5.5", "exec_command", "cmd", true},
	} {
		t.Run(ex.name, func(t *testing.T) {
			secret := canary(t)
			doc, files := mcpTask(t, ex.agentType, ex.api, ex.model, ex.tool, ex.input, secret, ex.search)
			res, err := runTask(t, doc, files, Options{LookupEnv: func(string) (string, bool) { return "", false }})
			logs := map[string]string{}
			for _, s := range []string{"calc", "notes"} {
				if res != nil {
					b, _ := os.ReadFile(filepath.Join(res.Dir, record.ServicesDir, s+".log"))
					logs[s] = string(b)
				}
			}
			if err != nil {
				t.Fatalf("%v\nlogs: %v", err, logs)
			}
			if res.Status != "SUCCESS" {
				stdout, _ := os.ReadFile(filepath.Join(res.Dir, record.StdoutFile))
				stderr, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
				t.Fatalf("status %s %+v\nstdout:\n%s\nstderr:\n%s\nlogs: %v", res.Status, res.Criteria, tail(stdout), tail(stderr), logs)
			}
			if !strings.Contains(logs["calc"], `CALLED add {"a": 2, "b": 40}`) || !strings.Contains(logs["notes"], "CALLED secret {}") {
				t.Errorf("the servers did not get the calls: %v", logs)
			}
			// Each server's answer went back to the model in the CLI's next request.
			answered := 2
			if ex.search {
				answered = 3
			}
			var sum, sec bool
			for _, call := range readCalls(t, filepath.Join(res.Dir, record.ModelCallsFile)) {
				if call.Depth == answered {
					sum = sum || strings.Contains(string(call.Request), "42")
					sec = sec || strings.Contains(string(call.Request), secret)
				}
			}
			if !sum || !sec {
				t.Errorf("the model did not get the servers' answers (42: %v, the secret: %v)", sum, sec)
				stdout, _ := os.ReadFile(filepath.Join(res.Dir, record.StdoutFile))
				stderr, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
				t.Logf("stdout:\n%s\nstderr:\n%s", tail(stdout), tail(stderr))
				for _, call := range readCalls(t, filepath.Join(res.Dir, record.ModelCallsFile)) {
					var req struct {
						Tools []json.RawMessage `json:"tools"`
						Input []json.RawMessage `json:"input"`
					}
					json.Unmarshal(call.Request, &req)
					for _, tl := range req.Tools {
						t.Logf("depth %d stripped %d tool %.300s", call.Depth, call.Stripped, tl)
					}
					for _, in := range req.Input {
						if !strings.Contains(string(in), "You are Codex") {
							t.Logf("depth %d input %.500s", call.Depth, in)
						}
					}
				}
			}
			if tc := res.ToolCalls; tc == nil || tc.ByMCPServer["calc"] != 1 || tc.ByMCPServer["notes"] != 1 {
				t.Errorf("result.json's tool calls %+v", tc)
			}
		})
	}
}
