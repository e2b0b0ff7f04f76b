package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"strconv"
	"strings"
	"time"

	"ceval.dev/ceval/gateway/transcript"
)

// routes are the only paths served, each POST only: no files, batches, models or other
// endpoints reach the provider.
var routes = map[string]string{"/v1/messages": transcript.Anthropic, "/v1/responses": transcript.OpenAI}

// returnedHeaders are the upstream response headers the agent sees.
var returnedHeaders = []string{"Content-Type", "Request-Id", "X-Request-Id", "Retry-After"}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		w.Header().Set("Connection", "close")
		http.Error(w, "ceval gateway: the run is over", http.StatusServiceUnavailable)
		return
	}
	defer s.handlers.Done()
	// net/http writes a response's end (the last chunk) after the handler returns, under
	// the write deadline relay set before its last flush: a provider that ends its stream a
	// while after its last byte would cost the agent that end. A fresh one as we return.
	defer func() { _ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)) }()
	start := time.Now()
	s.mu.Lock()
	s.totals.Requests++
	s.mu.Unlock()
	api, ok := routes[r.URL.Path]
	if !ok || r.Method != http.MethodPost || !(r.URL.RawQuery == "" || (api == transcript.Anthropic && r.URL.RawQuery == "beta=true")) {
		if api == "" {
			api = transcript.Anthropic
			if strings.Contains(r.URL.Path, "response") {
				api = transcript.OpenAI
			}
		}
		s.refuse(w, transcript.Call{API: api}, start, http.StatusNotFound, "not_found_error",
			fmt.Sprintf("ceval gateway: %s %s is not served (only POST /v1/messages and POST /v1/responses)", r.Method, r.URL.Path))
		return
	}
	call := transcript.Call{API: api}
	if !s.keyMatches(r) {
		s.refuse(w, call, start, http.StatusUnauthorized, "authentication_error", "ceval gateway: invalid API key")
		return
	}
	if err := s.allow[api].checkHeaders(r.Header); err != nil {
		s.refuseNotAllowed(w, call, start, err)
		return
	}
	if s.cfg.Mode != Replay && s.cfg.Providers[api].Key == "" {
		// Never sent upstream keyless: the provider's 401 would read as "ceval's credential
		// refused" (provider down), and an agent could turn its run into an ERROR by calling
		// an API its task does not use.
		s.count(&call, OutcomeNotAllowed)
		s.refuse(w, call, start, http.StatusForbidden, "permission_error",
			"ceval gateway: ceval holds no credential for the "+api+" API, so it forwards no call to it")
		return
	}
	if r.ContentLength > s.cfg.MaxRequestBytes { // refused before reading a byte of it
		s.refuse(w, call, start, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("ceval gateway: request body over %d bytes", s.cfg.MaxRequestBytes))
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.refuse(w, call, start, http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("ceval gateway: request body over %d bytes", s.cfg.MaxRequestBytes))
			return
		}
		s.refuse(w, call, start, http.StatusBadRequest, "invalid_request_error", "ceval gateway: reading the request: "+err.Error())
		return
	}
	req, err := parseRequest(api, data)
	if err != nil {
		s.refuse(w, call, start, http.StatusBadRequest, "invalid_request_error", "ceval gateway: "+err.Error())
		return
	}
	resv, remaining, why, busy := s.reserve(inputEstimate(data))
	switch {
	case why != "":
		s.refuse(w, call, start, http.StatusBadRequest, "invalid_request_error", "ceval gateway: the run's budget is exhausted: "+why)
		return
	case busy != "":
		// Not exceeded yet: the rest is held by calls under way. A CLI retries a 429.
		w.Header().Set("Retry-After", "1")
		s.refuse(w, call, start, http.StatusTooManyRequests, "rate_limit_error", "ceval gateway: "+busy+"; retry when they are answered")
		return
	}
	defer s.release(resv)
	call.Stripped = req.rewrite(s.cfg.Model, remaining, s.cfg.AllowServerTools)
	// What is left after the rewrite is forwarded, and priced, only if the allowlist has it.
	if err := s.allow[api].checkBody(req.body); err != nil {
		s.refuseNotAllowed(w, call, start, err)
		return
	}
	if remaining >= 0 {
		if n, err := req.maxOutput(); err == nil && n < remaining {
			s.shrink(resv, n) // the call asked for less than it could have
		}
	}
	call.Model, call.Depth, call.Tools, call.Stream = req.model, req.depth, req.tools, req.stream
	if call.Stripped > 0 {
		s.mu.Lock()
		s.totals.StrippedTools += call.Stripped
		s.mu.Unlock()
	}
	// The transcript keeps every request as sent on (rewritten, never a credential) and
	// every answer, in every mode.
	call.Request = req.encode()
	if s.cfg.Mode == Replay {
		s.serveReplay(w, req, call, resv, start)
		return
	}
	s.serveForward(w, r, req, call, resv, start)
}

func (s *Server) serveReplay(w http.ResponseWriter, req *request, call transcript.Call, resv *reservation, start time.Time) {
	call.Replayed = true
	ct, body, status := "", "", http.StatusOK
	if c := s.next(transcript.Key{API: req.api, Depth: req.depth, Tools: req.tools}, req.model, req.stream); c != nil {
		ct, body, status = c.ContentType, c.Response, c.Status
	} else if !req.tools {
		ct, body = transcript.DefaultAnswer(req.api, req.model, req.stream)
	} else {
		s.mu.Lock()
		s.totals.ReplayMisses++
		s.mu.Unlock()
		s.refuse(w, call, start, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("ceval gateway (replay): the fixture has no %s answer for a request with tools at depth %d", req.api, req.depth))
		return
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	m := newMeter(req.api, ct)
	if agentErr, _ := s.relay(w, strings.NewReader(body), m); agentErr != nil {
		s.count(&call, OutcomeAgentGone)
	}
	call.Status, call.ContentType, call.Response = status, ct, body
	s.finish(call, resv, m.usage(), start)
}

func (s *Server) serveForward(w http.ResponseWriter, r *http.Request, req *request, call transcript.Call, resv *reservation, start time.Time) {
	// Not the agent's request context: a response the agent stops reading is still read to
	// its end, so its usage is metered.
	ctx, cancel := s.ctxUntilClosed(context.Background())
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, s.cfg.UpstreamTimeout)
	defer cancelT()
	sem := s.sem[req.api]
	select {
	case sem <- struct{}{}: // a free slot first: an agent that half-closed its side still gets its answer
	default:
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done(): // the agent went away before its call was sent
			s.fail(w, call, start, OutcomeAgentGone, "the agent's connection closed before the call was sent")
			return
		case <-ctx.Done():
			outcome := OutcomeUpstreamFailed // its time ran out queued behind the agent's other calls
			if s.isClosed() {
				outcome = OutcomeCut
			}
			s.fail(w, call, start, outcome, "the call could not be sent: "+ctx.Err().Error())
			return
		}
	}
	defer func() { <-sem }()
	resp, up, err := s.upstream(ctx, req.api, r, call.Request) // encoded once, in serveHTTP
	call.Attempts = up.attempts
	if err != nil {
		outcome := OutcomeUpstreamFailed
		switch {
		case s.isClosed():
			outcome = OutcomeCut
		case up.down:
			outcome = OutcomeProviderDown
		}
		msg := "the model provider could not be reached: " + s.scrub(err.Error())
		if outcome == OutcomeCut {
			msg = "the run ended before the model provider answered"
			if up.down {
				s.count(nil, OutcomeProviderDown) // retrying a provider that was down when the run ended
				msg += " (it had been found down and was being retried)"
			}
		}
		s.fail(w, call, start, outcome, msg)
		return
	}
	defer resp.Body.Close()
	for _, h := range returnedHeaders {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, s.scrub(v))
		}
	}
	call.Status = resp.StatusCode
	call.ContentType = s.scrub(resp.Header.Get("Content-Type"))
	if resp.StatusCode >= 400 {
		switch {
		case up.down:
			s.count(&call, OutcomeProviderDown)
		case resp.StatusCode == http.StatusTooManyRequests:
			s.count(&call, OutcomeRateLimited)
		default:
			s.count(&call, OutcomeRejected)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		clean := s.scrub(string(b))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.WriteString(w, clean)
		call.Response = clean
		s.finish(call, resv, nil, start)
		return
	}
	w.WriteHeader(resp.StatusCode)
	m := newMeter(req.api, call.ContentType)
	rec := &capBuffer{max: maxRecordedBody}
	agentErr, srcErr := s.relay(w, resp.Body, m, rec)
	switch {
	case srcErr != nil && s.isClosed():
		s.count(&call, OutcomeCut)
	case srcErr != nil:
		s.count(&call, OutcomeUpstreamFailed)
	case agentErr != nil:
		s.count(&call, OutcomeAgentGone)
	}
	call.Response, call.Truncated = rec.b.String(), rec.cut
	s.finish(call, resv, m.usage(), start)
}

// upstreamInfo is how a call's upstream attempts went.
type upstreamInfo struct {
	attempts int
	// down: the last attempt found the provider down: no connection, a 5xx, or ceval's
	// credential refused (401, 407). Nothing the agent sends brings these about.
	down bool
}

// upstream sends the request to the provider with the real credential, retrying 429s, 5xx
// and transport errors with a bounded backoff (Retry-After honoured up to a cap).
func (s *Server) upstream(ctx context.Context, api string, in *http.Request, body []byte) (*http.Response, upstreamInfo, error) {
	p := s.cfg.Providers[api]
	url := p.BaseURL + in.URL.Path
	if in.URL.RawQuery != "" {
		url += "?" + in.URL.RawQuery
	}
	var info upstreamInfo
	for attempt := 0; ; attempt++ {
		info.attempts = attempt + 1
		connected := false
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected = true }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, info, err
		}
		for _, h := range s.allow[api].Headers {
			if v := in.Header.Values(h); len(v) > 0 {
				req.Header[http.CanonicalHeaderKey(h)] = v
			}
		}
		req.Header.Set("Content-Type", "application/json")
		setCredential(req.Header, api, p)
		resp, err := s.cfg.Client.Do(req)
		info.down = (err != nil && !connected && ctx.Err() == nil) ||
			(err == nil && (resp.StatusCode >= 500 || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusProxyAuthRequired))
		retryable := err != nil || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		if !retryable || attempt >= s.cfg.Retries {
			return resp, info, err
		}
		wait := s.cfg.RetryBackoff << attempt
		if resp != nil {
			if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && ra >= 0 {
				wait = time.Duration(ra) * time.Second
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
		}
		wait = min(wait, maxRetryAfter)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, info, ctx.Err()
		case <-t.C:
		}
	}
}

func setCredential(h http.Header, api string, p Provider) {
	name := p.Header
	if name == "" {
		name = map[string]string{transcript.Anthropic: "X-Api-Key", transcript.OpenAI: "Authorization"}[api]
	}
	if strings.EqualFold(name, "Authorization") {
		h.Set("Authorization", "Bearer "+p.Key)
		return
	}
	h.Set(name, p.Key)
}

// relay copies src to the agent with the credentials scrubbed, flushing each chunk with a
// write deadline so a slow reader is cut off; after the agent is gone (agentErr) it still
// reads src into the sinks (the meter, the transcript). srcErr is src failing before its end.
func (s *Server) relay(w http.ResponseWriter, src io.Reader, sinks ...io.Writer) (agentErr, srcErr error) {
	rc := http.NewResponseController(w)
	red := &redactor{secrets: s.secrets}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if out := red.next(buf[:n], err != nil); len(out) > 0 {
			for _, k := range sinks {
				_, _ = k.Write(out)
			}
			if agentErr == nil {
				_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
				if _, agentErr = w.Write(out); agentErr == nil {
					agentErr = rc.Flush()
				}
			}
		}
		if err == io.EOF {
			return agentErr, nil
		}
		if err != nil {
			return agentErr, err
		}
	}
}

// reserve takes a turn and the output tokens the next call may use (rem, -1: unlimited) out
// of the run's budgets, counting what the calls under way hold. It returns why no call may
// be made any more (recording that a budget was exceeded), or busy when the rest of a budget
// is held by calls under way (not exceeded yet: the agent may retry once they are answered).
func (s *Server) reserve(inEst int64) (r *reservation, rem int64, why, busy string) {
	s.mu.Lock()
	t, l := &s.totals, s.cfg.Limits
	fired := s.markExceeded(true)
	if t.Exceeded != "" {
		why := t.ExceededLimit
		s.mu.Unlock()
		s.notifyExceeded(fired)
		return nil, 0, why, ""
	}
	defer s.mu.Unlock()
	if l.MaxTurns > 0 && int64(t.Turns)+s.inflight >= l.MaxTurns {
		return nil, 0, "", fmt.Sprintf("the turns left under max_turns %d are taken by %d call(s) under way", l.MaxTurns, s.inflight)
	}
	if l.MaxInputTokens > 0 && s.inflight > 0 && t.InputTokens+s.reservedIn >= l.MaxInputTokens {
		return nil, 0, "", fmt.Sprintf("the input left under max_input_tokens %d is held by %d call(s) under way", l.MaxInputTokens, s.inflight)
	}
	rem = int64(-1) // unlimited; a budget's share below is never negative
	if l.MaxOutputTokens > 0 {
		rem = max(l.MaxOutputTokens-t.OutputTokens-s.reservedOut, 0)
	}
	if l.MaxTotalTokens > 0 {
		if left := max(l.MaxTotalTokens-t.InputTokens-t.OutputTokens-s.reservedIn-s.reservedOut, 0); rem < 0 || left < rem {
			rem = left
		}
	}
	if l.MaxUSD > 0 {
		// What the money left buys in output alone, less what the calls under way may still
		// spend; the call's own input costs on top.
		p := s.cfg.Prices[s.cfg.Model]
		held := (float64(s.reservedIn)*p.Input + float64(s.reservedOut)*p.Output) / 1e6
		if left := p.outputTokensFor(l.MaxUSD - t.CostUSD - held); left >= 0 && (rem < 0 || left < rem) {
			rem = left
		}
	}
	if rem >= 0 && rem < 1 {
		if s.inflight > 0 {
			return nil, 0, "", fmt.Sprintf("the budget left is held by %d call(s) under way", s.inflight)
		}
		rem = 1 // not exceeded, yet less than a token's worth left: one more token's call
	}
	r = &reservation{out: max(rem, 0), in: inEst}
	s.inflight++
	s.reservedOut += r.out
	s.reservedIn += r.in
	return r, rem, "", ""
}

// inputEstimate is what a request body of this size is held at against input budgets
// while its call is under way: about four bytes a token for text and JSON.
func inputEstimate(body []byte) int64 { return int64(len(body))/4 + 1 }

// reservation is what one call under way holds of the run's budgets: a turn, the output
// tokens it may produce and an estimate of its input.
type reservation struct {
	out, in int64
	done    bool
}

// shrink lowers r to n output tokens.
func (s *Server) shrink(r *reservation, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !r.done && n >= 0 && n < r.out {
		s.reservedOut -= r.out - n
		r.out = n
	}
}

// releaseLocked gives r back; the caller holds s.mu. It is idempotent and nil-safe.
func (s *Server) releaseLocked(r *reservation) {
	if r == nil || r.done {
		return
	}
	r.done = true
	s.inflight--
	s.reservedOut -= r.out
	s.reservedIn -= r.in
}

// release is releaseLocked, taking s.mu.
func (s *Server) release(r *reservation) {
	s.mu.Lock()
	s.releaseLocked(r)
	s.mu.Unlock()
}

// markExceeded records the first budget the totals have reached (before a call: a call
// at the limit would pass it) or passed (after one), and says whether it was newly
// recorded. The caller holds s.mu, and calls notifyExceeded with the answer once it has
// released it.
func (s *Server) markExceeded(before bool) bool {
	t, l := &s.totals, s.cfg.Limits
	if t.Exceeded != "" {
		return false
	}
	over := func(used, limit int64) bool { return limit > 0 && (used > limit || before && used >= limit) }
	switch {
	case before && l.MaxTurns > 0 && int64(t.Turns) >= l.MaxTurns:
		t.Exceeded, t.ExceededLimit = ExceededTurns, fmt.Sprintf("max_turns %d", l.MaxTurns)
	case over(t.InputTokens, l.MaxInputTokens):
		t.Exceeded, t.ExceededLimit = ExceededTokens, fmt.Sprintf("max_input_tokens %d", l.MaxInputTokens)
	case over(t.OutputTokens, l.MaxOutputTokens):
		t.Exceeded, t.ExceededLimit = ExceededTokens, fmt.Sprintf("max_output_tokens %d", l.MaxOutputTokens)
	case over(t.InputTokens+t.OutputTokens, l.MaxTotalTokens):
		t.Exceeded, t.ExceededLimit = ExceededTokens, fmt.Sprintf("max_total_tokens %d", l.MaxTotalTokens)
	case l.MaxUSD > 0 && (t.CostUSD > l.MaxUSD || before && t.CostUSD >= l.MaxUSD):
		t.Exceeded, t.ExceededLimit = ExceededCost, fmt.Sprintf("max_usd %g", l.MaxUSD)
	default:
		return false
	}
	return true
}

// notifyExceeded tells OnExceeded, once, which budget was exceeded; fired is
// markExceeded's answer.
func (s *Server) notifyExceeded(fired bool) {
	if !fired || s.cfg.OnExceeded == nil {
		return
	}
	s.notified.Do(func() {
		s.mu.Lock()
		kind, limit := s.totals.Exceeded, s.totals.ExceededLimit
		s.mu.Unlock()
		s.cfg.OnExceeded(kind, limit)
	})
}

// finish accounts a call answered by the model (or the fixture), priced at its model's
// price, and logs it; resv is what the call held of the run's budgets while under way.
func (s *Server) finish(call transcript.Call, resv *reservation, u *transcript.Usage, start time.Time) {
	call.Usage = u
	s.mu.Lock()
	s.releaseLocked(resv) // the call's usage replaces what it held, under one lock
	t := &s.totals
	if call.Status/100 == 2 {
		t.Turns++
	}
	if u != nil {
		t.InputTokens += u.Input
		t.CachedInputTokens += u.Cached
		t.CacheCreationInputTokens += u.CacheCreation
		t.OutputTokens += u.Output
		t.ReasoningTokens += u.Reasoning
		if p, ok := s.cfg.Prices[call.Model]; ok {
			u.CostUSD = p.Cost(*u)
			t.CostUSD += u.CostUSD
		} else if len(s.cfg.Prices) > 0 && u.Input+u.Output > 0 {
			t.UnpricedCalls++
		}
	}
	fired := s.markExceeded(false)
	s.mu.Unlock()
	s.notifyExceeded(fired)
	s.log(call, start)
}

// Outcomes of calls that got no (whole) answer, in the transcript's outcome field; each has
// its counter in Totals.
const (
	OutcomeCut            = "cut_at_run_end"     // the run ended (the gateway closed) under it
	OutcomeAgentGone      = "agent_disconnected" // the agent stopped reading (or left before it was sent)
	OutcomeProviderDown   = "provider_down"
	OutcomeUpstreamFailed = "upstream_failed"
	OutcomeRateLimited    = "upstream_rate_limited"
	OutcomeRejected       = "upstream_rejected" // a provider 4xx, relayed
	OutcomeNotAllowed     = "not_allowed"
)

// count adds one to outcome's counter and marks call (may be nil) with it.
func (s *Server) count(call *transcript.Call, outcome string) {
	if call != nil && call.Outcome == "" {
		call.Outcome = outcome
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &s.totals
	switch outcome {
	case OutcomeCut:
		t.CutAtRunEnd++
	case OutcomeAgentGone:
		t.AgentDisconnects++
	case OutcomeProviderDown:
		t.ProviderDown++
		t.UpstreamFailures++
	case OutcomeUpstreamFailed:
		t.UpstreamFailures++
	case OutcomeRateLimited:
		t.RateLimited++
	case OutcomeRejected:
		t.UpstreamRejected++
	case OutcomeNotAllowed:
		t.NotAllowed++
	}
}

// fail answers a call the provider did not answer (502), counted as outcome and logged.
func (s *Server) fail(w http.ResponseWriter, call transcript.Call, start time.Time, outcome, msg string) {
	s.count(&call, outcome)
	s.writeError(w, call.API, http.StatusBadGateway, "api_error", "ceval gateway: "+msg)
	call.Status, call.Refused = http.StatusBadGateway, msg
	s.log(call, start)
}

// refuseNotAllowed refuses a request for what the allowlist does not forward.
func (s *Server) refuseNotAllowed(w http.ResponseWriter, call transcript.Call, start time.Time, err error) {
	s.count(&call, OutcomeNotAllowed)
	s.refuse(w, call, start, http.StatusBadRequest, "invalid_request_error", "ceval gateway: "+err.Error())
}

// refuse answers with an API error in the provider's format without calling it.
func (s *Server) refuse(w http.ResponseWriter, call transcript.Call, start time.Time, status int, typ, msg string) {
	s.writeError(w, call.API, status, typ, msg)
	s.mu.Lock()
	s.totals.Refused++
	s.mu.Unlock()
	call.Status, call.Refused = status, msg
	s.log(call, start)
}

// writeError writes an API error in api's format.
func (s *Server) writeError(w http.ResponseWriter, api string, status int, typ, msg string) {
	var body any
	if api == transcript.OpenAI {
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}}
	} else {
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	}
	data, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func (s *Server) log(call transcript.Call, start time.Time) {
	if s.cfg.Log == nil {
		return
	}
	call.Time = start.UTC().Format(time.RFC3339Nano)
	call.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.logMu.Lock()
	defer s.logMu.Unlock()
	// The agent chooses what it sends: past MaxLogBytes the bodies are left out, past twice
	// that the lines too (counted), so it cannot fill the host's disk through the transcript.
	data, err := marshalLine(call)
	if err == nil && s.logged+int64(len(data)) > s.cfg.MaxLogBytes {
		call.Request, call.Response, call.BodiesDropped = nil, "", true
		data, err = marshalLine(call)
	}
	if err == nil {
		data = redactLine(s.secrets, data)
	}
	if err != nil || s.logged+int64(len(data)) > 2*s.cfg.MaxLogBytes {
		s.mu.Lock()
		s.totals.LogLinesDropped++
		s.mu.Unlock()
		return
	}
	n, _ := s.cfg.Log.Write(data)
	s.logged += int64(n)
}

// marshalLine is v as one JSON line, without HTML escaping (which would make every <, >
// and & of a body six bytes).
func marshalLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// credentialPattern matches things that look like API keys or bearer tokens.
var credentialPattern = regexp.MustCompile(`(?i)(sk-[a-z0-9_\-]{8,}|bearer\s+[^\s"',]+)`)

// scrub removes the real credentials, and anything that looks like one, from upstream text
// before the agent sees it.
func (s *Server) scrub(text string) string {
	return credentialPattern.ReplaceAllString(redactString(s.secrets, text), redacted)
}

// capBuffer keeps the first max bytes written to it.
type capBuffer struct {
	b   bytes.Buffer
	max int
	cut bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); room < len(p) {
		c.cut = true
		p = p[:max(room, 0)]
	}
	c.b.Write(p)
	return len(p), nil
}
