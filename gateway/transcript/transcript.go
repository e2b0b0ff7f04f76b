package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// APIs the gateway speaks; each is also the name of its upstream provider.
const (
	Anthropic = "anthropic" // Messages API: POST /v1/messages
	OpenAI    = "openai"    // Responses API: POST /v1/responses
)

// Usage is one model call's tokens as the provider reported them, normalised: Input counts
// every input token, cached ones included.
type Usage struct {
	Input         int64 `json:"input_tokens"`
	Cached        int64 `json:"cached_input_tokens,omitempty"`
	CacheCreation int64 `json:"cache_creation_input_tokens,omitempty"`
	Output        int64 `json:"output_tokens"`
	Reasoning     int64 `json:"reasoning_output_tokens,omitempty"`
	// CostUSD is the call's price at its model's rate (Config.Prices); 0 when unpriced.
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// Call is one line of the transcript (model_calls.jsonl). In record mode it holds the
// rewritten request and the full response, and a record transcript is a replay fixture.
type Call struct {
	Time       string  `json:"time"`
	API        string  `json:"api"`
	Model      string  `json:"model,omitempty"`
	Depth      int     `json:"depth"` // assistant turns the request already held
	Tools      bool    `json:"tools"` // the request offered client-side tools
	Stream     bool    `json:"stream"`
	Status     int     `json:"status"`
	Usage      *Usage  `json:"usage,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	Attempts   int     `json:"attempts,omitempty"` // upstream attempts
	Refused    string  `json:"refused,omitempty"`  // why the gateway answered itself
	// Outcome says why a call got no whole answer (Outcome* constants); "" when it did.
	Outcome  string          `json:"outcome,omitempty"`
	Stripped int             `json:"stripped_tools,omitempty"`
	Replayed bool            `json:"replayed,omitempty"`
	Request  json.RawMessage `json:"request,omitempty"`
	// ContentType and Response are the answer as sent (record mode, and fixtures).
	ContentType string `json:"content_type,omitempty"`
	Response    string `json:"response,omitempty"`
	Truncated   bool   `json:"truncated,omitempty"`
	// BodiesDropped: the transcript had reached its size cap; request and answer left out.
	BodiesDropped bool `json:"bodies_dropped,omitempty"`
}

// Key is what a replayed request is matched on: the API, the conversation's depth
// (not the request order, since CLIs make side requests), and whether it offers tools.
type Key struct {
	API   string
	Depth int
	Tools bool
}

// Fixture is a replay script: the answers of recorded (or hand-written) calls.
type Fixture struct {
	Calls  []Call
	index  map[Key][]int
	script *script // a hand-written script instead of recorded calls
}

// MaxFixtureBytes bounds a fixture file.
const MaxFixtureBytes = 64 << 20

// FixtureError is a problem at a line of a fixture.
type FixtureError struct {
	Line int
	Msg  string
}

func (e *FixtureError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// ParseFixture reads a fixture: either a script of turns (see script) or JSON lines in the
// transcript's format, each with api, depth, tools, status, content_type and response
// (a record-mode transcript is one). Blank lines are skipped.
func ParseFixture(r io.Reader) (*Fixture, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFixtureBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFixtureBytes {
		return nil, &FixtureError{1, fmt.Sprintf("the fixture is larger than %d MiB", MaxFixtureBytes>>20)}
	}
	if isScript(data) {
		return parseScript(data)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), MaxFixtureBytes)
	f := &Fixture{index: map[Key][]int{}}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		var c Call
		if err := dec.Decode(&c); err != nil {
			return nil, &FixtureError{line, "not a JSON call: " + err.Error()}
		}
		switch {
		case c.API != Anthropic && c.API != OpenAI:
			return nil, &FixtureError{line, fmt.Sprintf("api %q: want anthropic or openai", c.API)}
		case c.Depth < 0:
			return nil, &FixtureError{line, "depth must not be negative"}
		case c.Status < 100 || c.Status > 599:
			return nil, &FixtureError{line, fmt.Sprintf("status %d is not an HTTP status", c.Status)}
		case c.Response == "":
			return nil, &FixtureError{line, "response is empty"}
		case c.Truncated:
			return nil, &FixtureError{line, "the response was truncated when recorded"}
		}
		if c.ContentType == "" {
			c.ContentType = "application/json"
		}
		k := Key{c.API, c.Depth, c.Tools}
		f.index[k] = append(f.index[k], len(f.Calls))
		f.Calls = append(f.Calls, c)
	}
	if err := sc.Err(); err != nil {
		return nil, &FixtureError{line + 1, err.Error()}
	}
	if len(f.Calls) == 0 {
		return nil, &FixtureError{1, "the fixture holds no calls"}
	}
	return f, nil
}

// Recorded returns the indexes in Calls of the recorded answers for requests with key k, in
// order.
func (f *Fixture) Recorded(k Key) []int { return f.index[k] }

// Scripted says whether the fixture is a hand-written script (see ScriptAnswer).
func (f *Fixture) Scripted() bool { return f.script != nil }

// DefaultAnswer is a side request's answer (a title, a summary) when the fixture has none.
func DefaultAnswer(api, model string, stream bool) (contentType, body string) {
	const text = "OK"
	if api == Anthropic {
		if !stream {
			return "application/json", fmt.Sprintf(`{"id":"msg_ceval_default","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":%q}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`, model, text)
		}
		return "text/event-stream", sse(
			"message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_ceval_default","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`, model),
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, text),
			"content_block_stop", `{"type":"content_block_stop","index":0}`,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":0}}`,
			"message_stop", `{"type":"message_stop"}`)
	}
	resp := fmt.Sprintf(`{"id":"resp_ceval_default","object":"response","status":"completed","model":%q,"output":[{"type":"message","id":"msg_ceval_default","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}],"usage":{"input_tokens":0,"output_tokens":0,"total_tokens":0}}`, model, text)
	if !stream {
		return "application/json", resp
	}
	return "text/event-stream", sse(
		"response.created", fmt.Sprintf(`{"type":"response.created","response":{"id":"resp_ceval_default","object":"response","status":"in_progress","model":%q,"output":[]}}`, model),
		"response.output_text.delta", fmt.Sprintf(`{"type":"response.output_text.delta","item_id":"msg_ceval_default","output_index":0,"content_index":0,"delta":%q}`, text),
		"response.output_item.done", fmt.Sprintf(`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_ceval_default","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}}`, text),
		"response.completed", `{"type":"response.completed","response":`+resp+`}`)
}

// sse formats name/data pairs as server-sent events.
func sse(pairs ...string) string {
	var b bytes.Buffer
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", pairs[i], pairs[i+1])
	}
	return b.String()
}
