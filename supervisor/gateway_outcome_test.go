package supervisor

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// forwardTask is a task whose command agent runs script through a forwarding gateway to
// provider h; it returns the run.
func forwardTask(t *testing.T, id, script, criteria string, h http.HandlerFunc, timeout string) (*record.Result, error) {
	t.Helper()
	up := httptest.NewServer(h)
	defer up.Close()
	doc := agentTask(id, script, criteria)
	doc = strings.Replace(doc, "  type: command\n", "  type: command\n  gateway: {mode: forward}\n", 1)
	if timeout != "" {
		doc = strings.Replace(doc, "timeout: 60s", "timeout: "+timeout, 1)
	}
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-api03-outcome-0123456789", "CEVAL_ANTHROPIC_BASE_URL": up.URL}
	return runTask(t, doc, nil, Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
}

// slowProvider never finishes a "slow" call (it answers only when the gateway gives up
// on it; "slow-started" calls get their streamed answer begun first); an "after-slow" call
// is answered once a slow call has arrived, so the agent knows its call is under way.
func slowProvider() http.HandlerFunc {
	arrived := make(chan struct{})
	var once sync.Once
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(b), "after-slow"):
			select {
			case <-arrived:
			case <-r.Context().Done():
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"slow-call-held"}],"usage":{"input_tokens":2,"output_tokens":1}}`)
		case strings.Contains(string(b), "slow"):
			if strings.Contains(string(b), "slow-started") {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n")
				w.(http.Flusher).Flush()
			}
			once.Do(func() { close(arrived) })
			<-r.Context().Done()
		}
	}
}

// midCallAgent starts a $SLOW call, waits until the provider holds it, records that, does
// its work, then runs $THEN (exit, or wait to be killed) with the call under way.
const midCallAgent = `post() { printf '{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"%s"}]}' "$1" > /tmp/$1.json
  wget -q -O - --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/$1.json "$CEVAL_GATEWAY_URL/v1/messages"; }
post $SLOW >/dev/null 2>&1 &
post after-slow | grep -q slow-call-held && echo midcall > /workspace/state.txt
echo work > /workspace/done.txt
$THEN`

// An agent that exits, or is killed at its timeout, while a model call is under way gets
// the status its work earned: the call cut off by the run's end is recorded, not an ERROR
// (which would drop the run from pass rates and have --resume run it again), whether the
// provider had begun answering or not.
func TestAgentExitingMidCallKeepsTheStatusItEarned(t *testing.T) {
	for _, c := range []struct {
		name, slow, then, extra, timeout, want string
	}{
		{"exits before the answer, work done", "slow", "exit 0", "", "", "SUCCESS"},
		{"exits before the answer, work failed", "slow", "exit 3", "  - {type: file_exists, path: missing.txt}\n", "", "FAILURE"},
		{"exits mid-answer, work failed", "slow-started", "exit 3", "  - {type: file_exists, path: missing.txt}\n", "", "FAILURE"},
		{"killed at its timeout before the answer", "slow", "sleep 600", "", "4s", record.StatusTimeout},
		{"killed at its timeout mid-answer", "slow-started", "sleep 600", "", "4s", record.StatusTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			script := strings.NewReplacer("$SLOW", c.slow, "$THEN", c.then).Replace(midCallAgent)
			criteria := "  - {type: file_contains, path: state.txt, includes: [midcall]}\n  - {type: file_exists, path: done.txt}\n" + c.extra
			res, err := forwardTask(t, "gw-mid-call", script, criteria, slowProvider(), c.timeout)
			if err != nil {
				t.Fatalf("run error %v (status %s); want %s", err, res.Status, c.want)
			}
			if res.Status != c.want || !res.Complete {
				t.Fatalf("status %s complete %v %+v; want %s", res.Status, res.Complete, res.Criteria, c.want)
			}
			g := res.Gateway
			if g.CutAtRunEnd != 1 || g.UpstreamFailures != 0 || g.ProviderDown != 0 {
				t.Fatalf("gateway %+v: want the call recorded as cut at the run's end", g)
			}
		})
	}
}

// provokingAgent draws errors from the gateway and the provider on purpose: a flood the
// provider answers 429, requests the provider rejects, a body that is not JSON, a field the
// allowlist refuses; then it fails its task.
const provokingAgent = `cd /tmp
printf '%s' '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' > ok.json
printf '%s' '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"bad"}]}' > bad.json
printf '%s' '{"model":"m","max_tokens":10,"messages":[' > broken.json
printf '%s' '{"model":"m","max_tokens":10,"messages":[],"service_tier":"auto"}' > tier.json
post() { wget -q -O - --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file "$1" "$CEVAL_GATEWAY_URL/v1/messages" >> /workspace/answers.txt 2>&1; }
post ok.json
for i in 1 2 3 4 5 6 7 8; do post ok.json & done; wait
post bad.json; post broken.json; post tier.json
echo provoked > /workspace/state.txt`

// Nothing the agent provokes (429s, 4xx, refusals, a provider that goes down after it got
// an answer) turns its FAILURE into an ERROR.
func TestProvokedGatewayErrorsKeepTheAgentsFailure(t *testing.T) {
	var n atomic.Int64
	provider := func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case n.Add(1) == 1: // the first call is answered
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"answer"}],"usage":{"input_tokens":3,"output_tokens":2}}`)
		case strings.Contains(string(b), "bad"):
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`)
		case n.Load() > 6: // then it goes down
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		default: // a rate limit the flood draws
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}
	criteria := "  - {type: file_contains, path: state.txt, includes: [provoked]}\n  - {type: file_exists, path: missing.txt}\n"
	res, err := forwardTask(t, "gw-provoked", provokingAgent, criteria, provider, "")
	if err != nil || res.Status != "FAILURE" || !res.Complete {
		t.Fatalf("err %v status %s complete %v %+v; want FAILURE", err, res.Status, res.Complete, res.Criteria)
	}
	g := res.Gateway
	if g.Turns != 1 || g.NotAllowed != 1 || g.UpstreamRejected != 1 || g.Refused < 2 || g.RateLimited+g.ProviderDown != 8 {
		t.Fatalf("gateway %+v", g)
	}
}

// An agent that calls an API ceval holds no key for (OpenAI's, in a run with only an
// Anthropic key) draws a local refusal: it is never sent upstream keyless, where the
// provider's 401 would read as "ceval's credential refused" and make the run an ERROR.
func TestCallingAnAPIWithoutACredentialIsNotAProviderFailure(t *testing.T) {
	var upstream atomic.Int64
	provider := func(w http.ResponseWriter, r *http.Request) {
		upstream.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
	}
	script := `printf '%s' '{"model":"m","input":"hi"}' > /tmp/r.json
wget -q -O - --header "Authorization: Bearer $CEVAL_GATEWAY_KEY" --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/r.json "$CEVAL_GATEWAY_URL/v1/responses" > /workspace/answer.txt 2>&1
echo tried > /workspace/state.txt`
	criteria := "  - {type: file_contains, path: state.txt, includes: [tried]}\n  - {type: file_exists, path: missing.txt}\n"
	res, err := forwardTask(t, "gw-keyless-api", script, criteria, provider, "")
	if err != nil || res.Status != "FAILURE" || !res.Complete {
		t.Fatalf("err %v status %s complete %v; want FAILURE", err, res.Status, res.Complete)
	}
	if g := res.Gateway; g.NotAllowed != 1 || g.ProviderDown != 0 || g.UpstreamFailures != 0 || upstream.Load() != 0 {
		t.Fatalf("gateway %+v, %d upstream calls: want one local refusal and nothing sent", g, upstream.Load())
	}
}

// A forwarding run whose agent CLI's own key is not in ceval's environment is refused
// before the agent starts, naming the variable.
func TestForwardWithoutTheAgentsKeyIsRefusedBeforeTheStart(t *testing.T) {
	tk := &task.Task{ID: "t", Agent: &task.Agent{Type: task.AgentCodex, Gateway: &task.Gateway{Mode: task.GatewayForward}}}
	_, err := startGateway(tk, t.TempDir(), func(k string) (string, bool) {
		return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-x"}[k], k == "ANTHROPIC_API_KEY"
	}, nil, nil)
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("want an InputError naming OPENAI_API_KEY, got %v", err)
	}
}
