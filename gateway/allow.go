package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"ceval.dev/ceval/gateway/transcript"
)

// Allowlist is what the gateway forwards of one API's requests. Every option a provider
// bills differently from its one price per token (priority tiers, fast modes, long-context
// or longer-lived caches), and every one that reaches the provider account's own state
// (Files-API documents, stored responses and prompts, MCP servers, containers), is left out
// of the defaults, so what reaches the provider is what Config.Prices prices. It comes from
// ceval's config file, never from a task.
type Allowlist struct {
	// Headers are the request headers forwarded (case-insensitive); others are dropped.
	Headers []string
	// HeaderValues restrict listed headers: each comma-separated value must match one
	// pattern, or the request is refused.
	HeaderValues map[string][]string
	// Fields are the top-level body fields forwarded; a request with another is refused.
	Fields []string
	// Values restrict what the body may hold where its path ends in a key's dotted path, at
	// any depth ("source.type" is every source's type, in a message, a tool result or a
	// document's content; arrays on the way are walked; where several keys end a path, the
	// longest decides): every string, number or boolean there must match one pattern, or
	// the request is refused; an empty list refuses the path being present at all.
	Values map[string][]string
}

// A pattern is a value, or a prefix ending in "*".
func matches(patterns []string, v string) bool {
	for _, p := range patterns {
		if p == v || (strings.HasSuffix(p, "*") && strings.HasPrefix(v, strings.TrimSuffix(p, "*"))) {
			return true
		}
	}
	return false
}

// inlineSources are the Messages API content sources that carry their data in the request:
// a "file" source is a Files-API upload in the provider account, a "url" one makes the
// provider fetch the internet for the agent.
var inlineSources = []string{"base64", "text", "content"}

// openaiParts are the Responses API content parts a message or a tool output may hold.
var openaiParts = []string{"input_text", "output_text", "input_image", "input_file", "refusal"}

// noCacheTTL: a cache write lasting longer than the default five minutes costs more than
// the price table's cache_creation rate.
var noCacheTTL = []string{"5m"}

// DefaultAllowlist is what the gateway forwards of api's requests unless ceval's config
// says otherwise: what the pinned Claude Code and Codex CLIs send (measured), at standard
// pricing.
func DefaultAllowlist(api string) Allowlist {
	if api == transcript.OpenAI {
		return Allowlist{
			Headers:      []string{"Content-Type", "Accept", "OpenAI-Beta", "User-Agent"},
			HeaderValues: map[string][]string{"OpenAI-Beta": {"responses=experimental", "responses=v1"}},
			Fields: []string{"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
				"reasoning", "store", "stream", "stream_options", "include", "prompt_cache_key", "text",
				"client_metadata", "metadata", "max_output_tokens", "temperature", "top_p", "truncation",
				"service_tier", "max_tool_calls", "safety_identifier", "user"},
			Values: map[string][]string{
				"service_tier": {"default"},
				// Tools the agent runs itself; a provider-side tool (billed per use) needs
				// the task's server_tools and this list both.
				"tools.type": {"function", "custom", "local_shell", "namespace", "tool_search"},
				"store":      {"false"}, // stored responses live in the provider account
				"include":    {"reasoning.encrypted_content"},
				"input.type": {"message", "function_call", "function_call_output", "custom_tool_call",
					"custom_tool_call_output", "local_shell_call", "local_shell_call_output", "reasoning",
					"tool_search_call", "tool_search_output", "compaction"},
				// A message's parts, and a tool output's.
				"content.type": openaiParts, "output.type": openaiParts,
				"file_id": {}, "file_url": {}, "image_url": {"data:*"},
			},
		}
	}
	return Allowlist{
		Headers: []string{"Content-Type", "Accept", "Anthropic-Version", "Anthropic-Beta", "User-Agent", "X-App"},
		HeaderValues: map[string][]string{"Anthropic-Beta": {"claude-code-20250219", "interleaved-thinking-2025-05-14",
			"context-management-2025-06-27", "thinking-token-count-2026-05-13", "advanced-tool-use-2025-11-20",
			"thinking-display-updates-2026-08-18", "fine-grained-tool-streaming-2025-05-14", "token-efficient-tools-2025-02-19",
			// The pinned Claude Code with its own default model (no model named) sends these too.
			"effort-2025-11-24", "per-turn-control-2026-07-01", "mid-conversation-tool-changes-2026-07-01"}},
		Fields: []string{"model", "messages", "system", "max_tokens", "metadata", "stop_sequences", "stream",
			"temperature", "top_p", "top_k", "tools", "tool_choice", "thinking", "context_management", "service_tier",
			"output_config"}, // effort (and a structured output's format): the default model's requests
		Values: map[string][]string{
			"service_tier": {"standard_only"},
			"tools.type":   {"custom", "bash_*", "text_editor_*", "computer_*", "memory_*"},
			// Clearing old thinking or tool results only; a server-side compaction is another,
			// unmetered, model call.
			"context_management.edits.type": {"clear_thinking_*", "clear_tool_uses_*"},
			"system.type":                   {"text"},
			"messages.content.type":         {"text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking", "search_result"},
			"content.type":                  {"text", "image", "document", "search_result", "tool_reference"}, // nested, at any depth
			"source.type":                   inlineSources,
			"cache_control.type":            {"ephemeral"},
			"cache_control.ttl":             noCacheTTL,
			"file_id":                       {},
		},
	}
}

// merged is a's lists, with the default's where a leaves one out (nil), and a's values
// keys over the default's.
func (a Allowlist) merged(api string) Allowlist {
	d := DefaultAllowlist(api)
	if a.Headers != nil {
		d.Headers = a.Headers
	}
	if a.HeaderValues != nil {
		d.HeaderValues = a.HeaderValues
	}
	if a.Fields != nil {
		d.Fields = a.Fields
	}
	// A values key given replaces that key's list; the others stay (allowing a priority
	// tier does not forward file sources). ["*"] allows any value of a key.
	for k, v := range a.Values {
		d.Values[k] = v
	}
	return d
}

// CheckAllowlists refuses allowlists for APIs the gateway does not serve, and any that
// would forward a header carrying credentials.
func CheckAllowlists(m map[string]Allowlist) error {
	for _, api := range sortedKeys(m) {
		if api != transcript.Anthropic && api != transcript.OpenAI {
			return fmt.Errorf("an allowlist for %q, which is not an API the gateway serves (%s, %s)", api, transcript.Anthropic, transcript.OpenAI)
		}
		for _, h := range m[api].Headers {
			if credentialHeader(h, Provider{}) {
				return fmt.Errorf("%s.headers lists %s, which carries credentials: the gateway never forwards the agent's credentials; take it out", api, h)
			}
		}
	}
	return nil
}

// NotAllowedError says which part of a request the allowlist does not forward.
type NotAllowedError struct {
	What  string // "header", "field", "value" or "depth"
	Name  string // the header, field, or where in the body (messages[0].content[1].source.type)
	Key   string // the Values key that refused it, for values
	Value string // the value refused, for headers and values
	Allow []string
}

func (e *NotAllowedError) Error() string {
	allowed := "none"
	if len(e.Allow) > 0 {
		allowed = strings.Join(e.Allow, ", ")
	}
	switch e.What {
	case "field":
		return fmt.Sprintf("request field %q is not forwarded to the provider (fields forwarded: %s); ceval's config (gateway_allow) decides what is", e.Name, allowed)
	case "header":
		return fmt.Sprintf("header %s value %q is not forwarded to the provider (values forwarded: %s); ceval's config (gateway_allow) decides what is", e.Name, e.Value, allowed)
	case "depth":
		return fmt.Sprintf("request field %q is nested deeper than %d objects and arrays; the gateway refuses it to bound its checks", e.Name, maxBodyDepth)
	}
	if len(e.Allow) == 0 {
		return fmt.Sprintf("request field %q is not forwarded to the provider (no %s is); ceval's config (gateway_allow) decides what is", e.Name, e.Key)
	}
	return fmt.Sprintf("request field %q value %s is not forwarded to the provider (%s forwarded: %s); ceval's config (gateway_allow) decides what is", e.Name, e.Value, e.Key, allowed)
}

// checkHeaders refuses a forwarded header holding a value its list does not allow.
func (a Allowlist) checkHeaders(h http.Header) error {
	for _, name := range sortedKeys(a.HeaderValues) {
		for _, line := range h.Values(name) {
			for _, v := range strings.Split(line, ",") {
				if v = strings.TrimSpace(v); v != "" && !matches(a.HeaderValues[name], v) {
					return &NotAllowedError{What: "header", Name: strings.ToLower(name), Value: v, Allow: a.HeaderValues[name]}
				}
			}
		}
	}
	return nil
}

// checkBody refuses a body with a field or a value the allowlist does not forward. Every
// value of the body is looked at, at any depth (content nested in a tool result or in a
// document's content source, system blocks, tools), but the provider's pass-through data.
func (a Allowlist) checkBody(body map[string]any) error {
	for _, k := range sortedKeys(body) {
		if !slices.Contains(a.Fields, k) {
			return &NotAllowedError{What: "field", Name: k, Allow: a.Fields}
		}
	}
	return (&bodyCheck{rules: a.rules()}).walk(body, 0)
}

// A rule is one Values key: the dotted path end it governs, and what it allows.
type rule struct {
	key   string
	ends  []string
	allow []string
}

// rules are the Values keys, the longest first (where several end a path, it decides).
func (a Allowlist) rules() []rule {
	var rs []rule
	for _, k := range sortedKeys(a.Values) {
		rs = append(rs, rule{key: k, ends: strings.Split(k, "."), allow: a.Values[k]})
	}
	sort.SliceStable(rs, func(i, j int) bool { return len(rs[i].ends) > len(rs[j].ends) })
	return rs
}

// maxBodyDepth bounds the nesting of a request body (objects and arrays): the check walks
// it recursively; real requests nest a dozen deep, tool schemas a few dozen.
const maxBodyDepth = 128

// opaquePaths hold data the provider passes on as it is, never a source, cache or file it
// acts on: a tool's JSON schema and example inputs, the output format's schema, the
// client's labels. A tool call's input the model wrote is one too (see opaque).
var opaquePaths = map[string]bool{
	"tools.input_schema": true, "tools.input_examples": true, "tools.parameters": true, "text.format.schema": true,
	"tools.tools.parameters": true, // a tool's of a Responses namespace (Codex's MCP servers)
	"metadata":               true, "client_metadata": true,
}

// maxOpaqueKeys is one more than the keys of the longest opaque path's parent.
const maxOpaqueKeys = 3

// opaque says whether the value under key k of m, at path, is pass-through data.
func opaque(path string, m map[string]any, k string) bool {
	p := k
	if path != "" {
		p = path + "." + k
	}
	if opaquePaths[p] {
		return true
	}
	typ, _ := m["type"].(string)
	return p == "messages.content.input" && (typ == "tool_use" || typ == "server_tool_use")
}

// bodyCheck walks a body: keys are the object keys from the root to the value at hand
// (arrays are walked through), at the same with the array indexes, built into the refusal's
// location only when one is refused.
type bodyCheck struct {
	rules []rule
	keys  []string
	at    []step
}

type step struct {
	key   string
	index int // -1: a key
}

func (c *bodyCheck) loc() string {
	var b strings.Builder
	for _, s := range c.at {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

// walk checks v and everything under it.
func (c *bodyCheck) walk(v any, depth int) error {
	if depth > maxBodyDepth {
		return &NotAllowedError{What: "depth", Name: c.loc()}
	}
	r := c.rule(c.keys)
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			c.at = append(c.at, step{index: i})
			err := c.walk(e, depth+1)
			c.at = c.at[:len(c.at)-1]
			if err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if r != nil { // an object where a listed value is expected
			b, _ := json.Marshal(x)
			return c.refused(r, string(b))
		}
		path := ""
		if len(c.keys) < maxOpaqueKeys { // deeper, nothing is opaque: spare the join
			path = strings.Join(c.keys, ".")
		}
		for _, k := range sortedKeys(x) {
			if len(c.keys) < maxOpaqueKeys && opaque(path, x, k) {
				continue
			}
			c.keys, c.at = append(c.keys, k), append(c.at, step{key: k, index: -1})
			err := c.walk(x[k], depth+1)
			c.keys, c.at = c.keys[:len(c.keys)-1], c.at[:len(c.at)-1]
			if err != nil {
				return err
			}
		}
		return nil
	}
	if r == nil {
		return nil
	}
	s := fmt.Sprint(v) // a string, json.Number, bool or nil
	if v == nil {
		s = "null"
	}
	if len(r.allow) == 0 || !matches(r.allow, s) {
		return c.refused(r, s)
	}
	return nil
}

// rule is the longest rule ending keys, or nil.
func (c *bodyCheck) rule(keys []string) *rule {
	for i := range c.rules {
		r := &c.rules[i]
		if len(r.ends) <= len(keys) && slices.Equal(keys[len(keys)-len(r.ends):], r.ends) {
			return r
		}
	}
	return nil
}

func (c *bodyCheck) refused(r *rule, s string) error {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return &NotAllowedError{What: "value", Name: c.loc(), Key: r.key, Value: fmt.Sprintf("%q", s), Allow: r.allow}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
