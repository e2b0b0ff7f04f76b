package gateway

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockingProvider holds every call until release is closed, so calls are truly concurrent.
func blockingProvider(release chan struct{}) *fakeProvider {
	return &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, n int) {
		<-release
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(anthropicStream))
	}}
}

// concurrently posts body n times at once (n <= the gateway's MaxConcurrent, so no call
// queues) and returns the status codes once all answered. Each call either reaches fp, which
// holds it until release is closed, or is answered by the gateway at once: release is closed
// when every call has done one or the other, not after a time.
func concurrently(t *testing.T, url, body string, n int, fp *fakeProvider, release chan struct{}) []int {
	t.Helper()
	codes := make([]int, n)
	answered := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			codes[i], _ = post(t, url+"/v1/messages", dummyKey, body)
			answered <- struct{}{}
		})
	}
	tick := time.NewTicker(time.Millisecond) // fp has no arrival event: its count is polled
	defer tick.Stop()
	hang := time.After(time.Minute)
	for got := 0; fp.count()+got < n; {
		select {
		case <-answered:
			got++
		case <-tick.C:
		case <-hang:
			t.Fatalf("after a minute %d of %d calls reached the provider and %d were answered", fp.count(), n, got)
		}
	}
	close(release)
	wg.Wait()
	return codes
}

func count(codes []int, code int) int {
	n := 0
	for _, c := range codes {
		if c == code {
			n++
		}
	}
	return n
}

// Calls under way hold their turn: eight at once under max_turns 2 let two reach the
// provider; the rest are told to retry (429), and the budget is not marked exceeded until a
// call beyond it is asked for.
func TestConcurrentCallsCannotOverspendTurns(t *testing.T) {
	release := make(chan struct{})
	fp := blockingProvider(release)
	var heard []string
	var mu sync.Mutex
	s, url := start(t, Config{Limits: Limits{MaxTurns: 2}, MaxConcurrent: 8, MaxConns: 16,
		OnExceeded: func(kind, limit string) { mu.Lock(); heard = append(heard, limit); mu.Unlock() }}, fp)
	codes := concurrently(t, url, msgReq, 8, fp, release)
	if fp.count() != 2 || count(codes, 200) != 2 || count(codes, http.StatusTooManyRequests) != 6 {
		t.Fatalf("max_turns 2 with 8 calls at once: provider saw %d, codes %v", fp.count(), codes)
	}
	if tot := s.Totals(); tot.Turns != 2 || tot.Exceeded != "" {
		t.Fatalf("totals %+v", tot)
	}
	code, body := post(t, url+"/v1/messages", dummyKey, msgReq)
	if code != 400 || !strings.Contains(body, "max_turns 2") || fp.count() != 2 {
		t.Fatalf("the third turn: %d %s (provider saw %d)", code, body, fp.count())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 {
		t.Fatalf("OnExceeded heard %v", heard)
	}
}

// Output tokens a call may still produce are held while it runs: under max_output_tokens
// 100, calls asking for 60 each get 60 and then the 40 left, and the rest wait.
func TestConcurrentCallsCannotOverspendOutput(t *testing.T) {
	release := make(chan struct{})
	fp := blockingProvider(release)
	s, url := start(t, Config{Limits: Limits{MaxOutputTokens: 100}, MaxConcurrent: 8, MaxConns: 16}, fp)
	body := strings.Replace(msgReq, `"max_tokens":4096`, `"max_tokens":60`, 1)
	codes := concurrently(t, url, body, 6, fp, release)
	if fp.count() != 2 || count(codes, 200) != 2 || count(codes, http.StatusTooManyRequests) != 4 {
		t.Fatalf("provider saw %d, codes %v", fp.count(), codes)
	}
	var caps []float64
	for _, b := range fp.bodies {
		caps = append(caps, b["max_tokens"].(float64))
	}
	if !(caps[0] == 60 && caps[1] == 40 || caps[0] == 40 && caps[1] == 60) {
		t.Fatalf("max_tokens upstream %v, want 60 and the 40 left", caps)
	}
	// Both answered 7 tokens: 86 are left, and nothing is held any more.
	if tot := s.Totals(); tot.OutputTokens != 14 {
		t.Fatalf("totals %+v", tot)
	}
	s.mu.Lock()
	inflight, held := s.inflight, s.reservedOut
	s.mu.Unlock()
	if inflight != 0 || held != 0 {
		t.Fatalf("after every call answered: %d in flight holding %d tokens", inflight, held)
	}
	post(t, url+"/v1/messages", dummyKey, body)
	if got := fp.bodies[2]["max_tokens"]; got != float64(60) {
		t.Fatalf("the next call's max_tokens %v, want 60 (86 left)", got)
	}
}
