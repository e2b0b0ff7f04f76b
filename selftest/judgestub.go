package selftest

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"ceval.dev/ceval/judge"
)

// judgeStubContext is the stub judge model's context, in request bytes: below the 512 KiB
// of files ceval shows one llm_judge, as a real model's 200k tokens can be (judge's
// ErrInputTooLong).
const judgeStubContext = 256 << 10

// judgeStub is a judge model on the host's loopback for the attacks on llm_judge: it speaks
// the Anthropic Messages API, refuses a request over its context as a provider does (400
// "prompt is too long"), scores 0 a request that shows it the attack's damning marker, and
// 1 anything else: a judge that passes what it is shown, so what ceval does not show it is
// what the attack is about.
type judgeStub struct {
	srv            *http.Server
	url            string
	mu             sync.Mutex
	calls, refused int
}

// judgeStubDamning is what the attack writes where its work fails the rubric.
const judgeStubDamning = "selftest-damning"

func startJudgeStub() (*judgeStub, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &judgeStub{url: "http://" + ln.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.answer), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *judgeStub) answer(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	s.mu.Lock()
	s.calls++
	over := len(body) > judgeStubContext
	if over {
		s.refused++
	}
	s.mu.Unlock()
	if over {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 301234 tokens > 200000 maximum"}}`)
		return
	}
	verdict := `{"score": 1, "reasons": "the work shown is complete"}`
	if bytes.Contains(body, []byte(judgeStubDamning)) {
		verdict = `{"score": 0, "reasons": "the work is not done"}`
	}
	msg, _ := json.Marshal(map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "text", "text": verdict}},
		"usage": map[string]any{"input_tokens": len(body) / 4, "output_tokens": 12}})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(msg)
}

// judge is a live judge of ceval's that asks the stub.
func (s *judgeStub) judge() *judge.Judge {
	return judge.New(judge.Config{API: judge.Anthropic, Model: "selftest-judge-stub", BaseURL: s.url, Key: "selftest-judge-key", KeyEnv: "SELFTEST_JUDGE_KEY", Timeout: 30 * time.Second}, nil, nil)
}

// counts are the calls the stub answered and those it refused as over its context.
func (s *judgeStub) counts() (calls, refused int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.refused
}

func (s *judgeStub) close() { _ = s.srv.Close() }
