package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

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

	resv *reservation // what the call holds of the run's budgets while under way
}

// fixtureKey is what a replayed request is matched on: the API, the conversation's depth
// (not the request order, since CLIs make side requests), and whether it offers tools.
type fixtureKey struct {
	api   string
	depth int
	tools bool
}

// Fixture is a replay script: the answers of recorded (or hand-written) calls.
type Fixture struct {
	Calls  []Call
	index  map[fixtureKey][]int
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
	f := &Fixture{index: map[fixtureKey][]int{}}
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
		k := fixtureKey{c.API, c.Depth, c.Tools}
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

// next returns the answer for a request with key k: a script's turn at that depth, or the
// matching recorded calls in order, the last one repeated (a CLI may retry); nil when none
// matches.
func (s *Server) next(k fixtureKey, model string, stream bool) *Call {
	if s.cfg.Fixture.script != nil {
		return s.cfg.Fixture.scriptAnswer(k, model, stream)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := s.cfg.Fixture.index[k]
	if len(idx) == 0 {
		return nil
	}
	i := min(s.replay[k], len(idx)-1)
	s.replay[k]++
	return &s.cfg.Fixture.Calls[idx[i]]
}

// defaultAnswer is a side request's answer (a title, a summary) when the fixture has none.
func defaultAnswer(api, model string, stream bool) (contentType, body string) {
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
