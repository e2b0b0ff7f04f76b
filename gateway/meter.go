package gateway

import (
	"bytes"
	"encoding/json"

	"ceval.dev/ceval/gateway/transcript"
)

// apiUsage is both providers' usage object.
type apiUsage struct {
	InputTokens   *int64 `json:"input_tokens"`
	OutputTokens  *int64 `json:"output_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	InputDetails  *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

type usageHolder struct {
	Usage *apiUsage `json:"usage"`
}

// event is an SSE event's data or a whole JSON response, as far as usage goes.
type event struct {
	Type     string       `json:"type"`
	Usage    *apiUsage    `json:"usage"`
	Message  *usageHolder `json:"message"`  // transcript.Anthropic message_start
	Response *usageHolder `json:"response"` // transcript.OpenAI response.completed and friends
}

// maxMeterLine bounds an SSE line or a non-streamed body the meter parses.
const maxMeterLine = 16 << 20

// meter reads usage out of a response as it passes: SSE events line by line, or a whole
// JSON body at the end. Lines over the cap are skipped.
type meter struct {
	api   string
	sse   bool
	buf   []byte
	over  bool
	found bool
	in    struct{ input, cacheCreation, cacheRead, cached, output, reasoning int64 }
}

func newMeter(api, contentType string) *meter {
	return &meter{api: api, sse: bytes.HasPrefix([]byte(contentType), []byte("text/event-stream"))}
}

func (m *meter) Write(p []byte) (int, error) {
	n := len(p)
	if !m.sse {
		if !m.over {
			if len(m.buf)+len(p) > maxMeterLine {
				m.over, m.buf = true, nil
			} else {
				m.buf = append(m.buf, p...)
			}
		}
		return n, nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !m.over {
				if len(m.buf)+len(p) > maxMeterLine {
					m.over, m.buf = true, nil
				} else {
					m.buf = append(m.buf, p...)
				}
			}
			return n, nil
		}
		if !m.over {
			m.line(append(m.buf, p[:i]...))
		}
		m.buf, m.over, p = m.buf[:0], false, p[i+1:]
	}
	return n, nil
}

func (m *meter) line(l []byte) {
	l = bytes.TrimRight(l, "\r")
	if d, ok := bytes.CutPrefix(l, []byte("data:")); ok {
		m.data(bytes.TrimSpace(d))
	}
}

func (m *meter) data(d []byte) {
	if len(d) == 0 || d[0] != '{' {
		return
	}
	var ev event
	if json.Unmarshal(d, &ev) != nil {
		return
	}
	for _, u := range []*apiUsage{ev.Usage, holderUsage(ev.Message), holderUsage(ev.Response)} {
		if u != nil {
			m.apply(u)
		}
	}
}

func holderUsage(h *usageHolder) *apiUsage {
	if h == nil {
		return nil
	}
	return h.Usage
}

// apply takes the fields present: Anthropic's message_delta repeats cumulative counts.
func (m *meter) apply(u *apiUsage) {
	m.found = true
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&m.in.input, u.InputTokens)
	set(&m.in.output, u.OutputTokens)
	set(&m.in.cacheCreation, u.CacheCreation)
	set(&m.in.cacheRead, u.CacheRead)
	if u.InputDetails != nil {
		m.in.cached = u.InputDetails.CachedTokens
	}
	if u.OutputDetails != nil {
		m.in.reasoning = u.OutputDetails.ReasoningTokens
	}
}

// usage returns the call's usage, or nil when the response reported none.
func (m *meter) usage() *transcript.Usage {
	if !m.sse && !m.over && len(m.buf) > 0 {
		m.data(bytes.TrimSpace(m.buf))
		m.buf = nil
	} else if m.sse && !m.over && len(m.buf) > 0 {
		m.line(m.buf)
		m.buf = nil
	}
	if !m.found {
		return nil
	}
	u := &transcript.Usage{Output: m.in.output, Reasoning: m.in.reasoning}
	if m.api == transcript.Anthropic {
		// Anthropic's input_tokens excludes cache reads and writes.
		u.Input = m.in.input + m.in.cacheCreation + m.in.cacheRead
		u.Cached, u.CacheCreation = m.in.cacheRead, m.in.cacheCreation
	} else {
		u.Input, u.Cached = m.in.input, m.in.cached
	}
	return u
}
