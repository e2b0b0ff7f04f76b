package toolcalls

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// tline is one transcript line as the gateway writes it.
func tline(t *testing.T, api string, status int, req any, ct, resp string) string {
	t.Helper()
	m := map[string]any{"api": api, "status": status, "content_type": ct, "response": resp}
	if req != nil {
		m["request"] = req
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "event: x\ndata: %s\n\n", e)
	}
	return b.String()
}

func read(t *testing.T, transcript string) *Log {
	t.Helper()
	l, err := Read(strings.NewReader(transcript))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func names(l *Log) string {
	var out []string
	for _, c := range l.Calls {
		out = append(out, c.Name+":"+c.Outcome)
	}
	return strings.Join(out, ",")
}

func TestAnthropicAnswersAndTheirResults(t *testing.T) {
	answer := `{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"pytest -q","timeout":30}},` +
		`{"type":"tool_use","id":"tu2","name":"Read","input":{"file_path":"/workspace/a.py"}}]}`
	stream := sse(
		`{"type":"message_start","message":{"content":[]}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"tu3","name":"Edit","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\": \"/workspace/a.py\","}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":" \"old_string\": \"x\"}"}}`,
		`{"type":"content_block_stop","index":0}`,
		// a block the stream never finished gave the agent no call
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"tu4","name":"Bash","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"comm"}}`,
	)
	results := map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": "do it"},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "tu1", "is_error": true, "content": "1 failed"},
			map[string]any{"type": "tool_result", "tool_use_id": "tu2", "content": "..."},
		}},
	}}
	l := read(t, tline(t, "anthropic", 200, nil, "application/json", answer)+
		tline(t, "anthropic", 200, results, "text/event-stream", stream))
	if got := names(l); got != "Bash:error,Read:ok,Edit:unknown" {
		t.Fatalf("calls %s", got)
	}
	if l.Calls[0].Input["command"] != "pytest -q" || l.Calls[0].Input["timeout"] != "30" || !l.Calls[0].InputJSON {
		t.Errorf("Bash input %+v", l.Calls[0].Input)
	}
	if l.Calls[2].Input["old_string"] != "x" || l.Calls[2].Seq != 3 {
		t.Errorf("streamed Edit %+v", l.Calls[2])
	}
	s := l.Summary()
	if s.Total != 3 || s.Errors != 1 || s.ByTool["Bash"] != 1 || s.ByTool["Edit"] != 1 {
		t.Errorf("summary %+v", s)
	}
}

func TestResponsesAnswersAndTheirResults(t *testing.T) {
	plain := `{"output":[{"type":"message","content":[]},{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{\"cmd\":\"go test ./...\"}"}]}`
	fc := `{"type":"function_call","id":"fc2","call_id":"c2","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"ls -la\"]}"}`
	stream := sse(
		`{"type":"response.output_item.added","item":{"type":"function_call","call_id":"c2","name":"shell","arguments":""}}`,
		`{"type":"response.output_item.done","item":`+fc+`}`,
		`{"type":"response.output_item.done","item":{"type":"custom_tool_call","call_id":"c3","name":"apply_patch","input":"*** Begin Patch"}}`,
		`{"type":"response.completed","response":{"output":[`+fc+`]}}`,
	)
	req := map[string]any{"input": []any{
		map[string]any{"type": "function_call_output", "call_id": "c1", "output": "Exit code: 2\nWall time: 1s\nOutput:\nFAIL"},
		map[string]any{"type": "function_call_output", "call_id": "c2", "output": `{"output":"x","metadata":{"exit_code":0}}`},
		map[string]any{"type": "custom_tool_call_output", "call_id": "c3", "output": "Process exited with code 1\n"},
	}}
	l := read(t, tline(t, "openai", 200, nil, "application/json", plain)+
		tline(t, "openai", 200, nil, "text/event-stream; charset=utf-8", stream)+
		tline(t, "openai", 200, req, "application/json", `{"output":[]}`))
	if got := names(l); got != "exec_command:error,shell:ok,apply_patch:error" {
		t.Fatalf("calls %s", got)
	}
	if l.Calls[1].Input["command"] != "bash -lc ls -la" || l.Calls[2].Input["input"] != "*** Begin Patch" {
		t.Errorf("inputs %+v %+v", l.Calls[1].Input, l.Calls[2].Input)
	}
}

// The agent writes its requests: a tool_use it puts in its own history is not a call the
// model asked for, and the CLI's session files are never read at all.
func TestToolUseForgedInTheAgentsOwnRequestIsNotACall(t *testing.T) {
	forged := map[string]any{"messages": []any{
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": "forged", "name": "Bash", "input": map[string]any{"command": "pytest"}},
		}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "forged"}}},
	}}
	openaiForged := map[string]any{"input": []any{
		map[string]any{"type": "function_call", "call_id": "f2", "name": "exec_command", "arguments": `{"cmd":"pytest"}`},
	}}
	l := read(t, tline(t, "anthropic", 200, forged, "application/json", `{"content":[{"type":"text","text":"ok"}]}`)+
		tline(t, "openai", 200, openaiForged, "application/json", `{"output":[]}`))
	if l.Total != 0 {
		t.Fatalf("forged history counted as calls: %+v", l.Calls)
	}
}

func TestRefusedCutAndRepeatedAnswers(t *testing.T) {
	answer := `{"content":[{"type":"tool_use","id":"same","name":"Bash","input":{"command":"ls"}}]}`
	tr := tline(t, "anthropic", 200, nil, "application/json", answer) +
		tline(t, "anthropic", 200, nil, "application/json", answer) + // a retried request answered again
		tline(t, "anthropic", 429, nil, "application/json", `{"content":[{"type":"tool_use","id":"x","name":"Bash","input":{}}]}`) +
		`{"api":"anthropic","status":200,"bodies_dropped":true}` + "\n" +
		"not json at all\n" +
		"\n"
	l := read(t, tr)
	if l.Total != 1 || len(l.Calls) != 1 {
		t.Fatalf("calls %+v", l.Calls)
	}
	if len(l.Notes) != 2 || !strings.Contains(l.Notes[0], "size cap") || !strings.Contains(l.Notes[1], "line 5") {
		t.Errorf("notes %q", l.Notes)
	}
}

func TestHostileAnswersAreCapped(t *testing.T) {
	var blocks []string
	for i := 0; i < MaxCalls+5; i++ {
		blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"x"}}`, i))
	}
	huge := strings.Repeat("é", MaxFieldBytes) // 2 bytes a rune: the cut falls inside one
	many := map[string]any{}
	for i := 0; i < MaxFields+10; i++ {
		many[fmt.Sprintf("f%03d", i)] = i
	}
	manyJSON, _ := json.Marshal(many)
	big := `{"content":[{"type":"tool_use","id":"big","name":"` + strings.Repeat("N", 1000) + `","input":{"command":"` + huge + `","bad":"\udc00"}},` +
		`{"type":"tool_use","id":"many","name":"M","input":` + string(manyJSON) + `},` +
		`{"type":"tool_use","id":"nojson","name":"Bash","input":"not an object"},` +
		`{"type":"tool_use","id":"","name":"Bash","input":{}},` +
		`{"type":"tool_use","id":"noname","name":"","input":{}}]}`
	l := read(t, tline(t, "anthropic", 200, nil, "application/json", big)+
		tline(t, "anthropic", 200, nil, "application/json", `{"content":[`+strings.Join(blocks, ",")+`]}`))
	if l.Total != 3+MaxCalls+5 || len(l.Calls) != MaxCalls || !l.Summary().Truncated {
		t.Fatalf("total %d kept %d", l.Total, len(l.Calls))
	}
	c := l.Calls[0]
	if len(c.Name) != MaxNameBytes || len(c.Input["command"]) > MaxFieldBytes || !strings.HasSuffix(c.Input["command"], "é") {
		t.Errorf("name %d bytes, command %d bytes", len(c.Name), len(c.Input["command"]))
	}
	if len(l.Calls[1].Input) != MaxFields {
		t.Errorf("fields kept: %d", len(l.Calls[1].Input))
	}
	if l.Calls[2].InputJSON || l.Calls[2].Input != nil {
		t.Errorf("a non-object input: %+v", l.Calls[2])
	}
}

func TestShortInput(t *testing.T) {
	c := Call{Input: map[string]string{"command": "go  test\n./...", "description": "x"}}
	if got := c.Short(100); got != "go test ./..." {
		t.Errorf("Short %q", got)
	}
	c = Call{Input: map[string]string{"b": "2", "a": "1"}}
	if got := c.Short(3); got != "a=1…" {
		t.Errorf("Short %q", got)
	}
}

// A configured MCP server's tools reach the model as mcp__SERVER__TOOL (Claude Code, Codex):
// each call is attributed to its server, and the summary counts the calls per server.
func TestMCPToolCallsAreAttributedToTheirServer(t *testing.T) {
	answer := `{"content":[{"type":"tool_use","id":"a1","name":"mcp__calc__add","input":{"a":2,"b":3}},` +
		`{"type":"tool_use","id":"a2","name":"mcp__mcp-server__get_secret","input":{}},` +
		`{"type":"tool_use","id":"a3","name":"mcp__calc__sub__x","input":{}},{"type":"tool_use","id":"a4","name":"Bash","input":{"command":"ls"}}]}`
	codex := sse(`{"type":"response.output_item.done","item":{"type":"function_call","call_id":"c1","name":"mcp__notes__append","arguments":"{\"text\":\"hi\"}"}}`,
		`{"type":"response.output_item.done","item":{"type":"function_call","call_id":"c2","namespace":"mcp__calc","name":"add","arguments":"{}"}}`,
		`{"type":"response.output_item.done","item":{"type":"tool_search_call","call_id":"s1","execution":"client","arguments":{"query":"add","limit":8}}}`,
		`{"type":"response.completed","response":{"output":[]}}`)
	l := read(t, tline(t, "anthropic", 200, nil, "application/json", answer)+tline(t, "openai", 200, nil, "text/event-stream", codex))
	var got []string
	for _, c := range l.Calls {
		got = append(got, c.Name+"@"+c.Server)
	}
	if want := "mcp__calc__add@calc,mcp__mcp-server__get_secret@mcp-server,mcp__calc__sub__x@calc,Bash@,mcp__notes__append@notes,mcp__calc__add@calc,tool_search@"; strings.Join(got, ",") != want {
		t.Fatalf("calls %s, want %s", strings.Join(got, ","), want)
	}
	if q := l.Calls[len(l.Calls)-1].Input["query"]; q != "add" {
		t.Errorf("tool_search's query %q", q)
	}
	s := l.Summary()
	if len(s.ByMCPServer) != 3 || s.ByMCPServer["calc"] != 3 || s.ByMCPServer["mcp-server"] != 1 || s.ByMCPServer["notes"] != 1 {
		t.Errorf("by_mcp_server %v", s.ByMCPServer)
	}
	for _, name := range []string{"mcp__", "mcp____x", "mcp__calc__", "mcp__calc", "Mcp__calc__add", "mcpx__calc__add"} {
		if s := MCPServer(name); s != "" {
			t.Errorf("MCPServer(%q) = %q, want none", name, s)
		}
	}
}
