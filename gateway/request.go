package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"ceval.dev/ceval/gateway/transcript"
)

// request is a parsed, rewritten model request.
type request struct {
	api    string
	body   map[string]any
	model  string
	stream bool
	tools  bool // the request offers the model client-side tools
	depth  int  // assistant turns the conversation already holds
}

// parseRequest decodes a request body; numbers are kept as written.
func parseRequest(api string, data []byte) (*request, error) {
	values, depth := measureJSON(data, maxJSONValues)
	if values > maxJSONValues {
		return nil, fmt.Errorf("the request body holds more than %d JSON values; the gateway refuses it to bound its memory (a real conversation holds far fewer)", maxJSONValues)
	}
	if depth > maxBodyDepth {
		return nil, fmt.Errorf("the request body nests objects and arrays more than %d deep; the gateway refuses it to bound its checks (a real conversation nests a few dozen at most)", maxBodyDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var body map[string]any
	if err := dec.Decode(&body); err != nil || body == nil {
		return nil, fmt.Errorf("the request body is not a JSON object")
	}
	r := &request{api: api, body: body}
	r.model, _ = body["model"].(string)
	r.stream, _ = body["stream"].(bool)
	if api == transcript.Anthropic {
		r.depth = assistantTurns(body["messages"])
	} else {
		r.depth = assistantTurns(body["input"])
	}
	return r, nil
}

// maxJSONValues bounds the values in a request body before it is decoded: decoding costs
// some 70 bytes of heap per value, so a body of millions of tiny values would cost ceval
// gigabytes; real requests, mostly long strings, hold a few tens of thousands.
const maxJSONValues = 1 << 19

// measureJSON counts, roughly and without validating, the values of a JSON text (one, plus
// one per container and per separator outside strings), stopping past limit, and the
// deepest nesting of its objects and arrays.
func measureJSON(data []byte, limit int) (values, depth int) {
	n, inStr, esc, d := 1, false, false, 0
	for _, c := range data {
		switch {
		case esc:
			esc = false
		case inStr:
			esc = c == '\\'
			inStr = c != '"'
		case c == '"':
			inStr = true
		case c == ']' || c == '}':
			d--
		case c == ',' || c == '[' || c == '{':
			if c != ',' {
				d++
				depth = max(depth, d)
			}
			if n++; n > limit {
				return n, depth
			}
		}
	}
	return n, depth
}

// assistantTurns counts the runs of assistant-side items in a conversation: Anthropic
// messages with role assistant, or Responses input items that the model produced (its
// messages, function calls, reasoning).
func assistantTurns(v any) int {
	items, _ := v.([]any)
	n, in := 0, false
	for _, it := range items {
		m, _ := it.(map[string]any)
		role, _ := m["role"].(string)
		typ, _ := m["type"].(string)
		mine := role == "assistant" || (role == "" && typ != "" && typ != "message" && !strings.HasSuffix(typ, "_output"))
		if mine && !in {
			n++
		}
		in = mine
	}
	return n
}

// clientTool says whether a tool runs on the agent's side (the agent executes it in its
// container) rather than at the provider, where it could reach the internet or run code.
func clientTool(api string, t map[string]any) bool {
	typ, _ := t["type"].(string)
	if api == transcript.Anthropic {
		if typ == "" || typ == "custom" {
			return true
		}
		for _, p := range []string{"bash_", "text_editor_", "computer_", "memory_"} {
			if strings.HasPrefix(typ, p) {
				return true
			}
		}
		return false
	}
	switch typ {
	case "function", "custom", "local_shell":
		return true
	case "tool_search":
		// Codex's search over the MCP tools it defers: run by the CLI ("execution": "client").
		return t["execution"] == "client"
	case "namespace":
		// Codex groups each MCP server's tools (run by the agent's CLI) in a namespace: a
		// client tool when every tool it holds is one.
		nested, ok := t["tools"].([]any)
		if !ok || len(nested) == 0 {
			return false
		}
		for _, n := range nested {
			m, _ := n.(map[string]any)
			if m == nil || !clientTool(api, m) || m["type"] == "namespace" {
				return false
			}
		}
		return true
	}
	return false
}

// rewrite pins the model, clamps the output to remaining (<0: no budget) and strips
// provider-side tools and fields unless allowed; it returns how many tools were stripped.
func (r *request) rewrite(model string, remaining int64, allowServer bool) int {
	if model != "" {
		r.body["model"] = model
		r.model = model
	}
	field := r.outputField()
	if remaining >= 0 {
		cur, err := toInt(r.body[field])
		if err != nil || cur <= 0 || cur > remaining {
			r.body[field] = remaining
		}
	}
	stripped := 0
	if tools, ok := r.body["tools"].([]any); ok {
		kept := tools[:0:0]
		for _, t := range tools {
			m, _ := t.(map[string]any)
			if m == nil || (!allowServer && !clientTool(r.api, m)) {
				stripped++
				continue
			}
			kept = append(kept, t)
		}
		r.body["tools"] = kept
		if len(kept) == 0 {
			delete(r.body, "tools")
			delete(r.body, "tool_choice")
		}
		r.tools = len(kept) > 0
	}
	if !allowServer {
		// Remote MCP connectors, code-execution containers, background jobs.
		for _, f := range []string{"mcp_servers", "container", "background"} {
			if _, ok := r.body[f]; ok {
				delete(r.body, f)
				stripped++
			}
		}
	}
	return stripped
}

// outputField is the request field that caps the answer's output tokens.
func (r *request) outputField() string {
	if r.api == transcript.OpenAI {
		return "max_output_tokens"
	}
	return "max_tokens"
}

// maxOutput is the request's output cap after rewrite.
func (r *request) maxOutput() (int64, error) { return toInt(r.body[r.outputField()]) }

func toInt(v any) (int64, error) {
	switch n := v.(type) {
	case json.Number:
		return n.Int64()
	case int64:
		return n, nil
	}
	return 0, fmt.Errorf("not an integer")
}

// encode is the rewritten body as sent upstream and kept in the transcript.
func (r *request) encode() []byte {
	b, _ := marshalLine(r.body) // a decoded body always encodes
	return bytes.TrimSuffix(b, []byte("\n"))
}
