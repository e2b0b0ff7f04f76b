package selftest

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"ceval.dev/ceval/record"
)

// fakeProvider is a model provider on the host's loopback for attacks that need the
// gateway to hold a real-looking key: it answers every request with one canned message
// and remembers the keys it was sent, so the attack can show the key was really in use.
// A marker in the request picks another answer (see answer); the canned message says which
// premium options reached it (url sources and hour-long caches too, at any depth).
type fakeProvider struct {
	srv  *http.Server
	url  string
	mu   sync.Mutex
	keys []string
	// slowArrived is closed when a selftest-slow request has arrived.
	slowArrived chan struct{}
	slowOnce    sync.Once
}

func startFakeProvider() (*fakeProvider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &fakeProvider{url: "http://" + ln.Addr().String(), slowArrived: make(chan struct{})}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		key := r.Header.Get("X-Api-Key")
		p.mu.Lock()
		p.keys = append(p.keys, key)
		p.mu.Unlock()
		p.answer(w, r, body, key)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// answer is the fake provider's answer to body. Markers: selftest-slow never answers (until
// the gateway gives up the call), and selftest-after-slow is answered once a selftest-slow
// call has arrived (so the agent knows its call is under way); selftest-429 and
// selftest-400 draw those errors; selftest-echo echoes the key it was sent in the body and
// a header of a 200, as a careless proxy might.
func (p *fakeProvider) answer(w http.ResponseWriter, r *http.Request, body []byte, key string) {
	switch {
	case bytes.Contains(body, []byte("selftest-slow")):
		p.slowOnce.Do(func() { close(p.slowArrived) })
		<-r.Context().Done()
		return
	case bytes.Contains(body, []byte("selftest-after-slow")):
		select {
		case <-p.slowArrived:
		case <-r.Context().Done():
			return
		}
	case bytes.Contains(body, []byte("selftest-429")):
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
		return
	case bytes.Contains(body, []byte("selftest-400")):
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"malformed"}}`)
		return
	}
	text := "forwarded-answer"
	if bytes.Contains(body, []byte("selftest-echo")) {
		w.Header().Set("Request-Id", "req-"+key)
		text += " your key is " + key
	}
	var premium []string
	for _, f := range []string{"service_tier", "speed", "inference_geo", "file_id", "mcp_servers", "previous_response_id"} {
		if bytes.Contains(body, []byte(`"`+f+`"`)) {
			premium = append(premium, f)
		}
	}
	// The gateway re-encodes a body with its keys sorted, so these are what it forwards.
	for _, f := range []string{`"type":"url"`, `"ttl":"1h"`} {
		if bytes.Contains(body, []byte(f)) {
			premium = append(premium, f)
		}
	}
	for _, b := range r.Header.Values("Anthropic-Beta") {
		if strings.Contains(b, "files-api") || strings.Contains(b, "context-1m") {
			premium = append(premium, "anthropic-beta "+b)
		}
	}
	if len(premium) > 0 {
		text += " premium-reached: " + strings.Join(premium, ", ")
	}
	msg, _ := json.Marshal(map[string]any{"type": "message", "content": []any{map[string]any{"type": "text", "text": text}},
		"usage": map[string]any{"input_tokens": 7, "output_tokens": 3}})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(msg)
}

// sawKey reports whether the provider was sent key.
func (p *fakeProvider) sawKey(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range p.keys {
		if k == key {
			return true
		}
	}
	return false
}

func (p *fakeProvider) close() { _ = p.srv.Close() }

// runDirLeaks lists the files ceval wrote at the top of a run directory (result, events,
// transcripts) that hold secret.
func runDirLeaks(res *record.Result, secret string) []string {
	var out []string
	entries, _ := os.ReadDir(res.Dir)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(res.Dir, e.Name()))
		if err == nil && bytes.Contains(data, []byte(secret)) {
			out = append(out, "the real key is in "+e.Name())
		}
	}
	return out
}
