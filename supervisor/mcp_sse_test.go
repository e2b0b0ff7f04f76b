package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/record"
)

// buildSSEServer builds testdata/mcp/sseserver, static, for a service's container.
func buildSSEServer(t *testing.T) []byte {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sseserver")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/mcp/sseserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build sseserver: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The real Claude Code CLI, configured by ceval with a service whose mcp: says transport:
// sse, connects to a server speaking MCP's HTTP+SSE transport (testdata/mcp/sseserver: GET
// /sse, its endpoint event, POSTs answered on the event stream), through the services' relay,
// lists its tools and calls both, with the model replayed by the gateway: the server logs each
// call, the model gets each answer back, result.json attributes the calls to the server, and
// the configuration Claude Code was given names the server's SSE URL.
func TestRealClaudeCodeCallsAnSSEMCPServer(t *testing.T) {
	withAgentImage(t)
	secret := canary(t)
	probe := `cat ` + ClaudeMCPConfigPath + ` > /workspace/config.txt`
	files := map[string]string{
		"svc/sseserver": string(buildSSEServer(t)),
		"model.yaml": "version: 1\napi: anthropic\nturns:\n" +
			"  - tool_calls: [{name: Bash, input: {command: " + quote(probe) + "}}]\n    usage: {input_tokens: 10, output_tokens: 5}\n" +
			"  - tool_calls: [{name: mcp__calc__add, input: {a: 2, b: 40}}, {name: mcp__calc__secret, input: {}}]\n    usage: {input_tokens: 20, output_tokens: 5}\n" +
			"  - text: Done.\n    usage: {input_tokens: 30, output_tokens: 2}\n",
	}
	doc := "task_id: mcp-sse\ninitial_prompt: use the tools\n" +
		"agent:\n  type: claude-code\n  model: claude-sonnet-4-5\n  gateway: {mode: replay, fixture: model.yaml}\n" +
		"sandbox:\n  image: " + images.AgentName + "\n  limits: {timeout: 3m, memory_mb: 1024, pids: 128, disk_mb: 64}\n" +
		"services:\n  - name: calc\n    files: svc\n    command: [sh, -c, \"chmod +x sseserver && exec ./sseserver :8000\"]\n" +
		"    env: {SECRET: " + secret + "}\n    ports: [8000]\n    ready: {tcp: 8000}\n    mcp: {transport: sse, port: 8000}\n" +
		"success_criteria:\n" +
		"  - {type: tool_called, tool: mcp__calc__add, outcome: ok}\n" +
		"  - {type: tool_called, tool: mcp__calc__secret, outcome: ok}\n" +
		"  - {type: file_contains, path: config.txt, includes: ['\"type\": \"sse\"', 'http://calc:8000/sse']}\n"
	res, err := runTask(t, doc, files, Options{LookupEnv: func(string) (string, bool) { return "", false }})
	var log string
	if res != nil {
		b, _ := os.ReadFile(filepath.Join(res.Dir, record.ServicesDir, "calc.log"))
		log = string(b)
	}
	if err != nil {
		t.Fatalf("%v\nthe server's log:\n%s", err, log)
	}
	if res.Status != "SUCCESS" {
		stdout, _ := os.ReadFile(filepath.Join(res.Dir, record.StdoutFile))
		stderr, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
		t.Fatalf("status %s %+v\nstdout:\n%s\nstderr:\n%s\nthe server's log:\n%s", res.Status, res.Criteria, tail(stdout), tail(stderr), log)
	}
	for _, want := range []string{"SSE session", "GOT initialize", "GOT tools/list", `CALLED add {"a": 2, "b": 40}`, "CALLED secret {}"} {
		if !strings.Contains(log, want) {
			t.Errorf("the server's log lacks %q:\n%s", want, log)
		}
	}
	var sum, sec bool
	for _, call := range readCalls(t, filepath.Join(res.Dir, record.ModelCallsFile)) {
		if call.Depth == 2 {
			sum = sum || strings.Contains(string(call.Request), "42")
			sec = sec || strings.Contains(string(call.Request), secret)
		}
	}
	if !sum || !sec {
		t.Errorf("the model did not get the server's answers (42: %v, the secret: %v)", sum, sec)
	}
	if tc := res.ToolCalls; tc == nil || tc.ByMCPServer["calc"] != 2 {
		t.Errorf("result.json's tool calls %+v", tc)
	}
}
