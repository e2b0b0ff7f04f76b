package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// A script is a hand-written replay fixture: the model's turns, each with text, tool calls
// and the usage to report. The gateway renders each answer in the API and streaming form the
// request asks for, so one script serves both streamed and plain requests.
//
//	version: 1
//	api: anthropic            # or openai
//	turns:
//	  - text: "I'll write the file."
//	    tool_calls:
//	      - name: Write
//	        input: {file_path: /workspace/hello.txt, content: "Hello\n"}
//	    usage: {input_tokens: 1200, cached_input_tokens: 1000, output_tokens: 40}
//	  - text: Done.
//	    usage: {input_tokens: 1300, output_tokens: 5}
//
// Turn i answers the request with tools whose conversation already holds i assistant
// turns. Usage is normalised as in Usage: input_tokens counts every input token, cached
// ones included.
type script struct {
	Version int          `yaml:"version"`
	API     string       `yaml:"api"`
	Turns   []scriptTurn `yaml:"turns"`
}

type scriptTurn struct {
	Text      string           `yaml:"text"`
	ToolCalls []scriptToolCall `yaml:"tool_calls"`
	Usage     scriptUsage      `yaml:"usage"`
}

type scriptToolCall struct {
	Name  string         `yaml:"name"`
	Input map[string]any `yaml:"input"`
	// Namespace is a Responses API function's namespace (Codex puts each MCP server's tools
	// in one, mcp__SERVER); "" for a tool of no namespace.
	Namespace string `yaml:"namespace"`
	// Type "tool_search" (Responses API only) is a search Codex runs over the MCP tools it
	// defers (input: {query, limit}), answered as a tool_search_call; "custom" (Responses API
	// only) calls a freeform tool such as Codex's apply_patch with input {input: TEXT},
	// answered as a custom_tool_call; "" is a function call.
	Type string `yaml:"type"`
}

type scriptUsage struct {
	Input         int64 `yaml:"input_tokens"`
	Cached        int64 `yaml:"cached_input_tokens"`
	CacheCreation int64 `yaml:"cache_creation_input_tokens"`
	Output        int64 `yaml:"output_tokens"`
	Reasoning     int64 `yaml:"reasoning_output_tokens"`
}

// isScript says whether a fixture's bytes are a script rather than a transcript: a
// transcript is JSON lines, a script is one YAML (or JSON) document with version and turns.
func isScript(data []byte) bool {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return len(t) > 0
	}
	var probe struct {
		Turns json.RawMessage `json:"turns"`
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	return dec.Decode(&probe) == nil && probe.Turns != nil
}

// parseScript reads and checks a script; errors name the line where yaml.v3 knows it.
func parseScript(data []byte) (*Fixture, error) {
	var s script
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FixtureError{1, "the fixture is empty"}
		}
		return nil, fmt.Errorf("model script: %w", err)
	}
	var n yaml.Node
	_ = yaml.Unmarshal(data, &n)
	line := func(path ...string) int { return nodeLine(&n, path...) }
	switch {
	case s.Version != 1:
		return nil, &FixtureError{line("version"), fmt.Sprintf("version %d: want version: 1", s.Version)}
	case s.API != Anthropic && s.API != OpenAI:
		return nil, &FixtureError{line("api"), fmt.Sprintf("api %q: want anthropic or openai", s.API)}
	case len(s.Turns) == 0:
		return nil, &FixtureError{line("turns"), "the script holds no turns"}
	}
	for i, t := range s.Turns {
		at := line("turns", fmt.Sprint(i))
		if t.Text == "" && len(t.ToolCalls) == 0 {
			return nil, &FixtureError{at, fmt.Sprintf("turn %d has neither text nor tool_calls", i)}
		}
		u := t.Usage
		if u.Input < 0 || u.Cached < 0 || u.CacheCreation < 0 || u.Output < 0 || u.Reasoning < 0 {
			return nil, &FixtureError{at, fmt.Sprintf("turn %d: usage counts must not be negative", i)}
		}
		if u.Cached+u.CacheCreation > u.Input {
			return nil, &FixtureError{at, fmt.Sprintf("turn %d: input_tokens (%d) counts every input token, so it cannot be less than cached_input_tokens + cache_creation_input_tokens (%d)", i, u.Input, u.Cached+u.CacheCreation)}
		}
		if u.Reasoning > u.Output {
			return nil, &FixtureError{at, fmt.Sprintf("turn %d: reasoning_output_tokens is part of output_tokens and cannot exceed it", i)}
		}
		for j, c := range t.ToolCalls {
			if c.Name == "" {
				return nil, &FixtureError{at, fmt.Sprintf("turn %d tool call %d has no name", i, j)}
			}
			if c.Type != "" && (c.Type != "tool_search" && c.Type != "custom" || s.API != OpenAI) {
				return nil, &FixtureError{at, fmt.Sprintf("turn %d tool call %d: type %q: the only types are tool_search (Codex's search over the MCP tools it defers) and custom (a freeform tool such as apply_patch), of api openai", i, j, c.Type)}
			}
			if _, ok := c.Input["input"].(string); c.Type == "custom" && (!ok || len(c.Input) != 1) {
				return nil, &FixtureError{at, fmt.Sprintf("turn %d tool call %d: a custom tool call's input is {input: TEXT} and nothing else", i, j)}
			}
			// Rendered at request time: whatever cannot be JSON (NaN, a map with non-string
			// keys) is refused here, never in the middle of a run.
			if _, err := json.Marshal(toolInput(c)); err != nil {
				return nil, &FixtureError{at, fmt.Sprintf("turn %d tool call %d: input cannot be sent as JSON: %v", i, j, err)}
			}
		}
	}
	return &Fixture{script: &s, index: map[Key][]int{}}, nil
}

// nodeLine finds the line of a mapping key (or sequence index) path in a YAML document; 1
// when it cannot.
func nodeLine(n *yaml.Node, path ...string) int {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	line := max(n.Line, 1)
	for _, p := range path {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line, next = n.Content[i].Line, n.Content[i+1]
				}
			}
		case yaml.SequenceNode:
			var idx int
			if _, err := fmt.Sscan(p, &idx); err == nil && idx >= 0 && idx < len(n.Content) {
				next = n.Content[idx]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// ScriptTotals is the script's total usage and turn count, for tests and reports; zero for a
// transcript fixture.
func (f *Fixture) ScriptTotals() (turns int, u Usage) {
	if f.script == nil {
		return 0, Usage{}
	}
	for _, t := range f.script.Turns {
		u.Input += t.Usage.Input
		u.Cached += t.Usage.Cached
		u.CacheCreation += t.Usage.CacheCreation
		u.Output += t.Usage.Output
		u.Reasoning += t.Usage.Reasoning
	}
	return len(f.script.Turns), u
}

// Answers says whether the fixture holds any answer for api.
func (f *Fixture) Answers(api string) bool {
	if f.script != nil {
		return f.script.API == api
	}
	for _, c := range f.Calls {
		if c.API == api {
			return true
		}
	}
	return false
}

// ScriptAnswer renders turn k.Depth for a request with tools; nil when the script has no
// such turn (or the request is for the other API, or offers no tools).
func (f *Fixture) ScriptAnswer(k Key, model string, stream bool) *Call {
	s := f.script
	if s == nil || k.API != s.API || !k.Tools || k.Depth >= len(s.Turns) {
		return nil
	}
	t := s.Turns[k.Depth]
	c := &Call{API: k.API, Depth: k.Depth, Tools: true, Stream: stream, Status: 200}
	if k.API == Anthropic {
		c.ContentType, c.Response = renderAnthropic(k.Depth, t, model, stream)
	} else {
		c.ContentType, c.Response = renderResponses(k.Depth, t, model, stream)
	}
	return c
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps, strings and numbers built here
	}
	return string(b)
}

type obj = map[string]any

func toolInput(c scriptToolCall) obj {
	if c.Input == nil {
		return obj{}
	}
	return c.Input
}

// renderAnthropic is turn t as a Messages API answer.
func renderAnthropic(n int, t scriptTurn, model string, stream bool) (string, string) {
	id := fmt.Sprintf("msg_ceval_%d", n)
	stop := "end_turn"
	if len(t.ToolCalls) > 0 {
		stop = "tool_use"
	}
	u := t.Usage
	usage := obj{"input_tokens": u.Input - u.Cached - u.CacheCreation, "cache_creation_input_tokens": u.CacheCreation,
		"cache_read_input_tokens": u.Cached, "output_tokens": u.Output}
	var blocks []obj
	if t.Text != "" {
		blocks = append(blocks, obj{"type": "text", "text": t.Text})
	}
	for i, c := range t.ToolCalls {
		blocks = append(blocks, obj{"type": "tool_use", "id": fmt.Sprintf("toolu_ceval_%d_%d", n, i), "name": c.Name, "input": toolInput(c)})
	}
	if !stream {
		return "application/json", mustJSON(obj{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
	}
	start := obj{"input_tokens": usage["input_tokens"], "cache_creation_input_tokens": u.CacheCreation,
		"cache_read_input_tokens": u.Cached, "output_tokens": 0}
	ev := []string{"message_start", mustJSON(obj{"type": "message_start", "message": obj{"id": id, "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": start}})}
	for i, b := range blocks {
		var first, delta obj
		if b["type"] == "text" {
			first = obj{"type": "text", "text": ""}
			delta = obj{"type": "text_delta", "text": b["text"]}
		} else {
			first = obj{"type": "tool_use", "id": b["id"], "name": b["name"], "input": obj{}}
			delta = obj{"type": "input_json_delta", "partial_json": mustJSON(b["input"])}
		}
		ev = append(ev,
			"content_block_start", mustJSON(obj{"type": "content_block_start", "index": i, "content_block": first}),
			"content_block_delta", mustJSON(obj{"type": "content_block_delta", "index": i, "delta": delta}),
			"content_block_stop", mustJSON(obj{"type": "content_block_stop", "index": i}))
	}
	ev = append(ev,
		"message_delta", mustJSON(obj{"type": "message_delta", "delta": obj{"stop_reason": stop, "stop_sequence": nil},
			"usage": obj{"output_tokens": u.Output}}),
		"message_stop", `{"type":"message_stop"}`)
	return "text/event-stream", sse(ev...)
}

// renderResponses is turn t as a Responses API answer.
func renderResponses(n int, t scriptTurn, model string, stream bool) (string, string) {
	id := fmt.Sprintf("resp_ceval_%d", n)
	u := t.Usage
	usage := obj{"input_tokens": u.Input, "input_tokens_details": obj{"cached_tokens": u.Cached},
		"output_tokens": u.Output, "output_tokens_details": obj{"reasoning_tokens": u.Reasoning},
		"total_tokens": u.Input + u.Output}
	var items []obj
	if t.Text != "" {
		items = append(items, obj{"type": "message", "id": fmt.Sprintf("msg_ceval_%d", n), "status": "completed", "role": "assistant",
			"content": []any{obj{"type": "output_text", "text": t.Text, "annotations": []any{}}}})
	}
	for i, c := range t.ToolCalls {
		if c.Type == "tool_search" {
			items = append(items, obj{"type": "tool_search_call", "id": fmt.Sprintf("ts_ceval_%d_%d", n, i),
				"call_id": fmt.Sprintf("call_ceval_%d_%d", n, i), "execution": "client", "arguments": toolInput(c), "status": "completed"})
			continue
		}
		if c.Type == "custom" {
			items = append(items, obj{"type": "custom_tool_call", "id": fmt.Sprintf("ctc_ceval_%d_%d", n, i),
				"call_id": fmt.Sprintf("call_ceval_%d_%d", n, i), "name": c.Name, "input": c.Input["input"], "status": "completed"})
			continue
		}
		fc := obj{"type": "function_call", "id": fmt.Sprintf("fc_ceval_%d_%d", n, i),
			"call_id": fmt.Sprintf("call_ceval_%d_%d", n, i), "name": c.Name, "arguments": mustJSON(toolInput(c)), "status": "completed"}
		if c.Namespace != "" {
			fc["namespace"] = c.Namespace
		}
		items = append(items, fc)
	}
	done := obj{"id": id, "object": "response", "status": "completed", "model": model, "output": items, "usage": usage}
	if !stream {
		return "application/json", mustJSON(done)
	}
	seq := 0
	var ev []string
	add := func(typ string, fields obj) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		ev = append(ev, typ, mustJSON(fields))
	}
	add("response.created", obj{"response": obj{"id": id, "object": "response", "status": "in_progress", "model": model, "output": []any{}}})
	for i, it := range items {
		itemID := it["id"]
		if it["type"] == "tool_search_call" {
			add("response.output_item.added", obj{"output_index": i, "item": it})
		} else if it["type"] == "custom_tool_call" {
			add("response.output_item.added", obj{"output_index": i, "item": obj{"type": "custom_tool_call", "id": itemID,
				"call_id": it["call_id"], "name": it["name"], "input": "", "status": "in_progress"}})
			add("response.custom_tool_call_input.delta", obj{"item_id": itemID, "output_index": i, "delta": it["input"]})
			add("response.custom_tool_call_input.done", obj{"item_id": itemID, "output_index": i, "input": it["input"]})
		} else if it["type"] == "message" {
			add("response.output_item.added", obj{"output_index": i, "item": obj{"type": "message", "id": itemID, "status": "in_progress", "role": "assistant", "content": []any{}}})
			add("response.output_text.delta", obj{"item_id": itemID, "output_index": i, "content_index": 0, "delta": t.Text})
			add("response.output_text.done", obj{"item_id": itemID, "output_index": i, "content_index": 0, "text": t.Text})
		} else {
			added := obj{"type": "function_call", "id": itemID, "call_id": it["call_id"], "name": it["name"], "arguments": "", "status": "in_progress"}
			if ns, ok := it["namespace"]; ok {
				added["namespace"] = ns
			}
			add("response.output_item.added", obj{"output_index": i, "item": added})
			add("response.function_call_arguments.delta", obj{"item_id": itemID, "output_index": i, "delta": it["arguments"]})
			add("response.function_call_arguments.done", obj{"item_id": itemID, "output_index": i, "arguments": it["arguments"]})
		}
		add("response.output_item.done", obj{"output_index": i, "item": it})
	}
	add("response.completed", obj{"response": done})
	return "text/event-stream", sse(ev...)
}
