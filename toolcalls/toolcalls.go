package toolcalls

import (
	"bufio"
	"bytes"
	"ceval.dev/ceval/gateway/transcript"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Caps on what a transcript can make the reader hold. A line is one model call: the gateway
// caps a request at 16 MiB and a recorded answer at 32 MiB, so longer lines are not its own.
const (
	MaxLineBytes  = transcript.MaxLineBytes
	MaxCalls      = 10000 // calls kept; more are counted in Log.Total
	MaxNameBytes  = 200
	MaxFields     = 64
	MaxFieldBytes = 16 << 10
	MaxNotes      = 20
)

// Outcomes of a call, from the tool result the agent sent back in a later request.
const (
	OutcomeOK      = "ok"
	OutcomeError   = "error"
	OutcomeUnknown = "unknown" // no later request carried its result
)

// APIs as the gateway names them.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
)

// Call is one tool call the model asked for.
type Call struct {
	Seq  int    `json:"seq"` // 1-based, in the order the answers were logged
	API  string `json:"api"`
	ID   string `json:"id"`
	Name string `json:"name"`
	// Server is the MCP server of a tool the CLI named mcp__SERVER__TOOL (Claude Code's and
	// Codex's names for a configured server's tools); "" for the CLI's own tools.
	Server string `json:"server,omitempty"`
	// Input holds the call's top-level input fields: strings as they are, lists of strings
	// joined with spaces, anything else as JSON; each capped at MaxFieldBytes.
	Input map[string]string `json:"input,omitempty"`
	// InputJSON is false when the input did not parse as a JSON object (a cut answer, or a
	// tool whose input is free text, kept under the field "input").
	InputJSON bool   `json:"input_json"`
	Outcome   string `json:"outcome"`
}

// Log is what a transcript yields.
type Log struct {
	Calls []Call
	Total int      // every call seen, those past MaxCalls included
	Notes []string // lines or answers that could not be read, capped at MaxNotes
}

// Summary is result.json's compact record of the tool calls.
type Summary struct {
	Total  int            `json:"total"`
	Errors int            `json:"errors,omitempty"`
	ByTool map[string]int `json:"by_tool"`
	// ByMCPServer counts the calls of each MCP server's tools (see Call.Server).
	ByMCPServer map[string]int `json:"by_mcp_server,omitempty"`
	Truncated   bool           `json:"truncated,omitempty"` // more than MaxCalls: ByTool counts the kept ones
	Notes       []string       `json:"notes,omitempty"`
}

// Summary counts the calls per tool.
func (l *Log) Summary() *Summary {
	s := &Summary{Total: l.Total, ByTool: map[string]int{}, Truncated: l.Total > len(l.Calls), Notes: l.Notes}
	for _, c := range l.Calls {
		s.ByTool[c.Name]++
		if c.Server != "" {
			if s.ByMCPServer == nil {
				s.ByMCPServer = map[string]int{}
			}
			s.ByMCPServer[c.Server]++
		}
		if c.Outcome == OutcomeError {
			s.Errors++
		}
	}
	return s
}

// ReadFile reads a transcript file; a missing file is an empty log (a run whose agent made
// no model call).
func ReadFile(path string) (*Log, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Log{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}

// Read reads a transcript. Only an I/O error fails it; whatever a line holds becomes a note
// at worst.
func Read(r io.Reader) (*Log, error) {
	p := &parser{seen: map[string]bool{}, outcomes: map[string]string{}}
	br := bufio.NewReaderSize(r, 1<<20)
	for lineNo := 1; ; lineNo++ {
		line, tooLong, err := transcript.ReadLine(br)
		if len(line) > 0 || tooLong {
			if tooLong {
				p.note("line %d: longer than %d MiB, skipped", lineNo, MaxLineBytes>>20)
			} else {
				p.line(lineNo, line)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the model gateway's transcript: %w", err)
		}
	}
	for i := range p.log.Calls {
		c := &p.log.Calls[i]
		if o, ok := p.outcomes[c.API+"\x00"+c.ID]; ok {
			c.Outcome = o
		}
	}
	return &p.log, nil
}

type parser struct {
	log      Log
	seen     map[string]bool   // api + id of the calls counted: a call answered twice counts once
	outcomes map[string]string // api + id -> outcome, the first the agent reported
}

func (p *parser) note(format string, args ...any) {
	if len(p.log.Notes) < MaxNotes {
		p.log.Notes = append(p.log.Notes, fmt.Sprintf(format, args...))
	}
}

// line is one transcript line, as the gateway writes it (only the fields read here).
type line struct {
	API           string          `json:"api"`
	Status        int             `json:"status"`
	Request       json.RawMessage `json:"request"`
	ContentType   string          `json:"content_type"`
	Response      string          `json:"response"`
	Truncated     bool            `json:"truncated"`
	BodiesDropped bool            `json:"bodies_dropped"`
}

func (p *parser) line(n int, data []byte) {
	var l line
	if err := json.Unmarshal(data, &l); err != nil {
		p.note("line %d: not a transcript line (%v)", n, shortErr(err))
		return
	}
	if l.BodiesDropped {
		p.note("line %d: the transcript reached its size cap; this call's request and answer were not recorded", n)
		return
	}
	if len(l.Request) > 0 {
		p.outcomesOf(l.API, l.Request)
	}
	if l.Status < 200 || l.Status > 299 || l.Response == "" {
		return
	}
	if l.Truncated {
		p.note("line %d: the recorded answer was cut at the gateway's cap; calls in the cut part are not counted", n)
	}
	stream := strings.Contains(l.ContentType, "event-stream")
	switch l.API {
	case Anthropic:
		if stream {
			p.anthropicStream(l.Response)
		} else {
			p.anthropicMessage([]byte(l.Response))
		}
	case OpenAI:
		if stream {
			p.responsesStream(l.Response)
		} else {
			var r struct {
				Output []json.RawMessage `json:"output"`
			}
			if json.Unmarshal([]byte(l.Response), &r) == nil {
				for _, it := range r.Output {
					p.responsesItem(it)
				}
			}
		}
	}
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// add counts a call once per API and id.
func (p *parser) add(api, id, name string, input map[string]string, isJSON bool) {
	if id == "" || name == "" {
		return
	}
	key := api + "\x00" + id
	if p.seen[key] {
		return
	}
	p.seen[key] = true
	p.log.Total++
	if len(p.log.Calls) >= MaxCalls {
		return
	}
	name = capString(name, MaxNameBytes)
	p.log.Calls = append(p.log.Calls, Call{Seq: p.log.Total, API: api, ID: capString(id, MaxNameBytes),
		Name: name, Server: MCPServer(name), Input: input, InputJSON: isJSON, Outcome: OutcomeUnknown})
}

// fields flattens a JSON object's top-level fields; ok is false when raw is not an object.
func fields(raw []byte) (map[string]string, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string]string{}
	for _, k := range keys {
		if len(out) >= MaxFields {
			break
		}
		out[capString(k, MaxNameBytes)] = capString(fieldText(m[k]), MaxFieldBytes)
	}
	return out, true
}

// fieldText renders one input value: a string as it is, a list of strings joined with
// spaces (an argv), anything else as compact JSON.
func fieldText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(v, &argv) == nil {
		return strings.Join(argv, " ")
	}
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		return b.String()
	}
	return string(v)
}

// capString cuts s to n bytes on a rune boundary and makes it valid UTF-8.
func capString(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// anthropicMessage reads the tool_use blocks of a Messages API answer.
func (p *parser) anthropicMessage(data []byte) {
	var m struct {
		Content []struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	}
	if json.Unmarshal(data, &m) != nil {
		return
	}
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			in, ok := fields(b.Input)
			p.add(Anthropic, b.ID, b.Name, in, ok)
		}
	}
}

// anthropicStream reads the tool_use blocks of a streamed Messages API answer. A block
// counts once it stopped: a stream cut inside a block gave the agent no whole call.
func (p *parser) anthropicStream(body string) {
	type block struct {
		id, name string
		start    json.RawMessage
		partial  strings.Builder
		deltas   bool
	}
	open := map[int]*block{}
	transcript.SSEData(body, func(data []byte) {
		var ev struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock *struct {
				Type  string          `json:"type"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			} `json:"content_block"`
			Delta *struct {
				Type        string `json:"type"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		switch ev.Type {
		case "content_block_start":
			if cb := ev.ContentBlock; cb != nil && cb.Type == "tool_use" && len(open) < MaxCalls {
				open[ev.Index] = &block{id: cb.ID, name: cb.Name, start: cb.Input}
			}
		case "content_block_delta":
			if b := open[ev.Index]; b != nil && ev.Delta != nil && ev.Delta.Type == "input_json_delta" {
				if b.partial.Len()+len(ev.Delta.PartialJSON) <= MaxLineBytes {
					b.partial.WriteString(ev.Delta.PartialJSON)
				}
				b.deltas = true
			}
		case "content_block_stop":
			b := open[ev.Index]
			if b == nil {
				return
			}
			delete(open, ev.Index)
			raw := []byte(b.partial.String())
			if !b.deltas {
				raw = b.start
			}
			in, ok := fields(raw)
			p.add(Anthropic, b.id, b.name, in, ok)
		}
	})
}

// responsesStream reads the calls of a streamed Responses API answer from its finished
// output items, or from the completed response when the stream carried no item events.
func (p *parser) responsesStream(body string) {
	var done, completed []json.RawMessage
	transcript.SSEData(body, func(data []byte) {
		var ev struct {
			Type     string          `json:"type"`
			Item     json.RawMessage `json:"item"`
			Response *struct {
				Output []json.RawMessage `json:"output"`
			} `json:"response"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		switch ev.Type {
		case "response.output_item.done":
			if len(done) < MaxCalls {
				done = append(done, ev.Item)
			}
		case "response.completed", "response.incomplete":
			if ev.Response != nil {
				completed = ev.Response.Output
			}
		}
	})
	if len(done) == 0 {
		done = completed
	}
	for _, it := range done {
		p.responsesItem(it)
	}
}

// responsesItem reads one output item of a Responses API answer.
func (p *parser) responsesItem(raw json.RawMessage) {
	var it struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		// Arguments is a JSON string of a function call's input, an object of a tool_search_call's.
		Arguments json.RawMessage `json:"arguments"`
		Input     string          `json:"input"`
		Action    *struct {
			Command []string `json:"command"`
		} `json:"action"`
	}
	if json.Unmarshal(raw, &it) != nil {
		return
	}
	id := it.CallID
	if id == "" {
		id = it.ID
	}
	switch it.Type {
	case "function_call":
		if it.Namespace != "" { // Codex's MCP tools: namespace mcp__SERVER, name TOOL
			it.Name = it.Namespace + "__" + it.Name
		}
		var args string
		_ = json.Unmarshal(it.Arguments, &args)
		in, ok := fields([]byte(args))
		if !ok && args != "" {
			in = map[string]string{"arguments": capString(args, MaxFieldBytes)}
		}
		p.add(OpenAI, id, it.Name, in, ok)
	case "tool_search_call": // Codex's search over the MCP tools it defers
		in, ok := fields(it.Arguments)
		p.add(OpenAI, id, "tool_search", in, ok)
	case "custom_tool_call":
		p.add(OpenAI, id, it.Name, map[string]string{"input": capString(it.Input, MaxFieldBytes)}, false)
	case "local_shell_call":
		in := map[string]string{}
		if it.Action != nil {
			in["command"] = capString(strings.Join(it.Action.Command, " "), MaxFieldBytes)
		}
		p.add(OpenAI, id, "local_shell", in, true)
	}
}

// outcomesOf records the outcomes of earlier calls from the tool results a request carries.
func (p *parser) outcomesOf(api string, req json.RawMessage) {
	switch api {
	case Anthropic:
		var r struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(req, &r) != nil {
			return
		}
		for _, m := range r.Messages {
			if m.Role != "user" || len(m.Content) == 0 || m.Content[0] != '[' {
				continue
			}
			var blocks []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
				IsError   bool   `json:"is_error"`
			}
			if json.Unmarshal(m.Content, &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				if b.Type == "tool_result" {
					o := OutcomeOK
					if b.IsError {
						o = OutcomeError
					}
					p.outcome(api, b.ToolUseID, o)
				}
			}
		}
	case OpenAI:
		var r struct {
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(req, &r) != nil || len(r.Input) == 0 || r.Input[0] != '[' {
			return
		}
		var items []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(r.Input, &items) != nil {
			return
		}
		for _, it := range items {
			switch it.Type {
			case "function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output":
				p.outcome(api, it.CallID, responsesOutcome(it.Output))
			}
		}
	}
}

func (p *parser) outcome(api, id, o string) {
	if id == "" {
		return
	}
	key := api + "\x00" + id
	if _, ok := p.outcomes[key]; !ok && len(p.outcomes) < 4*MaxCalls {
		p.outcomes[key] = o
	}
}

// exitCodeLine finds the exit status Codex reports at the head of a command's output.
var exitCodeLine = regexp.MustCompile(`(?m)^(?:Exit code:|Process exited with code)\s*(-?\d+)`)

// responsesOutcome reads a function call's outcome from its output. The Responses API has
// no error flag: a non-zero exit status that the CLI reports (as text at the head of the
// output, or as JSON metadata.exit_code) is an error, anything else is ok.
func responsesOutcome(out json.RawMessage) string {
	var text string
	if json.Unmarshal(out, &text) != nil {
		return OutcomeOK // structured output (content parts): nothing says it failed
	}
	var meta struct {
		Metadata *struct {
			ExitCode *int `json:"exit_code"`
		} `json:"metadata"`
	}
	if json.Unmarshal([]byte(text), &meta) == nil && meta.Metadata != nil && meta.Metadata.ExitCode != nil {
		if *meta.Metadata.ExitCode != 0 {
			return OutcomeError
		}
		return OutcomeOK
	}
	head := text
	if len(head) > 1024 {
		head = head[:1024]
	}
	if m := exitCodeLine.FindStringSubmatch(head); m != nil {
		if code, err := strconv.Atoi(m[1]); err == nil && code != 0 {
			return OutcomeError
		}
	}
	return OutcomeOK
}

// Short is a one-line rendering of a call's input for reports: the command of a shell
// tool, the path of a file tool, else the fields as key=value, cut to n bytes.
func (c *Call) Short(n int) string {
	for _, k := range []string{"command", "cmd", "file_path", "path", "pattern", "skill", "url", "input"} {
		if v, ok := c.Input[k]; ok {
			return oneLine(v, n)
		}
	}
	keys := make([]string, 0, len(c.Input))
	for k := range c.Input {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+c.Input[k])
	}
	return oneLine(strings.Join(parts, " "), n)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return capString(s, n) + "…"
	}
	return s
}

// MCPServer is the server of an MCP tool named mcp__SERVER__TOOL, as Claude Code and Codex
// name a configured server's tools; "" for any other name.
func MCPServer(name string) string {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return ""
	}
	server, tool, ok := strings.Cut(rest, "__")
	if !ok || server == "" || tool == "" {
		return ""
	}
	return server
}
