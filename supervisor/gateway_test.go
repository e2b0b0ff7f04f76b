package supervisor

import (
	"ceval.dev/ceval/atif"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/gateway/transcript"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// gatewayAgent posts one Messages request with tools to the gateway with the run's key and
// saves the answer in out.txt; then it looks for credentials everywhere it can read.
const gatewayAgent = `printf '%s' '{"model":"any","max_tokens":64000,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash","input_schema":{}},{"type":"web_search_20250305","name":"web_search"}]}' > /tmp/req.json
wget -q -O /workspace/out.txt --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages?beta=true"
echo "exit=$?" >> /workspace/out.txt
{ env; cat /proc/*/environ; cat /proc/*/cmdline; grep -rs . /home/agent /tmp /workspace; } > /workspace/loot.txt 2>&1
timeout 2 wget -q -O - "$UPSTREAM/v1/messages" 2>/dev/null | grep -q answer && echo DIRECT-REACHED >> /workspace/out.txt
true`

func TestAgentReachesReplayGatewayWithNoNetwork(t *testing.T) {
	fixture := `{"api":"anthropic","depth":0,"tools":true,"status":200,"content_type":"application/json","response":"{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"replayed-answer\"}],\"usage\":{\"input_tokens\":11,\"output_tokens\":5}}"}` + "\n"
	doc := agentTask("gw-replay", gatewayAgent,
		"  - {type: file_contains, path: out.txt, includes: [replayed-answer, exit=0], excludes: [DIRECT-REACHED]}\n")
	doc = strings.Replace(doc, "  type: command\n", "  type: command\n  model: claude-pinned\n  gateway: {mode: replay, fixture: calls.jsonl}\n", 1)
	res, err := runTask(t, doc, map[string]string{"calls.jsonl": fixture}, Options{
		LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		out, _ := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, "out.txt"))
		t.Fatalf("status %s: %s", res.Status, out)
	}
	g := res.Gateway
	if g == nil || g.Mode != "replay" || g.Turns != 1 || g.InputTokens != 11 || g.OutputTokens != 5 || g.StrippedTools != 1 {
		t.Fatalf("gateway result %+v", g)
	}
	calls, _ := os.ReadFile(filepath.Join(res.Dir, record.ModelCallsFile))
	var c transcript.Call
	if err := json.Unmarshal(calls, &c); err != nil || !c.Replayed || c.Model != "claude-pinned" || c.Usage == nil {
		t.Fatalf("transcript %s (%v)", calls, err)
	}
	// The run's trajectory (Harbor's ATIF), written beside result.json.
	data, err := os.ReadFile(filepath.Join(res.Dir, atif.File))
	if err != nil {
		t.Fatalf("no %s in the run directory: %v", atif.File, err)
	}
	var tr atif.Trajectory
	if err := json.Unmarshal(data, &tr); err != nil || atif.Check(&tr) != nil || tr.SchemaVersion != atif.SchemaVersion {
		t.Fatalf("%s: %v %v\n%s", atif.File, err, atif.Check(&tr), data)
	}
	if !strings.Contains(string(data), "replayed-answer") {
		t.Errorf("%s lacks the model's answer:\n%s", atif.File, data)
	}
}

func TestRealKeyNeverReachesTheAgentButReachesTheProvider(t *testing.T) {
	secret := "sk-ant-api03-" + canary(t)
	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"message","content":[{"type":"text","text":"forwarded-answer"}],"usage":{"input_tokens":30,"cache_read_input_tokens":4,"output_tokens":9}}`)
	}))
	defer up.Close()
	env := map[string]string{"ANTHROPIC_API_KEY": secret, "OPENAI_API_KEY": secret + "-openai", "CEVAL_ANTHROPIC_BASE_URL": up.URL}
	script := strings.Replace(gatewayAgent, "$UPSTREAM", up.URL, 1)
	doc := agentTask("gw-forward", script,
		"  - {type: file_contains, path: out.txt, includes: [forwarded-answer, exit=0], excludes: [DIRECT-REACHED]}\n"+
			"  - {type: file_contains, path: loot.txt, includes: [CEVAL_GATEWAY_KEY=ceval-run-], excludes: [\""+secret+"\", sk-ant-api03]}\n")
	doc = strings.Replace(doc, "  type: command\n", "  type: command\n  gateway: {mode: record}\n", 1)
	res, err := runTask(t, doc, nil, Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		out, _ := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, "out.txt"))
		t.Fatalf("status %s %+v: %s", res.Status, res.Criteria, out)
	}
	mu.Lock()
	if len(got) != 1 || got[0] != secret {
		t.Fatalf("the provider got keys %q", got)
	}
	mu.Unlock()
	if g := res.Gateway; g.Turns != 1 || g.InputTokens != 34 || g.CachedInputTokens != 4 || g.OutputTokens != 9 {
		t.Fatalf("gateway result %+v", g)
	}
	// Nothing ceval wrote, and nothing the agent could leave, holds the key.
	err = filepath.Walk(res.Dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), secret) || strings.Contains(string(data), "sk-ant-api03") {
			t.Errorf("%s holds the real key", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(filepath.Join(res.Dir, record.ModelCallsFile))
	if !strings.Contains(string(calls), "forwarded-answer") {
		t.Errorf("record transcript lacks the response: %s", calls)
	}
}

func TestGatewayRefusesHostNetworkAndPassedCredential(t *testing.T) {
	tk := &task.Task{ID: "t", Agent: &task.Agent{Type: task.AgentClaudeCode, Gateway: &task.Gateway{Mode: task.GatewayForward},
		EnvPassthrough: []string{"ANTHROPIC_API_KEY"}}}
	if _, _, err := AgentEnv(tk, Allow{Env: []string{"ANTHROPIC_API_KEY"}}, func(string) (string, bool) { return "sk-x-1234", true }); err == nil ||
		!strings.Contains(err.Error(), "model gateway") {
		t.Fatalf("passing the real key through was not refused: %v", err)
	}
	tk.Sandbox.Network = policy.NetworkHost
	if _, err := startGateway(tk, t.TempDir(), func(string) (string, bool) { return "", false }, nil, nil); err == nil {
		t.Fatal("a gateway with host networking was accepted")
	}
}

// A provider that cannot be reached is ceval's problem, not the agent's: after the bounded
// retries the run is ERROR, never FAILURE, and says why.
func TestUnreachableProviderIsAnErrorNotTheAgentsFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more: every attempt is refused
	script := `printf '%s' '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' > /tmp/req.json
timeout 30 wget -q -O /workspace/out.txt --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages"
echo "exit=$?" >> /workspace/status.txt`
	doc := agentTask("gw-unreachable", script, "  - {type: file_exists, path: status.txt}\n")
	doc = strings.Replace(doc, "  type: command\n", "  type: command\n  gateway: {mode: forward}\n", 1)
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-api03-unreachable-0123456789", "CEVAL_ANTHROPIC_BASE_URL": dead}
	res, err := runTask(t, doc, nil, Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	var ie *InfraError
	if !errors.As(err, &ie) || res.Status != record.StatusError || !strings.Contains(res.Error, "provider was down") {
		t.Fatalf("err %v, status %s, error %q; want an infrastructure ERROR naming the provider down", err, res.Status, res.Error)
	}
	if res.Gateway == nil || res.Gateway.UpstreamFailures != 1 || res.Gateway.ProviderDown != 1 {
		t.Fatalf("gateway %+v", res.Gateway)
	}
	calls := readCalls(t, filepath.Join(res.Dir, record.ModelCallsFile))
	if len(calls) != 1 || calls[0].Attempts != 1+gateway.DefaultRetries {
		t.Fatalf("transcript %+v: want one call with %d attempts", calls, 1+gateway.DefaultRetries)
	}
}
