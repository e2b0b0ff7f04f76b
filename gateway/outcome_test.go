package gateway

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"ceval.dev/ceval/gateway/transcript"
)

// outcomes reads the transcript's outcome per call.
func outcomes(t *testing.T, log []byte) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var c transcript.Call
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("transcript line %q: %v", line, err)
		}
		out = append(out, c.Outcome)
	}
	return out
}

// postAsync posts msgReq in the background; the answer (or error) is dropped.
func postAsync(url string) {
	go func() {
		r, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(msgReq))
		r.Header.Set("x-api-key", dummyKey)
		if resp, err := http.DefaultClient.Do(r); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
}

// An agent that exits (or is killed) while its call is under way ends the run, and the
// gateway's Close cuts the call: recorded as cut, never as the provider failing, whether
// the provider had not answered yet or was streaming.
func TestCallCutByTheRunsEndIsNotAnUpstreamFailure(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "before headers", true: "mid-stream"}[streaming], func(t *testing.T) {
			arrived := make(chan struct{})
			fp := &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, n int) {
				if streaming {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
					w.(http.Flusher).Flush()
				}
				close(arrived)
				<-r.Context().Done() // a slow provider: answers only when the caller gives up
			}}
			var log lockedBuf
			s, url := start(t, Config{Log: &log}, fp)
			postAsync(url)
			<-arrived
			s.Close()
			tot := s.Totals()
			if tot.UpstreamFailures != 0 || tot.ProviderDown != 0 || tot.CutAtRunEnd != 1 {
				t.Fatalf("totals %+v: want the call counted as cut by the run's end, no upstream failure", tot)
			}
			if got := outcomes(t, log.snapshot()); len(got) != 1 || got[0] != OutcomeCut {
				t.Fatalf("transcript outcomes %q", got)
			}
		})
	}
}

// An agent that stops reading mid-answer is recorded; the rest of the answer is still
// metered; the provider did not fail.
func TestAgentDisconnectMidAnswerIsRecordedNotAFailure(t *testing.T) {
	release := make(chan struct{})
	fp := &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		<-release
		pad := "event: ping\ndata: {\"type\":\"ping\",\"pad\":\"" + strings.Repeat("x", 60<<10) + "\"}\n\n"
		for range 200 { // ~12 MB: far more than the socket buffers of a closed connection take
			io.WriteString(w, pad)
		}
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":70}}\n\n")
	}}
	log := &signalBuf{wrote: make(chan struct{}, 1)}
	s, url := start(t, Config{Log: log}, fp)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: "+dummyKey+"\r\nContent-Type: application/json\r\nContent-Length: "+itoa(len(msgReq))+"\r\n\r\n"+msgReq)
	br := bufio.NewReader(conn)
	for { // the answer has begun
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			break
		}
	}
	conn.Close()
	close(release)
	<-log.wrote // the call is over
	s.Close()
	tot := s.Totals()
	if tot.AgentDisconnects != 1 || tot.UpstreamFailures != 0 || tot.OutputTokens != 70 || tot.Turns != 1 {
		t.Fatalf("totals %+v: want one disconnect, the whole answer metered, no upstream failure", tot)
	}
	if got := outcomes(t, log.snapshot()); len(got) != 1 || got[0] != OutcomeAgentGone {
		t.Fatalf("transcript outcomes %q", got)
	}
}

// signalBuf is a transcript that signals each line written.
type signalBuf struct {
	lockedBuf
	wrote chan struct{}
}

func (b *signalBuf) Write(p []byte) (int, error) {
	n, err := b.lockedBuf.Write(p)
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// An agent that half-closes its connection after sending the request still gets its answer,
// and nothing is counted as a failure.
func TestHalfClosedConnectionGetsItsAnswer(t *testing.T) {
	fp := &fakeProvider{}
	s, url := start(t, Config{}, fp)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: "+dummyKey+"\r\nContent-Type: application/json\r\nContent-Length: "+itoa(len(msgReq))+"\r\n\r\n"+msgReq)
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "message_stop") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	s.Close()
	if tot := s.Totals(); tot.Turns != 1 || tot.UpstreamFailures != 0 || tot.CutAtRunEnd != 0 {
		t.Fatalf("totals %+v", tot)
	}

	// Half way through the body: a 400 of the gateway's own, recorded, no failure.
	s2, url2 := start(t, Config{}, fp)
	conn2, err := net.Dial("tcp", strings.TrimPrefix(url2, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	io.WriteString(conn2, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: "+dummyKey+"\r\nContent-Type: application/json\r\nContent-Length: "+itoa(len(msgReq))+"\r\n\r\n"+msgReq[:20])
	conn2.(*net.TCPConn).CloseWrite()
	resp2, err := http.ReadResponse(bufio.NewReader(conn2), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	s2.Close()
	if tot := s2.Totals(); resp2.StatusCode != 400 || tot.Refused != 1 || tot.UpstreamFailures != 0 || fp.count() != 1 {
		t.Fatalf("status %d, totals %+v, %d upstream", resp2.StatusCode, tot, fp.count())
	}
}

// What the agent provokes from the provider, a flood drawing 429s or malformed requests
// drawing 4xx, is relayed and counted as such, never as the provider failing.
func TestProvoked429sAnd4xxAreNotProviderFailures(t *testing.T) {
	for _, c := range []struct {
		status int
		field  func(Totals) int
	}{
		{429, func(t Totals) int { return t.RateLimited }},
		{400, func(t Totals) int { return t.UpstreamRejected }},
		{404, func(t Totals) int { return t.UpstreamRejected }},
		{413, func(t Totals) int { return t.UpstreamRejected }},
	} {
		fp := &fakeProvider{handler: func(w http.ResponseWriter, r *http.Request, n int) {
			w.WriteHeader(c.status)
			io.WriteString(w, `{"type":"error","error":{"type":"x","message":"provoked"}}`)
		}}
		s, url := start(t, Config{Retries: 1}, fp)
		for range 5 {
			if code, _ := post(t, url+"/v1/messages", dummyKey, msgReq); code != c.status {
				t.Fatalf("status %d, want %d relayed", code, c.status)
			}
		}
		s.Close()
		if tot := s.Totals(); c.field(tot) != 5 || tot.UpstreamFailures != 0 || tot.ProviderDown != 0 {
			t.Fatalf("%d: totals %+v", c.status, tot)
		}
	}
}

// A provider that cannot be reached, answers 5xx, or refuses ceval's credential is down:
// the one case the supervisor may blame on ceval's side.
func TestProviderDownIsCountedAsSuch(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for name, c := range map[string]struct {
		cfg     Config
		handler func(w http.ResponseWriter, r *http.Request, n int)
	}{
		"unreachable": {cfg: Config{Retries: 1, Providers: map[string]Provider{transcript.Anthropic: {BaseURL: closed, Key: realKey}}}},
		"503":         {handler: func(w http.ResponseWriter, r *http.Request, n int) { w.WriteHeader(503) }},
		"401":         {handler: func(w http.ResponseWriter, r *http.Request, n int) { w.WriteHeader(401) }},
	} {
		t.Run(name, func(t *testing.T) {
			var fp *fakeProvider
			if c.handler != nil {
				fp = &fakeProvider{handler: c.handler}
			}
			c.cfg.Retries = 1
			s, url := start(t, c.cfg, fp)
			post(t, url+"/v1/messages", dummyKey, msgReq)
			s.Close()
			if tot := s.Totals(); tot.ProviderDown != 1 || tot.UpstreamFailures != 1 || tot.CutAtRunEnd != 0 {
				t.Fatalf("totals %+v", tot)
			}
		})
	}
}
