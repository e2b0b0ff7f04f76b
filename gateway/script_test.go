package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"ceval.dev/ceval/gateway/transcript"
)

const claudeScript = `version: 1
api: anthropic
turns:
  - text: "I'll write it."
    tool_calls:
      - name: Write
        input: {file_path: /workspace/hello.txt, content: "Hello\n"}
    usage: {input_tokens: 1200, cached_input_tokens: 1000, cache_creation_input_tokens: 50, output_tokens: 40}
  - text: Done.
    usage: {input_tokens: 1300, output_tokens: 5}
`

func parseScriptText(t *testing.T, s string) *transcript.Fixture {
	t.Helper()
	f, err := transcript.ParseFixture(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// withTools is a conversation at depth n that offers a client tool.
func withTools(api string, depth int, stream bool) string {
	var items []string
	for i := 0; i < depth; i++ {
		if api == transcript.Anthropic {
			items = append(items, `{"role":"user","content":"go"}`, `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Write","input":{}}]}`)
		} else {
			items = append(items, `{"role":"user","content":"go"}`, `{"type":"function_call","call_id":"c","name":"exec_command","arguments":"{}"}`, `{"type":"function_call_output","call_id":"c","output":"ok"}`)
		}
	}
	items = append(items, `{"role":"user","content":"go"}`)
	list := "[" + strings.Join(items, ",") + "]"
	if api == transcript.Anthropic {
		return `{"model":"m","max_tokens":100,"stream":` + boolText(stream) + `,"tools":[{"name":"Write","input_schema":{}}],"messages":` + list + `}`
	}
	return `{"model":"m","stream":` + boolText(stream) + `,"tools":[{"type":"function","name":"exec_command","parameters":{}}],"input":` + list + `}`
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// The script's turns are answered by depth, streamed or not, with tool calls the CLI can
// run and the script's usage, which the gateway meters exactly.
func TestScriptAnswersEachTurnInTheRequestedForm(t *testing.T) {
	f := parseScriptText(t, claudeScript)
	s, url := start(t, Config{Mode: Replay, Fixture: f, Model: "claude-pinned"}, nil)

	code, body := post(t, url+"/v1/messages", dummyKey, withTools(transcript.Anthropic, 0, false))
	if code != 200 {
		t.Fatalf("depth 0: %d %s", code, body)
	}
	var msg struct {
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string         `json:"type"`
			Text  string         `json:"text"`
			Name  string         `json:"name"`
			Input map[string]any `json:"input"`
		} `json:"content"`
		Usage map[string]int64 `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Model != "claude-pinned" || msg.StopReason != "tool_use" || len(msg.Content) != 2 ||
		msg.Content[1].Name != "Write" || msg.Content[1].Input["content"] != "Hello\n" {
		t.Fatalf("depth 0 answer: %+v", msg)
	}
	if msg.Usage["input_tokens"] != 150 || msg.Usage["cache_read_input_tokens"] != 1000 || msg.Usage["cache_creation_input_tokens"] != 50 {
		t.Fatalf("Anthropic's input_tokens excludes the cache: %v", msg.Usage)
	}

	code, body = post(t, url+"/v1/messages", dummyKey, withTools(transcript.Anthropic, 1, true))
	if code != 200 || !strings.Contains(body, "event: message_start") || !strings.Contains(body, `"stop_reason":"end_turn"`) || !strings.Contains(body, `"text":"Done."`) {
		t.Fatalf("depth 1 streamed: %d %s", code, body)
	}
	// Past the script's end: a loud error, never a made-up answer.
	if code, body = post(t, url+"/v1/messages", dummyKey, withTools(transcript.Anthropic, 2, true)); code != 400 || !strings.Contains(body, "depth 2") {
		t.Fatalf("depth 2: %d %s", code, body)
	}
	// The other API is not in this script.
	if code, _ = post(t, url+"/v1/responses", dummyKey, withTools(transcript.OpenAI, 0, true)); code != 400 {
		t.Fatalf("openai request against an anthropic script: %d", code)
	}
	turns, want := f.ScriptTotals()
	got := s.Totals()
	if turns != 2 || got.Turns != 2 || got.InputTokens != want.Input || got.CachedInputTokens != want.Cached ||
		got.CacheCreationInputTokens != want.CacheCreation || got.OutputTokens != want.Output {
		t.Fatalf("metered %+v, script totals %+v over %d turns", got, want, turns)
	}
}

func TestScriptRendersResponsesAPIFunctionCalls(t *testing.T) {
	f := parseScriptText(t, `{"version": 1, "api": "openai", "turns": [
	  {"tool_calls": [{"name": "exec_command", "input": {"cmd": "echo hi > x"}}], "usage": {"input_tokens": 900, "cached_input_tokens": 600, "output_tokens": 25, "reasoning_output_tokens": 5}},
	  {"text": "Done.", "usage": {"input_tokens": 1000, "output_tokens": 6}}]}`)
	s, url := start(t, Config{Mode: Replay, Fixture: f}, nil)
	code, body := post(t, url+"/v1/responses", dummyKey, withTools(transcript.OpenAI, 0, true))
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var sawArgs, completed bool
	for _, l := range strings.Split(body, "\n") {
		d, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("event %q: %v", d, err)
		}
		switch ev["type"] {
		case "response.function_call_arguments.done":
			sawArgs = ev["arguments"] == `{"cmd":"echo hi \u003e x"}` || ev["arguments"] == `{"cmd":"echo hi > x"}`
		case "response.completed":
			completed = true
		}
	}
	if !sawArgs || !completed {
		t.Fatalf("function call arguments %v, completed %v in\n%s", sawArgs, completed, body)
	}
	got := s.Totals()
	if got.InputTokens != 900 || got.CachedInputTokens != 600 || got.OutputTokens != 25 || got.ReasoningTokens != 5 {
		t.Fatalf("metered %+v", got)
	}
}

// Codex's MCP tools: a search over them (tool_search_call, client-executed, its arguments
// an object) and a call of a namespaced function (namespace mcp__SERVER, name TOOL).
func TestScriptRendersCodexToolSearchAndNamespacedCalls(t *testing.T) {
	f := parseScriptText(t, `{"version": 1, "api": "openai", "turns": [
	  {"tool_calls": [{"name": "tool_search", "type": "tool_search", "input": {"query": "add", "limit": 2}}, {"name": "add", "namespace": "mcp__calc", "input": {"a": 2}}]},
	  {"text": "Done."}]}`)
	_, url := start(t, Config{Mode: Replay, Fixture: f}, nil)
	code, body := post(t, url+"/v1/responses", dummyKey, withTools(transcript.OpenAI, 0, true))
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var search, call bool
	for _, l := range strings.Split(body, "\n") {
		d, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type string         `json:"type"`
			Item map[string]any `json:"item"`
		}
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("event %q: %v", d, err)
		}
		if ev.Type != "response.output_item.done" {
			continue
		}
		b, _ := json.Marshal(ev.Item)
		switch ev.Item["type"] {
		case "tool_search_call":
			search = ev.Item["execution"] == "client" && strings.Contains(string(b), `"arguments":{"limit":2,"query":"add"}`)
		case "function_call":
			call = ev.Item["namespace"] == "mcp__calc" && ev.Item["name"] == "add"
		}
	}
	if !search || !call {
		t.Fatalf("tool_search_call %v, namespaced call %v in\n%s", search, call, body)
	}
}

// Codex's freeform apply_patch: a custom tool call whose input is the patch text, streamed
// as custom_tool_call_input deltas and done as a custom_tool_call item.
func TestScriptRendersACustomToolCall(t *testing.T) {
	f := parseScriptText(t, `{"version": 1, "api": "openai", "turns": [
	  {"tool_calls": [{"name": "apply_patch", "type": "custom", "input": {"input": "*** Begin Patch\n*** End Patch\n"}}]},
	  {"text": "Done."}]}`)
	_, url := start(t, Config{Mode: Replay, Fixture: f}, nil)
	code, body := post(t, url+"/v1/responses", dummyKey, withTools(transcript.OpenAI, 0, true))
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var delta, done bool
	for _, l := range strings.Split(body, "\n") {
		d, ok := strings.CutPrefix(l, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string         `json:"type"`
			Delta string         `json:"delta"`
			Item  map[string]any `json:"item"`
		}
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("event %q: %v", d, err)
		}
		switch ev.Type {
		case "response.custom_tool_call_input.delta":
			delta = ev.Delta == "*** Begin Patch\n*** End Patch\n"
		case "response.output_item.done":
			done = ev.Item["type"] == "custom_tool_call" && ev.Item["name"] == "apply_patch" && ev.Item["input"] == "*** Begin Patch\n*** End Patch\n" && ev.Item["call_id"] != nil
		}
	}
	if !delta || !done {
		t.Fatalf("input delta %v, custom_tool_call %v in\n%s", delta, done, body)
	}
}

func TestParseScriptNamesTheLine(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"version", "version: 2\napi: anthropic\nturns: [{text: hi}]\n", "line 1: version 2"},
		{"api", "version: 1\napi: gemini\nturns: [{text: hi}]\n", "line 2: api \"gemini\""},
		{"empty turn", "version: 1\napi: openai\nturns:\n  - text: hi\n  - usage: {output_tokens: 1}\n", "line 5: turn 1 has neither"},
		{"unknown field", "version: 1\napi: openai\nturns:\n  - txt: hi\n", "line 4: field txt not found"},
		{"usage sum", "version: 1\napi: openai\nturns:\n  - text: hi\n    usage: {input_tokens: 1, cached_input_tokens: 2}\n", "line 4: turn 0: input_tokens (1)"},
		{"tool name", "version: 1\napi: openai\nturns:\n  - tool_calls: [{input: {}}]\n", "line 4: turn 0 tool call 0 has no name"},
		{"tool type", "version: 1\napi: openai\nturns:\n  - tool_calls: [{name: x, type: web_search}]\n", "line 4: turn 0 tool call 0: type \"web_search\": the only types are tool_search"},
		{"custom input", "version: 1\napi: openai\nturns:\n  - tool_calls: [{name: apply_patch, type: custom, input: {patch: x}}]\n", "line 4: turn 0 tool call 0: a custom tool call's input is {input: TEXT}"},
		{"tool_search of anthropic", "version: 1\napi: anthropic\nturns:\n  - tool_calls: [{name: x, type: tool_search}]\n", "line 4: turn 0 tool call 0: type \"tool_search\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := transcript.ParseFixture(strings.NewReader(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
			var fe *transcript.FixtureError
			if c.name != "unknown field" && !errors.As(err, &fe) {
				t.Fatalf("err %T is not a transcript.FixtureError", err)
			}
		})
	}
}
