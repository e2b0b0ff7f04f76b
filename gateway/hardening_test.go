package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"ceval.dev/ceval/gateway/transcript"
)

// Calls under way hold an estimate of their input too: eight at once, each with ~3600 bytes
// of input (900 tokens at the provider) and max_tokens 1, cannot spend max_total_tokens
// 1000 eight times over; they spend what two calls one after another would.
func TestConcurrentCallsCannotOverspendInput(t *testing.T) {
	release := make(chan struct{})
	fp := &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, n int) {
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"m","usage":{"input_tokens":900,"output_tokens":1}}`)
	}}
	s, url := start(t, Config{Limits: Limits{MaxTotalTokens: 1000}, MaxConcurrent: 8, MaxConns: 16}, fp)
	body := fmt.Sprintf(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":%q}]}`, strings.Repeat("word ", 720))
	codes := concurrently(t, url, body, 8, fp, release)
	tot := s.Totals()
	if spent := tot.InputTokens + tot.OutputTokens; spent > 2*901 || fp.count() > 2 {
		t.Fatalf("max_total_tokens 1000: %d calls reached the provider, %d tokens spent (codes %v); one after another at most 1802", fp.count(), spent, codes)
	}
}

// A script input that cannot be JSON is refused when the fixture is read, never by a
// panicking handler mid-run.
func TestScriptInputsMustBeJSON(t *testing.T) {
	for _, in := range []string{"{x: .nan}", "{x: {1: a}}", "{x: .inf}"} {
		src := "version: 1\napi: anthropic\nturns:\n  - tool_calls:\n      - name: Bash\n        input: " + in + "\n"
		_, err := transcript.ParseFixture(strings.NewReader(src))
		if err == nil || !strings.Contains(err.Error(), "line 4: turn 0 tool call 0: input cannot be sent as JSON") {
			t.Errorf("input %s: %v", in, err)
		}
	}
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) snapshot() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// Close waits for the calls under way: when it returns, a call cut off by the run's end is
// in the totals and in the transcript (the supervisor reads both right after).
func TestCloseWaitsForCallsUnderWay(t *testing.T) {
	started := make(chan struct{})
	fp := &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5000,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}}
	var log lockedBuf
	s, url := start(t, Config{Log: &log}, fp)
	relayed := make(chan struct{}) // the agent has the first event: the gateway read it
	go func() {
		r, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(msgReq))
		r.Header.Set("x-api-key", dummyKey)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			close(relayed)
			return
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		for line := ""; !strings.HasPrefix(line, "data:"); { // the message_start event's data line
			if line, err = br.ReadString('\n'); err != nil {
				break
			}
		}
		close(relayed)
		io.Copy(io.Discard, br) // the call stays under way until Close cuts it
	}()
	<-started
	<-relayed
	s.Close()
	if tot := s.Totals(); tot.InputTokens != 5000 || bytes.Count(log.snapshot(), []byte("\n")) != 1 {
		t.Fatalf("after Close: totals %+v, transcript %q", tot, log.snapshot())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight != 0 || s.reservedIn != 0 || s.reservedOut != 0 {
		t.Fatalf("after Close: %d in flight holding %d/%d", s.inflight, s.reservedIn, s.reservedOut)
	}
}

// The agent chooses what the transcript holds: bodies are written as sent (no six-byte
// escapes for <), left out past MaxLogBytes, and lines stop at twice that, counted.
func TestTranscriptIsBoundedAndNotAmplified(t *testing.T) {
	fp := &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`)
	}}
	var log lockedBuf
	_, url := start(t, Config{Log: &log, Limits: Limits{MaxTurns: 1}}, fp)
	body := fmt.Sprintf(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":%q}]}`, strings.Repeat("<", 256<<10))
	post(t, url+"/v1/messages", dummyKey, body)
	if n := len(log.snapshot()); n > len(body)+4096 {
		t.Fatalf("one %d-byte request took %d transcript bytes", len(body), n)
	}

	// Calls refused upstream count no turn, so max_turns does not bound them: the cap does.
	var capped lockedBuf
	const capBytes = 16 << 10
	s, url := start(t, Config{Log: &capped, MaxLogBytes: capBytes, Limits: Limits{MaxTurns: 1}}, fp)
	for range 300 {
		post(t, url+"/v1/messages", dummyKey, body)
	}
	data := capped.snapshot()
	if len(data) > 2*capBytes {
		t.Fatalf("transcript %d bytes, over twice its %d cap", len(data), capBytes)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var last transcript.Call
	if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil || !last.BodiesDropped || last.Request != nil || last.Status != 400 {
		t.Fatalf("the last line %.200s (%v): want a 400 with its bodies dropped", lines[len(lines)-1], err)
	}
	if dropped := s.Totals().LogLinesDropped; dropped == 0 || dropped+len(lines) != 300 {
		t.Fatalf("%d lines written, %d counted as dropped; want 300 in all, some dropped", len(lines), dropped)
	}
}
