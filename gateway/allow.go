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
	// Values restrict what a dotted path of the body may hold (arrays on the way are
	// walked): every string, number or boolean there must match one pattern, or the request
	// is refused; an empty list refuses the path being present at all.
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
				"tools.type": {"function", "custom", "local_shell"},
				"store":      {"false"}, // stored responses live in the provider account
				"include":    {"reasoning.encrypted_content"},
				"input.type": {"message", "function_call", "function_call_output", "custom_tool_call",
					"custom_tool_call_output", "local_shell_call", "local_shell_call_output", "reasoning",
					"tool_search_call", "tool_search_output", "compaction"},
				"input.content.type":    {"input_text", "output_text", "input_image", "input_file", "refusal"},
				"input.content.file_id": {}, "input.output.file_id": {},
				"input.content.file_url": {}, "input.output.file_url": {},
				"input.content.image_url": {"data:*"}, "input.output.image_url": {"data:*"},
			},
		}
	}
	return Allowlist{
		Headers: []string{"Content-Type", "Accept", "Anthropic-Version", "Anthropic-Beta", "User-Agent", "X-App"},
		HeaderValues: map[string][]string{"Anthropic-Beta": {"claude-code-20250219", "interleaved-thinking-2025-05-14",
			"context-management-2025-06-27", "thinking-token-count-2026-05-13", "advanced-tool-use-2025-11-20",
			"thinking-display-updates-2026-08-18", "fine-grained-tool-streaming-2025-05-14", "token-efficient-tools-2025-02-19"}},
		Fields: []string{"model", "messages", "system", "max_tokens", "metadata", "stop_sequences", "stream",
			"temperature", "top_p", "top_k", "tools", "tool_choice", "thinking", "context_management", "service_tier"},
		Values: map[string][]string{
			"service_tier": {"standard_only"},
			"tools.type":   {"custom", "bash_*", "text_editor_*", "computer_*", "memory_*"},
			// Clearing old thinking or tool results only; a server-side compaction is another,
			// unmetered, model call.
			"context_management.edits.type": {"clear_thinking_*", "clear_tool_uses_*"},
			"messages.content.type":         {"text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking", "search_result"},
			"messages.content.content.type": {"text", "image", "document", "search_result", "tool_reference"},
			"messages.content.source.type":  inlineSources, "messages.content.content.source.type": inlineSources,
			"system.cache_control.ttl": noCacheTTL, "tools.cache_control.ttl": noCacheTTL,
			"messages.content.cache_control.ttl": noCacheTTL, "messages.content.content.cache_control.ttl": noCacheTTL,
		},
	}
}

// merged is a's lists, with the default's where a leaves one out (nil).
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
	if a.Values != nil {
		d.Values = a.Values
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
	What  string // "header", "field" or "value"
	Name  string // the header, field or dotted path
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
	}
	if len(e.Allow) == 0 {
		return fmt.Sprintf("request field %q is not forwarded to the provider (no value of it is); ceval's config (gateway_allow) decides what is", e.Name)
	}
	return fmt.Sprintf("request field %q value %s is not forwarded to the provider (values forwarded: %s); ceval's config (gateway_allow) decides what is", e.Name, e.Value, allowed)
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

// checkBody refuses a body with a field or a value the allowlist does not forward.
func (a Allowlist) checkBody(body map[string]any) error {
	for _, k := range sortedKeys(body) {
		if !slices.Contains(a.Fields, k) {
			return &NotAllowedError{What: "field", Name: k, Allow: a.Fields}
		}
	}
	for _, path := range sortedKeys(a.Values) {
		allow := a.Values[path]
		var bad *NotAllowedError
		walkPath(body, strings.Split(path, "."), func(v any) bool {
			var s string
			switch x := v.(type) {
			case string:
				s = x
			case bool, json.Number, float64, int64, nil:
				s = fmt.Sprint(x)
			default: // an object or array where a value is expected
				if len(allow) > 0 {
					return true // the shape is the provider's to check
				}
				b, _ := json.Marshal(x)
				s = string(b)
			}
			if len(allow) == 0 || !matches(allow, s) {
				if len(s) > 80 {
					s = s[:80] + "..."
				}
				bad = &NotAllowedError{What: "value", Name: path, Value: fmt.Sprintf("%q", s), Allow: allow}
				return false
			}
			return true
		})
		if bad != nil {
			return bad
		}
	}
	return nil
}

// walkPath calls f on every value at path under v, walking arrays on the way, until f
// returns false.
func walkPath(v any, path []string, f func(any) bool) bool {
	if arr, ok := v.([]any); ok {
		for _, e := range arr {
			if !walkPath(e, path, f) {
				return false
			}
		}
		return true
	}
	if len(path) == 0 {
		return f(v)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return true
	}
	next, ok := m[path[0]]
	if !ok {
		return true
	}
	return walkPath(next, path[1:], f)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
