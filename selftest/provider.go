package selftest

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"ceval.dev/ceval/supervisor"
)

// fakeProvider is a model provider on the host's loopback for attacks that need the
// gateway to hold a real-looking key: it answers every request with one canned message
// and remembers the keys it was sent, so the attack can show the key was really in use.
type fakeProvider struct {
	srv  *http.Server
	url  string
	mu   sync.Mutex
	keys []string
}

func startFakeProvider() (*fakeProvider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &fakeProvider{url: "http://" + ln.Addr().String()}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		p.mu.Lock()
		p.keys = append(p.keys, r.Header.Get("X-Api-Key"))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"forwarded-answer"}],"usage":{"input_tokens":7,"output_tokens":3}}`)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
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
func runDirLeaks(res *supervisor.Result, secret string) []string {
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
