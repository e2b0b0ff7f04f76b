package supervisor

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/gateway/transcript"
	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/judge"
)

// A judge agent's own directory (JudgeDir, where its verdict goes) is copied out like any
// run's outputs, under the snapshot's caps (past its entry cap, the criterion FAILs naming the
// cap). The agent under test leaves a test script that floods it past that cap (100,000
// entries) in a directory that sorts before the verdict file; the judge runs it as the rubric
// asks, then writes its verdict of 1 with its Write tool. The judge's commands run confined
// (ceval-init --judge-shell: writes only under /workspace, /tmp, /dev), so the flood never
// reaches JudgeDir: the verdict is read as the judge wrote it, and the judge's directory
// holds nothing of the flood. Red without the confinement: the flood lands, and the criterion
// FAILs naming the entry cap.
func TestAgentJudgesCommandsCannotFloodItsOwnDirectory(t *testing.T) {
	withAgentImage(t)
	doc := agentTask("judge-snapshot-flood", `printf 'mkdir -p /judge/a-results && cd /judge/a-results && seq 1 100500 | xargs touch\n' >run-tests.sh`,
		"  - {type: agent_judge, rubric: 'Run run-tests.sh; score 1 if it ran.', judge_model: claude-sonnet-4-5, agent_fixture: judge.yaml, timeout: 5m}\n")
	files := map[string]string{"judge.yaml": "version: 1\napi: anthropic\nturns:\n" +
		"  - tool_calls: [{name: Bash, input: {command: \"sh /workspace/run-tests.sh; ls /judge | wc -l\", timeout: 240000}}]\n    usage: {input_tokens: 10, output_tokens: 5}\n" +
		"  - tool_calls: [{name: Write, input: {file_path: " + JudgeVerdict + ", content: '{\"score\": 1, \"reasons\": \"the tests ran\"}'}}]\n    usage: {input_tokens: 10, output_tokens: 5}\n" +
		"  - text: Done.\n    usage: {input_tokens: 20, output_tokens: 2}\n"}
	res, err := runTask(t, doc, files, Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Criteria[0]
	if c.Status != grader.Pass || c.Score != 1 || !strings.Contains(c.Details, "the tests ran") || strings.Contains(c.Details, "entry cap") {
		t.Errorf("agent_judge: %s %v %q, want the judge's own verdict (PASS 1, 'the tests ran'), its directory never flooded", c.Status, c.Score, c.Details)
	}
}

// floodRefusingProvider is a model provider on loopback whose context the judge's flood
// overfills: it refuses, as Anthropic's API does ("prompt is too long", 400
// invalid_request_error), every request that carries the flood (its marker, in a tool result
// the judge's CLI sent however much of the output it kept: Claude Code keeps a preview of a
// long one, so a request's length alone says little here); the others are answered from a
// replay script.
type floodRefusingProvider struct {
	url     string
	marker  string
	mu      sync.Mutex
	refused int
}

func startFloodRefusingProvider(t *testing.T, key, marker, script string) *floodRefusingProvider {
	t.Helper()
	fx, err := transcript.ParseFixture(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	replay, err := gateway.New(gateway.Config{Mode: gateway.Replay, Key: key, Fixture: fx})
	if err != nil {
		t.Fatal(err)
	}
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	replay.Serve(rln)
	t.Cleanup(func() { replay.Close() })
	target, _ := url.Parse("http://" + rln.Addr().String())
	proxy := httputil.NewSingleHostReverseProxy(target)
	p := &floodRefusingProvider{marker: marker}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		over := bytes.Contains(body, []byte(p.marker))
		p.mu.Lock()
		if over {
			p.refused++
		}
		p.mu.Unlock()
		if over {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 212345 tokens > 200000 maximum"}}`)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	p.url = "http://" + ln.Addr().String()
	return p
}

// The agent under test floods its output (a log the rubric has the judge read); the judge
// agent, forwarding through ceval's gateway to a provider that refuses the now too long
// conversation with the provider's real error, never writes its verdict. The criterion FAILs
// and says the judge model refused the judge's calls, never a pass and never a silent 0.
func TestAgentJudgeWhoseModelRefusesAnOutputFloodFailsSayingSo(t *testing.T) {
	withAgentImage(t)
	key := "sk-provider-" + canary(t)
	p := startFloodRefusingProvider(t, key, "compiling module", "version: 1\napi: anthropic\nturns:\n"+
		"  - tool_calls: [{name: Bash, input: {command: \"cat /workspace/build.log\"}}]\n    usage: {input_tokens: 10, output_tokens: 5}\n"+
		"  - tool_calls: [{name: Write, input: {file_path: /workspace/"+VerdictFile+", content: '{\"score\": 1, \"reasons\": \"the log looks fine\"}'}}]\n    usage: {input_tokens: 20, output_tokens: 5}\n"+
		"  - text: Done.\n    usage: {input_tokens: 30, output_tokens: 2}\n")
	doc := agentTask("judge-output-flood", `i=0; while [ $i -lt 4000 ]; do echo "build step $i: compiling module $i of the project, all fine so far"; i=$((i+1)); done >build.log`,
		"  - {type: agent_judge, rubric: 'Read build.log; score 1 if the build succeeded.', judge_model: claude-sonnet-4-5, timeout: 3m}\n")
	env := map[string]string{"ANTHROPIC_API_KEY": key, "CEVAL_ANTHROPIC_BASE_URL": p.url}
	res, err := runTask(t, doc, nil, Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	refused := p.refused
	p.mu.Unlock()
	if refused == 0 {
		t.Fatalf("the provider refused nothing: the flood never reached the judge's conversation (status %s, %+v)", res.Status, res.Criteria)
	}
	c := res.Criteria[0]
	if c.Status != grader.Fail || c.Score != 0 || !strings.Contains(c.Details, "the judge model refused") {
		t.Errorf("agent_judge: %s %v %q, want FAIL saying the judge model refused its calls", c.Status, c.Score, c.Details)
	}
}

// The llm_judge side of the output flood: the agent floods the log the rubric names; the
// judge model (a loopback stub of the Messages API whose context is 48 KiB of request)
// refuses the request with Anthropic's real 400 "prompt is too long". The criterion FAILs,
// saying the workspace's files were more than the judge's model takes: never a pass, an
// ERROR or a silent 0. A short log is judged as usual (the stub scores it 1).
func TestLLMJudgeWhoseModelRefusesAnOutputFloodFailsSayingSo(t *testing.T) {
	var calls, refused atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if len(body) > 48<<10 {
			refused.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 212345 tokens > 200000 maximum"}}`)
			return
		}
		io.WriteString(w, `{"content":[{"type":"text","text":"{\"score\": 1, \"reasons\": \"the build log shows success\"}"}],"usage":{"input_tokens":500,"output_tokens":20}}`)
	}))
	defer srv.Close()
	j := judge.New(judge.Config{API: judge.Anthropic, Model: "judge-m", BaseURL: srv.URL, Key: "sk-judge-" + canary(t), Timeout: 10 * time.Second}, nil, nil)
	for _, tc := range []struct {
		name, lines string
		want        grader.Status
	}{
		{"a flood", "4000", grader.Fail},
		{"a short log", "20", grader.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := refused.Load()
			doc := agentTask("llm-judge-flood", `i=0; while [ $i -lt `+tc.lines+` ]; do echo "build step $i: compiling module $i of the project, all fine so far"; i=$((i+1)); done >build.log`,
				"  - {type: llm_judge, rubric: 'Score 1 if build.log shows the build succeeded.', files: [build.log], max_file_bytes: 262144}\n")
			res, err := runTask(t, doc, nil, Options{Judge: j})
			if err != nil {
				t.Fatal(err)
			}
			c := res.Criteria[0]
			if c.Status != tc.want {
				t.Fatalf("llm_judge: %s %v %q, want %s", c.Status, c.Score, c.Details, tc.want)
			}
			if tc.want == grader.Fail && (c.Score != 0 || refused.Load() == before || !strings.Contains(c.Details, "more than its model takes") || !strings.Contains(c.Details, "prompt is too long")) {
				t.Errorf("llm_judge over a flood: %s %v %q (refused %d), want FAIL saying the model refused the files as too long", c.Status, c.Score, c.Details, refused.Load()-before)
			}
		})
	}
}
