package atif

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"ceval.dev/ceval/gateway/transcript"
)

// Caps on what a transcript can make the exporter hold. The gateway caps a request at 16
// MiB and a recorded answer at 32 MiB, so longer lines are not its own.
const (
	MaxLineBytes = transcript.MaxLineBytes
	MaxNotes     = 20
)

// Meta is what the trajectory says about the run, from its result.json.
type Meta struct {
	Agent     Agent
	SessionID string
	Extra     map[string]any
}

// parsed is one transcript line, read.
type parsed struct {
	line    int
	call    transcript.Call // Request and Response dropped once read
	system  string
	users   []string // the request's user messages with text, in order
	results []result // tool results the request carried
	answer  *answer  // nil when the call got no answer the exporter could read
}

type result struct {
	id, content string
	isError     bool
}

type answer struct {
	text, reasoning, stop string
	calls                 []ToolCall
}

// Build converts a transcript (model_calls.jsonl) to a trajectory. Only an I/O error fails
// it: a line it cannot read becomes a note. A transcript with no model call yields a
// trajectory without steps, which the caller skips (see ErrNoCalls).
func Build(r io.Reader, meta Meta) (*Trajectory, error) {
	var lines []parsed
	var notes []string
	note := func(format string, args ...any) {
		if len(notes) < MaxNotes {
			notes = append(notes, fmt.Sprintf(format, args...))
		}
	}
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		data, tooLong, err := transcript.ReadLine(br)
		switch {
		case tooLong:
			note("%s line %d: longer than %d MiB, skipped", transcriptName, n, MaxLineBytes>>20)
		case len(data) > 0:
			var c transcript.Call
			if jerr := json.Unmarshal(data, &c); jerr != nil {
				note("%s line %d: not a transcript line (%s)", transcriptName, n, shortErr(jerr))
			} else {
				lines = append(lines, parse(n, c))
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the model gateway's transcript %s: %w", transcriptName, err)
		}
	}
	return assemble(lines, notes, meta), nil
}

const transcriptName = "model_calls.jsonl"

func assemble(lines []parsed, notes []string, meta Meta) *Trajectory {
	t := &Trajectory{SchemaVersion: SchemaVersion, SessionID: meta.SessionID, TrajectoryID: meta.SessionID,
		Agent: meta.Agent, Steps: []Step{}, Extra: meta.Extra}
	note := func(format string, args ...any) {
		if len(notes) < MaxNotes {
			notes = append(notes, fmt.Sprintf(format, args...))
		}
	}
	// When any call offered tools, calls that offered none are the CLI's side requests (a
	// title, a quota check): not turns of the conversation.
	anyTools := false
	for _, p := range lines {
		anyTools = anyTools || p.call.Tools
	}
	results := map[string]result{}
	var seen []string // the user messages of the conversation so far
	started := false
	var side, unanswered int
	var sidePrompt, sideCompletion int64
	var sideCost float64
	fm := &FinalMetrics{}
	var cost float64
	priced := false
	add := func(s Step) {
		s.StepID = len(t.Steps) + 1
		t.Steps = append(t.Steps, s)
	}
	for _, p := range lines {
		if anyTools && !p.call.Tools {
			side++
			if u := p.call.Usage; u != nil {
				sidePrompt += u.Input
				sideCompletion += u.Output
				sideCost += u.CostUSD
			}
			continue
		}
		for _, r := range p.results {
			if _, ok := results[r.id]; !ok {
				results[r.id] = r
			}
		}
		if !started && p.system != "" {
			add(Step{Timestamp: p.call.Time, Source: SourceSystem, Message: p.system})
		}
		started = true
		common := 0
		for common < len(seen) && common < len(p.users) && seen[common] == p.users[common] {
			common++
		}
		for _, u := range p.users[common:] {
			add(Step{Timestamp: p.call.Time, Source: SourceUser, Message: u})
		}
		if len(p.users) > 0 {
			seen = p.users
		}
		if p.answer == nil {
			unanswered++
			why := fmt.Sprintf("status %d", p.call.Status)
			switch {
			case p.call.BodiesDropped:
				why = "the transcript had reached its size cap, the answer was not recorded"
			case p.call.Refused != "":
				why += ", refused by the gateway: " + p.call.Refused
			case p.call.Outcome != "":
				why += ", " + p.call.Outcome
			}
			note("%s line %d: no answer to export (%s)", transcriptName, p.line, why)
			continue
		}
		one := 1
		s := Step{Timestamp: p.call.Time, Source: SourceAgent, ModelName: p.call.Model, Message: p.answer.text,
			ReasoningContent: p.answer.reasoning, ToolCalls: p.answer.calls, LLMCallCount: &one,
			Extra: map[string]any{"api": p.call.API, "transcript_line": p.line, "duration_ms": p.call.DurationMS}}
		if p.answer.stop != "" {
			s.Extra["stop_reason"] = p.answer.stop
		}
		if p.call.Truncated {
			s.Extra["truncated"] = true
			note("%s line %d: the recorded answer was cut at the gateway's cap; the step holds what was recorded", transcriptName, p.line)
		}
		if p.call.Replayed {
			s.Extra["replayed"] = true
		}
		if u := p.call.Usage; u != nil {
			m := &Metrics{PromptTokens: u.Input, CompletionTokens: u.Output, CachedTokens: u.Cached}
			if u.CostUSD > 0 {
				c := u.CostUSD
				m.CostUSD = &c
				cost += c
				priced = true
			}
			if u.CacheCreation > 0 || u.Reasoning > 0 {
				m.Extra = map[string]any{}
				if u.CacheCreation > 0 {
					m.Extra["cache_creation_input_tokens"] = u.CacheCreation
				}
				if u.Reasoning > 0 {
					m.Extra["reasoning_tokens"] = u.Reasoning
				}
			}
			s.Metrics = m
			fm.TotalPromptTokens += u.Input
			fm.TotalCompletionTokens += u.Output
			fm.TotalCachedTokens += u.Cached
		}
		add(s)
	}
	// Tool results come in later requests: attach each to the step whose call it answers.
	for i := range t.Steps {
		s := &t.Steps[i]
		for _, c := range s.ToolCalls {
			r, ok := results[c.ToolCallID]
			if !ok {
				continue
			}
			if s.Observation == nil {
				s.Observation = &Observation{Results: []ObservationResult{}}
			}
			or := ObservationResult{SourceCallID: c.ToolCallID, Content: r.content}
			if r.isError {
				or.Extra = map[string]any{"is_error": true}
			}
			s.Observation.Results = append(s.Observation.Results, or)
		}
	}
	if priced {
		fm.TotalCostUSD = &cost
	}
	fm.TotalSteps = len(t.Steps)
	fm.Extra = map[string]any{"model_calls": len(lines), "unanswered_calls": unanswered}
	if side > 0 {
		fm.Extra["side_calls"] = side
		fm.Extra["side_prompt_tokens"] = sidePrompt
		fm.Extra["side_completion_tokens"] = sideCompletion
		fm.Extra["side_cost_usd"] = sideCost
		note("%d side request(s) of the agent CLI (no tools offered: a title, a quota check) are not steps; their usage is in final_metrics.extra", side)
	}
	t.FinalMetrics = fm
	t.Notes = "Exported by ceval from the model gateway's transcript (" + transcriptName + "): one agent step per model answer, tool results as the agent sent them back in its next request."
	if len(notes) > 0 {
		t.Notes += " " + strings.Join(notes, "; ")
	}
	return t
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// parse reads one call's request and answer.
func parse(n int, c transcript.Call) parsed {
	p := parsed{line: n}
	if len(c.Request) > 0 {
		switch c.API {
		case transcript.Anthropic:
			p.system, p.users, p.results = anthropicRequest(c.Request)
		case transcript.OpenAI:
			p.system, p.users, p.results = responsesRequest(c.Request)
		}
	}
	if !c.BodiesDropped && c.Status >= 200 && c.Status <= 299 && c.Response != "" {
		stream := strings.Contains(c.ContentType, "event-stream")
		switch c.API {
		case transcript.Anthropic:
			p.answer = anthropicAnswer(c.Response, stream)
		case transcript.OpenAI:
			p.answer = responsesAnswer(c.Response, stream)
		}
	}
	c.Request, c.Response = nil, ""
	p.call = c
	return p
}

// arguments makes a tool call's input a JSON object: an object as it is (numbers as
// written), anything else (free text, a cut answer) as {"input": "<the text>"}.
func arguments(raw []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err == nil && m != nil && !dec.More() {
		if b, err := marshalVerbatim(m); err == nil {
			return b, true
		}
	}
	b, _ := marshalVerbatim(map[string]string{"input": string(raw)})
	return b, false
}

// marshalVerbatim encodes v compactly without escaping HTML characters: the agent's text
// stays as it was written.
func marshalVerbatim(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func toolCall(id, name string, raw []byte) ToolCall {
	args, ok := arguments(raw)
	c := ToolCall{ToolCallID: id, FunctionName: name, Arguments: args}
	if !ok {
		c.Extra = map[string]any{"arguments_not_json_object": true}
	}
	return c
}

// textOf reads a string, or the text of an array of content blocks (Anthropic's text,
// the Responses API's input_text/output_text); other blocks (images) are named, not
// exported.
func textOf(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text", "input_text", "output_text":
			parts = append(parts, b.Text)
		case "tool_result", "tool_use", "function_call_output":
		default:
			parts = append(parts, "["+b.Type+" content not exported]")
		}
	}
	return strings.Join(parts, "\n"), len(parts) > 0
}

func anthropicRequest(req json.RawMessage) (system string, users []string, results []result) {
	var r struct {
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(req, &r) != nil {
		return "", nil, nil
	}
	system, _ = textOf(r.System)
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if len(m.Content) > 0 && m.Content[0] == '[' && json.Unmarshal(m.Content, &blocks) == nil {
			var texts []string
			for _, b := range blocks {
				switch b.Type {
				case "tool_result":
					c, _ := textOf(b.Content)
					results = append(results, result{id: b.ToolUseID, content: c, isError: b.IsError})
				case "text":
					texts = append(texts, b.Text)
				default:
					texts = append(texts, "["+b.Type+" content not exported]")
				}
			}
			if len(texts) > 0 {
				users = append(users, strings.Join(texts, "\n"))
			}
			continue
		}
		if t, ok := textOf(m.Content); ok {
			users = append(users, t)
		}
	}
	return system, users, results
}

func responsesRequest(req json.RawMessage) (system string, users []string, results []result) {
	var r struct {
		Instructions string          `json:"instructions"`
		Input        json.RawMessage `json:"input"`
	}
	if json.Unmarshal(req, &r) != nil {
		return "", nil, nil
	}
	system = r.Instructions
	var s string
	if json.Unmarshal(r.Input, &s) == nil {
		return system, []string{s}, nil
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		CallID  string          `json:"call_id"`
		Output  json.RawMessage `json:"output"`
	}
	if json.Unmarshal(r.Input, &items) != nil {
		return system, nil, nil
	}
	var sys []string
	if system != "" {
		sys = append(sys, system)
	}
	for _, it := range items {
		switch {
		case it.Type == "function_call_output" || it.Type == "custom_tool_call_output" || it.Type == "local_shell_call_output":
			c, _ := textOf(it.Output)
			results = append(results, result{id: it.CallID, content: c})
		case it.Type == "" || it.Type == "message":
			t, ok := textOf(it.Content)
			if !ok {
				continue
			}
			switch it.Role {
			case "user":
				users = append(users, t)
			case "system", "developer":
				sys = append(sys, t)
			}
		}
	}
	return strings.Join(sys, "\n\n"), users, results
}

type anthropicBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
}

func anthropicAnswer(body string, stream bool) *answer {
	var blocks []anthropicBlock
	var stop string
	if !stream {
		var m struct {
			Content    []anthropicBlock `json:"content"`
			StopReason string           `json:"stop_reason"`
		}
		if json.Unmarshal([]byte(body), &m) != nil {
			return nil
		}
		blocks, stop = m.Content, m.StopReason
	} else {
		type open struct {
			b       anthropicBlock
			partial strings.Builder
			deltas  bool
		}
		var order []*open
		byIndex := map[int]*open{}
		transcript.SSEData(body, func(data []byte) {
			var ev struct {
				Type         string          `json:"type"`
				Index        int             `json:"index"`
				ContentBlock *anthropicBlock `json:"content_block"`
				Delta        *struct {
					Type        string `json:"type"`
					Text        string `json:"text"`
					Thinking    string `json:"thinking"`
					PartialJSON string `json:"partial_json"`
					StopReason  string `json:"stop_reason"`
				} `json:"delta"`
			}
			if json.Unmarshal(data, &ev) != nil {
				return
			}
			switch ev.Type {
			case "content_block_start":
				if ev.ContentBlock != nil {
					o := &open{b: *ev.ContentBlock}
					byIndex[ev.Index] = o
					order = append(order, o)
				}
			case "content_block_delta":
				o := byIndex[ev.Index]
				if o == nil || ev.Delta == nil {
					return
				}
				switch ev.Delta.Type {
				case "text_delta":
					o.b.Text += ev.Delta.Text
				case "thinking_delta":
					o.b.Thinking += ev.Delta.Thinking
				case "input_json_delta":
					if o.partial.Len()+len(ev.Delta.PartialJSON) <= MaxLineBytes {
						o.partial.WriteString(ev.Delta.PartialJSON)
					}
					o.deltas = true
				}
			case "message_delta":
				if ev.Delta != nil && ev.Delta.StopReason != "" {
					stop = ev.Delta.StopReason
				}
			}
		})
		for _, o := range order {
			if o.deltas {
				o.b.Input = json.RawMessage(o.partial.String())
			}
			blocks = append(blocks, o.b)
		}
	}
	a := &answer{stop: stop}
	var texts, thoughts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "thinking":
			thoughts = append(thoughts, b.Thinking)
		case "tool_use":
			if b.ID != "" && b.Name != "" {
				a.calls = append(a.calls, toolCall(b.ID, b.Name, b.Input))
			}
		}
	}
	a.text, a.reasoning = strings.Join(texts, "\n"), strings.Join(thoughts, "\n")
	return a
}

func responsesAnswer(body string, stream bool) *answer {
	var items []json.RawMessage
	var status string
	if !stream {
		var r struct {
			Status string            `json:"status"`
			Output []json.RawMessage `json:"output"`
		}
		if json.Unmarshal([]byte(body), &r) != nil {
			return nil
		}
		items, status = r.Output, r.Status
	} else {
		var done, completed []json.RawMessage
		transcript.SSEData(body, func(data []byte) {
			var ev struct {
				Type     string          `json:"type"`
				Item     json.RawMessage `json:"item"`
				Response *struct {
					Status string            `json:"status"`
					Output []json.RawMessage `json:"output"`
				} `json:"response"`
			}
			if json.Unmarshal(data, &ev) != nil {
				return
			}
			switch ev.Type {
			case "response.output_item.done":
				done = append(done, ev.Item)
			case "response.completed", "response.incomplete":
				if ev.Response != nil {
					completed, status = ev.Response.Output, ev.Response.Status
				}
			}
		})
		items = done
		if len(items) == 0 {
			items = completed
		}
	}
	a := &answer{stop: status}
	var texts, thoughts []string
	for _, raw := range items {
		var it struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Input     string          `json:"input"`
			Action    json.RawMessage `json:"action"`
			Content   []struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Refusal string `json:"refusal"`
			} `json:"content"`
			Summary []struct {
				Text string `json:"text"`
			} `json:"summary"`
		}
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		id := it.CallID
		if id == "" {
			id = it.ID
		}
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					texts = append(texts, c.Text)
				case "refusal":
					texts = append(texts, c.Refusal)
				}
			}
		case "reasoning":
			for _, s := range it.Summary {
				thoughts = append(thoughts, s.Text)
			}
			for _, c := range it.Content {
				if c.Type == "reasoning_text" {
					thoughts = append(thoughts, c.Text)
				}
			}
		case "function_call":
			if id != "" && it.Name != "" {
				a.calls = append(a.calls, toolCall(id, it.Name, []byte(it.Arguments)))
			}
		case "custom_tool_call":
			if id != "" && it.Name != "" {
				b, _ := marshalVerbatim(map[string]string{"input": it.Input})
				a.calls = append(a.calls, ToolCall{ToolCallID: id, FunctionName: it.Name, Arguments: b})
			}
		case "local_shell_call":
			if id != "" {
				a.calls = append(a.calls, toolCall(id, "local_shell", it.Action))
			}
		}
	}
	a.text, a.reasoning = strings.Join(texts, "\n"), strings.Join(thoughts, "\n")
	return a
}
