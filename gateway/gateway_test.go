package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ceval.dev/ceval/gateway/transcript"
)

const (
	realKey  = "sk-ant-REAL-0123456789abcdef0123456789"
	dummyKey = "ceval-dummy-0123456789abcdef"
)

// anthropicStream is an upstream streamed answer with usage at start and in the delta.
const anthropicStream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":2,\"cache_read_input_tokens\":3,\"output_tokens\":1}}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

const openaiStream = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\n" +
	"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"usage\":{\"input_tokens\":20,\"input_tokens_details\":{\"cached_tokens\":5},\"output_tokens\":4,\"output_tokens_details\":{\"reasoning_tokens\":2}}}}\n\n"

// fakeProvider records what reached "the provider".
type fakeProvider struct {
	mu      sync.Mutex
	reqs    []*http.Request
	bodies  []map[string]any
	handler func(w http.ResponseWriter, r *http.Request, n int)
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.bodies = append(f.bodies, body)
	n := len(f.reqs)
	f.mu.Unlock()
	if f.handler != nil {
		f.handler(w, r, n)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if strings.HasPrefix(r.URL.Path, "/v1/responses") {
		io.WriteString(w, openaiStream)
		return
	}
	io.WriteString(w, anthropicStream)
}

func (f *fakeProvider) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// start runs a gateway in front of a fake provider, both on 127.0.0.1.
func start(t *testing.T, cfg Config, fp *fakeProvider) (*Server, string) {
	t.Helper()
	if fp != nil {
		up := httptest.NewServer(fp)
		t.Cleanup(up.Close)
		cfg.Providers = map[string]Provider{transcript.Anthropic: {BaseURL: up.URL, Key: realKey}, transcript.OpenAI: {BaseURL: up.URL, Key: "sk-proj-REALOPENAI0123456789"}}
	}
	if cfg.Mode == "" {
		cfg.Mode = Forward
	}
	if cfg.Key == "" {
		cfg.Key = dummyKey
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = time.Millisecond
	}
	s, addr := serve(t, cfg)
	t.Cleanup(func() { s.Close() })
	return s, "http://" + addr
}

func post(t *testing.T, url, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("x-api-key", key)
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const msgReq = `{"model":"claude-x","max_tokens":4096,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

func TestForwardCarriesRealKeyUpstreamAndNeverTheDummy(t *testing.T) {
	fp := &fakeProvider{}
	s, url := start(t, Config{}, fp)
	code, body := post(t, url+"/v1/messages?beta=true", dummyKey, msgReq)
	if code != 200 || body != anthropicStream {
		t.Fatalf("got %d %q", code, body)
	}
	r := fp.reqs[0]
	if r.Header.Get("X-Api-Key") != realKey || r.URL.RawQuery != "beta=true" {
		t.Fatalf("upstream got key %q query %q", r.Header.Get("X-Api-Key"), r.URL.RawQuery)
	}
	for k, v := range r.Header {
		if strings.Contains(strings.Join(v, ","), dummyKey) {
			t.Fatalf("dummy key forwarded in %s", k)
		}
	}
	tot := s.Totals()
	if tot.Turns != 1 || tot.InputTokens != 15 || tot.CachedInputTokens != 3 || tot.OutputTokens != 7 {
		t.Fatalf("totals %+v", tot)
	}
}

func TestOpenAIForwardUsesBearerAndMetersCompletedUsage(t *testing.T) {
	fp := &fakeProvider{}
	s, url := start(t, Config{}, fp)
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/responses", strings.NewReader(`{"model":"gpt-x","stream":true,"input":[]}`))
	req.Header.Set("Authorization", "Bearer "+dummyKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || fp.reqs[0].Header.Get("Authorization") != "Bearer sk-proj-REALOPENAI0123456789" {
		t.Fatalf("status %d, upstream auth %q", resp.StatusCode, fp.reqs[0].Header.Get("Authorization"))
	}
	tot := s.Totals()
	if tot.InputTokens != 20 || tot.CachedInputTokens != 5 || tot.OutputTokens != 4 || tot.ReasoningTokens != 2 {
		t.Fatalf("totals %+v", tot)
	}
}

func TestAgentWithoutTheRunKeyIsRefused(t *testing.T) {
	fp := &fakeProvider{}
	_, url := start(t, Config{}, fp)
	for _, key := range []string{"", "wrong", realKey, dummyKey + "x", dummyKey[:len(dummyKey)-1]} {
		if code, _ := post(t, url+"/v1/messages", key, msgReq); code != http.StatusUnauthorized {
			t.Errorf("key %q: status %d", key, code)
		}
	}
	if fp.count() != 0 {
		t.Fatalf("%d requests reached the provider", fp.count())
	}
}

func TestUnlistedEndpointsNeverReachTheProvider(t *testing.T) {
	fp := &fakeProvider{}
	_, url := start(t, Config{}, fp)
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/messages"}, {"POST", "/v1/files"}, {"POST", "/v1/messages/batches"},
		{"POST", "/v1/messages/count_tokens"}, {"GET", "/v1/models"}, {"POST", "/v1/responses/abc/cancel"},
		{"POST", "/v1/messages?beta=true&x=1"}, {"POST", "/v1/responses?beta=true"}, {"POST", "/v1/../v1/files"},
		{"DELETE", "/v1/responses"}, {"POST", "/v1/vector_stores"}, {"POST", "/v1/chat/completions"},
	} {
		req, _ := http.NewRequest(c.method, url+c.path, strings.NewReader(msgReq))
		req.Header.Set("x-api-key", dummyKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: status %d", c.method, c.path, resp.StatusCode)
		}
	}
	if fp.count() != 0 {
		t.Fatalf("%d requests reached the provider", fp.count())
	}
}

func TestAgentCannotChooseAnotherModelOrUnboundedOutput(t *testing.T) {
	fp := &fakeProvider{}
	_, url := start(t, Config{Model: "claude-pinned", Limits: Limits{MaxOutputTokens: 100}}, fp)
	post(t, url+"/v1/messages", dummyKey, `{"model":"claude-opus-expensive","max_tokens":64000,"messages":[]}`)
	b := fp.bodies[0]
	if b["model"] != "claude-pinned" || b["max_tokens"] != float64(100) {
		t.Fatalf("upstream got model %v max_tokens %v", b["model"], b["max_tokens"])
	}
	// 7 output tokens used: the next call may use 93.
	post(t, url+"/v1/responses", dummyKey, `{"model":"gpt-x","input":[]}`)
	if b := fp.bodies[1]; b["model"] != "claude-pinned" || b["max_output_tokens"] != float64(93) {
		t.Fatalf("upstream got model %v max_output_tokens %v", b["model"], b["max_output_tokens"])
	}
}

func TestProviderSideToolsAreStripped(t *testing.T) {
	cases := []struct {
		name, path, body string
		allow            bool
		wantTools        []string // types (or names) that reach the provider
		gone             []string // fields that must not
	}{
		{"anthropic server tools", "/v1/messages",
			`{"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"Bash","input_schema":{}},{"type":"web_search_20250305","name":"web_search"},{"type":"web_fetch_20250910","name":"web_fetch"},{"type":"code_execution_20250522","name":"code_execution"},{"type":"bash_20250124","name":"bash"},{"type":"mcp_toolset","mcp_server_name":"x"}],"mcp_servers":[{"type":"url","url":"https://evil.example"}],"container":"c1"}`,
			false, []string{"", "bash_20250124"}, []string{"mcp_servers", "container"}},
		{"openai server tools", "/v1/responses",
			`{"model":"m","input":[],"background":true,"tools":[{"type":"function","name":"exec_command"},{"type":"web_search"},{"type":"web_search_preview"},{"type":"file_search"},{"type":"code_interpreter"},{"type":"mcp","server_url":"https://evil.example"},{"type":"custom","name":"apply_patch"}]}`,
			false, []string{"function", "custom"}, []string{"background"}},
		// Codex's MCP servers: a namespace of functions, and its client-side tool_search;
		// a namespace that holds a provider-side tool, or a tool_search the provider runs, is not.
		{"codex namespaces and tool_search", "/v1/responses",
			`{"model":"m","input":[],"tools":[{"type":"namespace","name":"mcp__calc","tools":[{"type":"function","name":"add","parameters":{"properties":{"image_url":{"type":"string"}}}}]},` +
				`{"type":"namespace","name":"mcp__x","tools":[{"type":"function","name":"f"},{"type":"web_search"}]},{"type":"namespace","name":"mcp__e","tools":[]},` +
				`{"type":"namespace","name":"n","tools":[{"type":"namespace","name":"m","tools":[{"type":"function","name":"g"}]}]},` +
				`{"type":"tool_search","execution":"client","parameters":{}},{"type":"tool_search"}]}`,
			false, []string{"namespace", "tool_search"}, nil},
		{"only server tools leave none", "/v1/responses",
			`{"model":"m","input":[],"tool_choice":"required","tools":[{"type":"web_search"}]}`,
			false, nil, []string{"tools", "tool_choice"}},
		{"opted in", "/v1/responses",
			`{"model":"m","input":[],"tools":[{"type":"web_search"}]}`,
			true, []string{"web_search"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fp := &fakeProvider{}
			cfg := Config{AllowServerTools: c.allow}
			if c.allow { // the task's opt-in, and ceval's config forwarding the tool
				a := DefaultAllowlist(transcript.OpenAI)
				a.Values["tools.type"] = append(a.Values["tools.type"], "web_search")
				cfg.Allow = map[string]Allowlist{transcript.OpenAI: {Values: a.Values}}
			}
			_, url := start(t, cfg, fp)
			if code, body := post(t, url+c.path, dummyKey, c.body); code != 200 {
				t.Fatalf("%d %s", code, body)
			}
			b := fp.bodies[0]
			var got []string
			tools, _ := b["tools"].([]any)
			for _, tl := range tools {
				typ, _ := tl.(map[string]any)["type"].(string)
				got = append(got, typ)
			}
			if strings.Join(got, ",") != strings.Join(c.wantTools, ",") {
				t.Fatalf("tools upstream %q, want %q", got, c.wantTools)
			}
			for _, f := range c.gone {
				if _, ok := b[f]; ok {
					t.Fatalf("%s reached the provider", f)
				}
			}
		})
	}
}

func TestUpstreamErrorBodyDoesNotLeakTheKey(t *testing.T) {
	fp := &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, _ int) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"error","error":{"message":"bad key `+r.Header.Get("X-Api-Key")+` (Authorization: Bearer sk-other-ABCDEFGHIJKL)"}}`)
	}}
	_, url := start(t, Config{}, fp)
	code, body := post(t, url+"/v1/messages", dummyKey, msgReq)
	if code != 400 || strings.Contains(body, "REAL") || strings.Contains(body, "sk-other") || !strings.Contains(body, "[REDACTED]") {
		t.Fatalf("%d %s", code, body)
	}
}

func TestUpstream429And5xxAreRetriedBoundedly(t *testing.T) {
	fp := &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, n int) {
		if n < 3 {
			w.WriteHeader([]int{429, 529}[n-1])
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, anthropicStream)
	}}
	s, url := start(t, Config{}, fp)
	if code, _ := post(t, url+"/v1/messages", dummyKey, msgReq); code != 200 || fp.count() != 3 {
		t.Fatalf("status %d after %d attempts", code, fp.count())
	}
	fp2 := &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, n int) { w.WriteHeader(503) }}
	s2, url2 := start(t, Config{Retries: 2}, fp2)
	if code, _ := post(t, url2+"/v1/messages", dummyKey, msgReq); code != 503 || fp2.count() != 3 {
		t.Fatalf("status %d after %d attempts", code, fp2.count())
	}
	if s.Totals().UpstreamFailures != 0 || s2.Totals().UpstreamFailures != 1 {
		t.Fatalf("failures %d %d", s.Totals().UpstreamFailures, s2.Totals().UpstreamFailures)
	}
}

func TestBudgetsRefuseFurtherCalls(t *testing.T) {
	cases := []struct {
		name   string
		limits Limits
		calls  int // answered before the refusal
		want   string
	}{
		{"turns", Limits{MaxTurns: 2}, 2, "max_turns 2"},
		{"input", Limits{MaxInputTokens: 20}, 2, "max_input_tokens 20"},
		{"output", Limits{MaxOutputTokens: 14}, 2, "max_output_tokens 14"},
		{"total", Limits{MaxTotalTokens: 30}, 2, "max_total_tokens 30"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fp := &fakeProvider{}
			s, url := start(t, Config{Limits: c.limits}, fp)
			for i := 0; i < c.calls+2; i++ {
				code, body := post(t, url+"/v1/messages", dummyKey, msgReq)
				if (i < c.calls) != (code == 200) {
					t.Fatalf("call %d: %d %s", i, code, body)
				}
			}
			if fp.count() != c.calls {
				t.Fatalf("%d calls reached the provider", fp.count())
			}
			if tot := s.Totals(); tot.ExceededLimit != c.want {
				t.Fatalf("totals %+v", tot)
			}
		})
	}
}

func TestReplayMatchesDepthNotOrderAndNeedsNoNetwork(t *testing.T) {
	fx := strings.Join([]string{
		`{"api":"anthropic","depth":0,"tools":true,"status":200,"content_type":"application/json","response":"{\"turn\":0,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}"}`,
		`{"api":"anthropic","depth":1,"tools":true,"status":200,"content_type":"application/json","response":"{\"turn\":1,\"usage\":{\"input_tokens\":5,\"output_tokens\":2}}"}`,
	}, "\n")
	f, err := transcript.ParseFixture(strings.NewReader(fx))
	if err != nil {
		t.Fatal(err)
	}
	// No providers at all: a forward attempt would fail.
	s, url := start(t, Config{Mode: Replay, Fixture: f, Providers: map[string]Provider{transcript.Anthropic: {BaseURL: "http://127.0.0.1:1"}}}, nil)
	tools := `"tools":[{"name":"Bash","input_schema":{}}]`
	d1 := `{"model":"m","max_tokens":5,` + tools + `,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`
	d0 := `{"model":"m","max_tokens":5,` + tools + `,"messages":[{"role":"user","content":"a"}]}`
	side := `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"title?"}]}`
	for _, c := range []struct{ body, want string }{
		{d1, `"turn":1`}, {side, "message_stop"}, {d0, `"turn":0`},
	} {
		if code, got := post(t, url+"/v1/messages", dummyKey, c.body); code != 200 || !strings.Contains(got, c.want) {
			t.Fatalf("got %d %s, want %s", code, got, c.want)
		}
	}
	d5 := `{"model":"m","max_tokens":5,` + tools + `,"messages":[{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`
	if code, got := post(t, url+"/v1/messages", dummyKey, d5); code != 400 || !strings.Contains(got, "no anthropic answer") {
		t.Fatalf("unexpected request: %d %s", code, got)
	}
	if tot := s.Totals(); tot.Turns != 3 || tot.InputTokens != 8 || tot.OutputTokens != 3 || tot.ReplayMisses != 1 {
		t.Fatalf("totals %+v", tot)
	}
}

func TestRecordedTranscriptReplaysTheSameAnswers(t *testing.T) {
	var log bytes.Buffer
	fp := &fakeProvider{}
	_, url := start(t, Config{Mode: Record, Log: &log}, fp)
	_, first := post(t, url+"/v1/messages", dummyKey, msgReq)
	if strings.Contains(log.String(), realKey) || strings.Contains(log.String(), dummyKey) {
		t.Fatal("a key is in the transcript")
	}
	f, err := transcript.ParseFixture(&log)
	if err != nil {
		t.Fatal(err)
	}
	_, url2 := start(t, Config{Mode: Replay, Fixture: f}, nil)
	if _, again := post(t, url2+"/v1/messages", dummyKey, msgReq); again != first {
		t.Fatalf("replayed %q, recorded %q", again, first)
	}
}

func TestHugeRequestBodyIsRefusedWithoutBuffering(t *testing.T) {
	fp := &fakeProvider{}
	_, url := start(t, Config{MaxRequestBytes: 1 << 20}, fp)
	code, _ := post(t, url+"/v1/messages", dummyKey, `{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("A", 2<<20)+`"}]}`)
	if code != http.StatusRequestEntityTooLarge || fp.count() != 0 {
		t.Fatalf("status %d, %d upstream", code, fp.count())
	}
}

// acceptWatch is the listener under the gateway's connection cap: it reports each accepted
// connection, and whether the flood had been released when the gateway took it.
type acceptWatch struct {
	net.Listener
	released *atomic.Bool
	accepted chan bool // released, per accepted connection
}

func (l *acceptWatch) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted <- l.released.Load()
	}
	return c, err
}

// TestIdleConnectionFloodDoesNotStarveTheCapOrCrash: idle connections hold every slot of
// MaxConns; a request dialled meanwhile is not accepted (so not served) until the flood is
// closed, and then is. Event-driven: the gateway's accepts are observed at the listener, and
// the request's connection is known to be queued once its dial returns.
func TestIdleConnectionFloodDoesNotStarveTheCapOrCrash(t *testing.T) {
	up := httptest.NewServer(&fakeProvider{})
	t.Cleanup(up.Close)
	s, err := New(Config{MaxConns: 4, Mode: Forward, Key: dummyKey, RetryBackoff: time.Millisecond,
		Providers: map[string]Provider{transcript.Anthropic: {BaseURL: up.URL, Key: realKey}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var released atomic.Bool
	watch := &acceptWatch{Listener: ln, released: &released, accepted: make(chan bool, 64)}
	s.Serve(watch)
	addr := ln.Addr().String()
	var conns []net.Conn
	for i := 0; i < 20; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 4; i++ { // the flood holds every slot
		<-watch.accepted
	}
	dialed := make(chan struct{})
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, a)
		close(dialed) // queued behind the flood: the kernel completed the handshake
		return c, err
	}}}
	type answer struct {
		code int
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", strings.NewReader(msgReq))
		req.Header.Set("x-api-key", dummyKey)
		resp, err := client.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- answer{code: resp.StatusCode}
	}()
	<-dialed
	released.Store(true)
	for _, c := range conns {
		c.Close()
	}
	a := <-done
	s.Close() // waits for the handler: its call is in the totals
	if a.err != nil || a.code != 200 || s.Totals().Turns != 1 {
		t.Fatalf("the request after the flood: %d %v, turns %d", a.code, a.err, s.Totals().Turns)
	}
	// Every connection the gateway took after the flood's four (the request's among them,
	// since it was answered) came after the release; later ones come after it too.
	for {
		select {
		case wasReleased := <-watch.accepted:
			if !wasReleased {
				t.Fatal("the gateway accepted a fifth connection while the flood held its four slots")
			}
		default:
			return
		}
	}
}

func TestParseFixtureRejectsBadLines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "no calls"},
		{"{", "line 1"},
		{`{"api":"x","depth":0,"status":200,"response":"{}"}`, "api"},
		{"\n" + `{"api":"openai","depth":0,"status":200}`, "line 2: response is empty"},
		{`{"api":"openai","depth":0,"status":20,"response":"{}"}`, "status"},
	} {
		if _, err := transcript.ParseFixture(strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

// Close from several goroutines at once closes once: the others return, none panics
// ("close of closed channel" when two saw the server open).
func TestCloseFromSeveralGoroutinesAtOnce(t *testing.T) {
	for range 3000 {
		s, err := New(Config{Mode: Forward, Key: dummyKey})
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				s.Close()
			}()
		}
		close(start)
		wg.Wait()
	}
}
