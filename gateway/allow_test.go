package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"ceval.dev/ceval/gateway/transcript"
)

// postWith posts body with extra headers and returns the status and answer.
func postWith(t *testing.T, url, body string, hdr map[string]string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("x-api-key", dummyKey)
	req.Header.Set("content-type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// Premium or account-reaching options the price table does not price never reach the
// provider: the request is refused with a 4xx that names what was refused.
func TestPremiumAndAccountReachingOptionsAreRefusedByName(t *testing.T) {
	const files = `{"type":"document","source":{"type":"file","file_id":"file_011CNha8iCJcU1wXNR6q4V8w"}}`
	for _, c := range []struct {
		name, path, body string
		hdr              map[string]string
		want             string // in the refusal
	}{
		{"anthropic priority tier", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[],"service_tier":"auto"}`, nil, `service_tier\" value \"auto\"`},
		{"openai priority tier", "/v1/responses", `{"model":"m","input":[],"service_tier":"priority"}`, nil, `service_tier\" value \"priority\"`},
		{"fast mode", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[],"speed":"fast"}`, nil, `field \"speed\"`},
		{"inference geography", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[],"inference_geo":"us"}`, nil, `field \"inference_geo\"`},
		{"server-side compaction", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[],"context_management":{"edits":[{"type":"compact_20260112"}]}}`, nil, `context_management.edits[0].type`},
		{"files-api beta", "/v1/messages", msgReq, map[string]string{"anthropic-beta": "claude-code-20250219, files-api-2025-04-14"}, `anthropic-beta value \"files-api-2025-04-14\"`},
		{"1m context beta", "/v1/messages", msgReq, map[string]string{"anthropic-beta": "context-1m-2025-08-07"}, `context-1m-2025-08-07`},
		{"files-api document", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[` + files + `]}]}`, nil, `messages[0].content[0].source.file_id\" is not forwarded`},
		{"files-api document in a tool result", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[` + files + `]}]}]}`, nil, `messages[0].content[0].content[0].source.file_id`},
		{"url image fetched by the provider", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`, nil, `value \"url\"`},
		{"hour-long cache", "/v1/messages", `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[]}`, nil, `system[0].cache_control.ttl\" value \"1h\"`},
		{"container upload", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"container_upload","file_id":"f"}]}]}`, nil, `messages[0].content[0].file_id`},
		{"openai file_id", "/v1/responses", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-abc"}]}]}`, nil, `input[0].content[0].file_id`},
		{"openai stored response", "/v1/responses", `{"model":"m","input":[],"previous_response_id":"resp_1"}`, nil, `field \"previous_response_id\"`},
		{"openai stored item", "/v1/responses", `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, nil, `input[0].type\" value \"item_reference\"`},
		{"openai store", "/v1/responses", `{"model":"m","input":[],"store":true}`, nil, `store\" value \"true\"`},
		{"openai remote image", "/v1/responses", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png"}]}]}`, nil, `input[0].content[0].image_url`},
		{"openai beta", "/v1/responses", `{"model":"m","input":[]}`, map[string]string{"OpenAI-Beta": "assistants=v2"}, `assistants=v2`},
	} {
		t.Run(c.name, func(t *testing.T) {
			fp := &fakeProvider{}
			s, url := start(t, Config{}, fp)
			code, body, _ := postWith(t, url+c.path, c.body, c.hdr)
			if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
				t.Fatalf("%d %s\nwant a 400 naming %s", code, body, c.want)
			}
			if fp.count() != 0 {
				t.Fatal("the request reached the provider")
			}
			if tot := s.Totals(); tot.NotAllowed != 1 || tot.UpstreamFailures != 0 {
				t.Fatalf("totals %+v", tot)
			}
		})
	}
}

// What the allowlist governs is checked wherever it is nested, not at the paths the
// defaults happen to name: a URL image in a document's content source, an hour-long cache
// on a block inside a tool result, a Files-API file in a search result or a tool's output.
func TestAllowlistedFieldsNestedAtAnyDepthAreRefused(t *testing.T) {
	msgs := func(content string) string {
		return `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[` + content + `]}]}`
	}
	const urlImage = `{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}`
	const hourText = `{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"1h"}}`
	deep := strings.Repeat(`{"a":[`, 70) + `1` + strings.Repeat(`]}`, 70)
	for _, c := range []struct {
		name, path, body string
		want             string // in the refusal
	}{
		{"url image in a document's content source", "/v1/messages",
			msgs(`{"type":"document","source":{"type":"content","content":[` + urlImage + `]}}`),
			`messages[0].content[0].source.content[0].source.type\" value \"url\"`},
		{"url image in a document inside a tool result", "/v1/messages",
			msgs(`{"type":"tool_result","tool_use_id":"t","content":[{"type":"document","source":{"type":"content","content":[` + urlImage + `]}}]}`),
			`messages[0].content[0].content[0].source.content[0].source.type\" value \"url\"`},
		{"hour-long cache in a tool result's block", "/v1/messages",
			msgs(`{"type":"tool_result","tool_use_id":"t","content":[` + hourText + `]}`),
			`messages[0].content[0].content[0].cache_control.ttl\" value \"1h\"`},
		{"hour-long cache in a document's content", "/v1/messages",
			msgs(`{"type":"document","source":{"type":"content","content":[` + hourText + `]}}`),
			`messages[0].content[0].source.content[0].cache_control.ttl`},
		{"hour-long cache in a search result's content", "/v1/messages",
			msgs(`{"type":"search_result","source":"s","title":"t","content":[` + hourText + `]}`),
			`messages[0].content[0].content[0].cache_control.ttl`},
		{"hour-long cache on a tool", "/v1/messages",
			`{"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"t","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral","ttl":"1h"}}]}`,
			`tools[0].cache_control.ttl`},
		{"another cache type", "/v1/messages",
			msgs(`{"type":"text","text":"x","cache_control":{"type":"persistent"}}`), `messages[0].content[0].cache_control.type`},
		{"files-api document nested in a tool result's document", "/v1/messages",
			msgs(`{"type":"tool_result","tool_use_id":"t","content":[{"type":"document","source":{"type":"content","content":[{"type":"image","source":{"type":"file","file_id":"file_1"}}]}}]}`),
			`source.content[0].source.file_id`},
		{"a block type nested where only content is", "/v1/messages",
			msgs(`{"type":"tool_result","tool_use_id":"t","content":[{"type":"container_upload","x":"f"}]}`),
			`messages[0].content[0].content[0].type\" value \"container_upload\"`},
		{"a system block that is not text", "/v1/messages",
			`{"model":"m","max_tokens":5,"system":[{"type":"document","source":{"type":"base64","data":"x"}}],"messages":[]}`,
			`system[0].type`},
		{"an object where a cache ttl is expected", "/v1/messages",
			msgs(`{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":{"hours":1}}}`), `cache_control.ttl\" value`},
		{"openai file in a tool's output", "/v1/responses",
			`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_file","file_id":"file-abc"}]}]}`,
			`input[0].output[0].file_id`},
		{"openai remote image in a tool's output", "/v1/responses",
			`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://example.com/a.png"}]}]}`,
			`input[0].output[0].image_url\" value \"https://example.com/a.png\"`},
		{"openai image url as an object", "/v1/responses",
			`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":{"url":"https://example.com/a.png"}}]}]}`,
			`input[0].content[0].image_url\" value`},
		{"openai part type in a tool's output", "/v1/responses",
			`{"model":"m","input":[{"type":"custom_tool_call_output","call_id":"c","output":[{"type":"file_reference","id":"f"}]}]}`,
			`input[0].output[0].type`},
		{"a body nested deeper than the bound", "/v1/messages",
			`{"model":"m","max_tokens":5,"messages":[],"metadata":` + deep + `}`, `nests objects and arrays more than 128 deep`},
	} {
		t.Run(c.name, func(t *testing.T) {
			fp := &fakeProvider{}
			_, url := start(t, Config{}, fp)
			code, body, _ := postWith(t, url+c.path, c.body, nil)
			if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
				t.Fatalf("%d %s\nwant a 400 naming %s", code, body, c.want)
			}
			if fp.count() != 0 {
				t.Fatal("the request reached the provider")
			}
		})
	}
}

// The walk bounds its own recursion, whoever built the body it is given.
func TestBodyCheckStopsAtItsDepthBound(t *testing.T) {
	var v any = "x"
	for range maxBodyDepth + 10 {
		v = map[string]any{"content": []any{v}}
	}
	err := DefaultAllowlist(transcript.Anthropic).checkBody(map[string]any{"messages": []any{v}})
	if err == nil || !strings.Contains(err.Error(), "nested deeper than") {
		t.Fatalf("a body %d deep: %v", 2*maxBodyDepth, err)
	}
}

// The walk does not refuse what is legitimate at depth (inline sources, five-minute caches)
// nor look into data the provider passes on as it is: a tool call's input the model wrote
// and a tool's JSON schema may have properties named source, type or file_id.
func TestNestedInlineContentAndPassThroughDataAreForwarded(t *testing.T) {
	fp := &fakeProvider{}
	s, url := start(t, Config{}, fp)
	claude := `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"5m"}}],` +
		`"tools":[{"name":"Fetch","input_schema":{"type":"object","properties":{"source":{"type":"object","properties":{"type":{"type":"string"}}},"file_id":{"type":"string"}}},` +
		`"input_examples":[{"source":{"type":"url"},"file_id":"f"}]}],` +
		`"messages":[{"role":"user","content":[{"type":"document","source":{"type":"content","content":[{"type":"text","text":"a"},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]},"cache_control":{"type":"ephemeral","ttl":"5m"}}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Fetch","input":{"source":{"type":"url"},"file_id":"x","cache_control":{"ttl":"1h"}}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok","cache_control":{"type":"ephemeral"}},` +
		`{"type":"search_result","source":"https://example.com","title":"t","content":[{"type":"text","text":"r"}]}]}]}]}`
	codex := `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"ok"},{"type":"input_image","image_url":"data:image/png;base64,iVBO"}]}],` +
		`"tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{"file_id":{"type":"string"},"image_url":{"type":"string"}}}}],` +
		`"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object","properties":{"file_id":{"type":"string"}}}}}}`
	for path, body := range map[string]string{"/v1/messages": claude, "/v1/responses": codex} {
		if code, answer, _ := postWith(t, url+path, body, nil); code != 200 {
			t.Fatalf("%s: %d %s", path, code, answer)
		}
	}
	if tot := s.Totals(); tot.NotAllowed != 0 || fp.count() != 2 {
		t.Fatalf("totals %+v, %d calls reached the provider", tot, fp.count())
	}
}

// A values key in ceval's config replaces that key's list only: allowing a priority tier
// does not forward file sources or hour-long caches.
func TestConfigValuesKeyKeepsTheOtherDefaults(t *testing.T) {
	fp := &fakeProvider{}
	_, url := start(t, Config{Allow: map[string]Allowlist{transcript.Anthropic: {Values: map[string][]string{"service_tier": {"auto"}}}}}, fp)
	if code, body, _ := postWith(t, url+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[],"service_tier":"auto"}`, nil); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	nested := `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}`
	if code, body, _ := postWith(t, url+"/v1/messages", nested, nil); code != 400 || !strings.Contains(body, "source.type") {
		t.Fatalf("a url source with service_tier allowed in the config: %d %s", code, body)
	}
}

// A provider-side tool is billed per use: the task's server_tools keeps it from being
// stripped, but only ceval's config forwards it.
func TestServerToolsNeedCevalsConfigNotJustTheTask(t *testing.T) {
	fp := &fakeProvider{}
	_, url := start(t, Config{AllowServerTools: true}, fp)
	for path, body := range map[string]string{
		"/v1/responses": `{"model":"m","input":[],"tools":[{"type":"web_search"}]}`,
		"/v1/messages":  `{"model":"m","max_tokens":5,"messages":[],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`,
	} {
		if code, answer, _ := postWith(t, url+path, body, nil); code != 400 || !strings.Contains(answer, `tools[0].type\" value \"web_search`) {
			t.Fatalf("%s: %d %s", path, code, answer)
		}
	}
	if fp.count() != 0 {
		t.Fatal("a server tool reached the provider on the task's word alone")
	}
}

// What the real CLIs send (measured from Claude Code 2.1.332 and Codex 0.169.0) is
// forwarded; headers outside the list (client telemetry, cookies, credentials) are not.
func TestWhatTheRealCLIsSendIsForwardedAndNothingElse(t *testing.T) {
	claude := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t1","name":"Bash","input":{"source":{"type":"url"},"file_id":"x"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}]}]}],` +
		`"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"Bash","input_schema":{"type":"object"}}],` +
		`"metadata":{"user_id":"u"},"max_tokens":32000,"thinking":{"budget_tokens":31999,"type":"enabled","display":"updates"},` +
		`"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"output_config":{"effort":"high"},"stream":true}`
	codex := `{"model":"m","stream":true,"instructions":"i","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},` +
		`{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"c"},{"type":"function_call_output","call_id":"c","output":"ok"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}],"tools":[{"type":"function","name":"exec_command"}],` +
		`"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"effort":"medium"},"store":false,"include":["reasoning.encrypted_content"],` +
		`"prompt_cache_key":"k","text":{"verbosity":"low"},"client_metadata":{"turn_id":"t"}}`
	fp := &fakeProvider{}
	s, url := start(t, Config{}, fp)
	hdr := map[string]string{"anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,thinking-display-updates-2026-08-18,effort-2025-11-24,per-turn-control-2026-07-01,mid-conversation-tool-changes-2026-07-01",
		"anthropic-version": "2023-06-01", "X-Stainless-Os": "Linux", "X-Claude-Code-Session-Id": "sess", "Cookie": "a=b", "Proxy-Authorization": "Basic eA=="}
	if code, body, _ := postWith(t, url+"/v1/messages?beta=true", claude, hdr); code != 200 {
		t.Fatalf("claude: %d %s", code, body)
	}
	if code, body, _ := postWith(t, url+"/v1/responses", codex, map[string]string{"Originator": "codex_exec", "Session-Id": "s"}); code != 200 {
		t.Fatalf("codex: %d %s", code, body)
	}
	up := fp.reqs[0].Header
	if up.Get("Anthropic-Beta") != hdr["anthropic-beta"] || up.Get("Anthropic-Version") != "2023-06-01" {
		t.Fatalf("allowed headers did not reach the provider: %v", up)
	}
	for _, h := range []string{"X-Stainless-Os", "X-Claude-Code-Session-Id", "Cookie", "Proxy-Authorization"} {
		if up.Get(h) != "" {
			t.Errorf("%s reached the provider", h)
		}
	}
	if fp.reqs[1].Header.Get("Session-Id") != "" || fp.reqs[1].Header.Get("Originator") != "" {
		t.Errorf("codex's telemetry headers reached the provider: %v", fp.reqs[1].Header)
	}
	if tot := s.Totals(); tot.NotAllowed != 0 || tot.Turns != 2 {
		t.Fatalf("totals %+v", tot)
	}
}

// The allowlist is ceval's config: it can forward more (a priority tier the user prices),
// and it cannot be made to forward a credential header.
func TestConfigAllowlistReplacesTheDefaultsAndNeverForwardsCredentials(t *testing.T) {
	fp := &fakeProvider{}
	a := DefaultAllowlist(transcript.Anthropic)
	a.Values["service_tier"] = []string{"auto", "standard_only"}
	_, url := start(t, Config{Allow: map[string]Allowlist{transcript.Anthropic: {Values: a.Values}}}, fp)
	if code, body, _ := postWith(t, url+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[],"service_tier":"auto"}`, nil); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if fp.bodies[0]["service_tier"] != "auto" {
		t.Fatalf("upstream body %v", fp.bodies[0])
	}
	for _, h := range []string{"Authorization", "x-api-key", "Cookie"} {
		_, err := New(Config{Mode: Forward, Key: dummyKey, Allow: map[string]Allowlist{transcript.OpenAI: {Headers: []string{"Content-Type", h}}}})
		if err == nil || !strings.Contains(err.Error(), h) {
			t.Fatalf("an allowlist forwarding %s: %v", h, err)
		}
	}
	if _, err := New(Config{Mode: Forward, Key: dummyKey, Allow: map[string]Allowlist{"gemini": {}}}); err == nil {
		t.Fatal("an allowlist for an API the gateway does not serve was accepted")
	}
}

// An upstream that echoes the real key, in a 2xx body (split across writes) and in a
// header it returns, never gets it to the agent or into the transcript.
func TestKeyEchoedInA200BodyAndHeaderIsScrubbed(t *testing.T) {
	fp := &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, n int) {
		key := r.Header.Get("X-Api-Key")
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Request-Id", "req-"+key)
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
		io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"your key is "+key[:7])
		w.(http.Flusher).Flush()
		io.WriteString(w, key[7:]+" and again "+key+"\"}}\n\n")
		io.WriteString(w, anthropicStream)
	}}
	var log lockedBuf
	s, url := start(t, Config{Log: &log}, fp)
	code, body, hdr := postWith(t, url+"/v1/messages", msgReq, nil)
	s.Close()
	if code != 200 || !strings.Contains(body, "your key is [REDACTED] and again [REDACTED]") || !strings.Contains(body, "message_stop") {
		t.Fatalf("%d %q", code, body)
	}
	for where, text := range map[string]string{"body": body, "Request-Id header": hdr.Get("Request-Id"), "transcript": string(log.snapshot())} {
		if strings.Contains(text, realKey) || strings.Contains(text, realKey[7:]) {
			t.Errorf("the key reached the agent's %s: %q", where, text)
		}
	}
	if hdr.Get("Request-Id") != "req-[REDACTED]" {
		t.Errorf("Request-Id %q", hdr.Get("Request-Id"))
	}
}

// The scrubber finds a key split at any point between two writes, and holds back nothing
// that cannot begin a key (an event's end is never delayed).
func TestRedactorFindsAKeySplitAnywhere(t *testing.T) {
	secrets := secretsOf(map[string]Provider{transcript.Anthropic: {Key: "sk-SECRET-123"}, transcript.OpenAI: {Key: "SECRET"}})
	text := "a sk-SECRET-123 b SECRET c sk-SECRE\n\n"
	want := "a [REDACTED] b [REDACTED] c sk-SECRE\n\n"
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j++ {
			r := &redactor{secrets: secrets}
			out := string(r.next([]byte(text[:i]), false)) + string(r.next([]byte(text[i:j]), false))
			held := len(r.pending)
			out += string(r.next([]byte(text[j:]), true))
			if out != want {
				t.Fatalf("split at %d,%d: %q", i, j, out)
			}
			if j == len(text) && held != 0 {
				t.Fatalf("split at %d,%d: %d bytes held after an event's end", i, j, held)
			}
		}
	}
}

// Keys overlapping each other are never let out in pieces.
func TestRedactorOverlappingKeys(t *testing.T) {
	r := &redactor{secrets: secretsOf(map[string]Provider{transcript.Anthropic: {Key: "SECRET"}, transcript.OpenAI: {Key: "ETXYZ12"}})}
	out := string(r.next([]byte("x SECRET"), false)) + string(r.next(nil, true))
	if out != "x [REDACTED]" {
		t.Fatalf("%q", out)
	}
}
