package supervisor

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/task"
)

// floodAgent floods its own gateway from inside the container for 15s: connections held
// open far beyond the gateway's cap, bodies over the 16 MiB cap, a body of millions of tiny
// JSON values just under it; then it stops the flood and makes one normal call.
const floodAgent = `cd /tmp
printf '%s' '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' > req.json
head -c 20000000 /dev/zero | tr '\0' A > huge
{ printf '{"model":"m","messages":['; yes 0, | tr -d '\n' | head -c 15000000; printf '0]}'; } > bomb
echo "start=$(date +%s)" >> /workspace/out.txt
post() { timeout 20 wget -q -O "$2" --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file "$1" "$CEVAL_GATEWAY_URL/v1/messages"; }
for i in $(seq 20); do ( while [ ! -e stop ]; do sleep 11 | nc 127.0.0.1 80 >/dev/null 2>&1; done ) & done
for i in $(seq 3); do ( while [ ! -e stop ]; do post huge /dev/null 2>/dev/null; done ) & done
for i in $(seq 2); do ( while [ ! -e stop ]; do post bomb /dev/null 2>/dev/null; done ) & done
sleep 15
touch stop
echo "end=$(date +%s)" >> /workspace/out.txt
wait
post req.json /workspace/own.txt && echo own=ok >> /workspace/out.txt
true`

// calmAgent makes 20 normal calls, each within 5s, while the other run floods its gateway.
const calmAgent = `sleep 4
printf '%s' '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' > /tmp/req.json
echo "first=$(date +%s)" >> /workspace/out.txt
ok=0
for i in $(seq 20); do
  timeout 5 wget -q -O /tmp/ans --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages" 2>>/workspace/err.txt && grep -q replayed-answer /tmp/ans && ok=$((ok+1))
  sleep 0.2
done
echo "last=$(date +%s)" >> /workspace/out.txt
echo "calls=20 ok=$ok" >> /workspace/out.txt`

func TestAgentFloodingItsGatewayDoesNotStallAnotherRun(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	fixture := `{"api":"anthropic","depth":0,"tools":false,"status":200,"content_type":"application/json","response":"{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"replayed-answer\"}],\"usage\":{\"input_tokens\":11,\"output_tokens\":5}}"}` + "\n"
	load := func(id, script, criteria string) *task.Task {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "calls.jsonl"), []byte(fixture), 0o644); err != nil {
			t.Fatal(err)
		}
		doc := agentTask(id, script, criteria)
		doc = strings.Replace(doc, "  type: command\n", "  type: command\n  gateway: {mode: replay, fixture: calls.jsonl}\n", 1)
		doc = strings.Replace(doc, "pids: 128", "pids: 200", 1)
		p := filepath.Join(dir, "task.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		tk, err := task.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	flooder := load("gw-flooder", floodAgent, "  - {type: file_contains, path: out.txt, includes: [own=ok]}\n")
	calm := load("gw-calm", calmAgent, "  - {type: file_contains, path: out.txt, includes: [calls=20 ok=20]}\n")
	g0 := runtime.NumGoroutine()

	var wg sync.WaitGroup
	results := make([]*Result, 2)
	errs := make([]error, 2)
	for i, tk := range []*task.Task{flooder, calm} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				time.Sleep(time.Second) // the flooder's container first
			}
			results[i], errs[i] = runLoaded(t, ctx, c, tk, Options{LookupEnv: func(string) (string, bool) { return "", false }})
		}()
	}
	wg.Wait()
	for i, name := range []string{"flooder", "calm"} {
		if errs[i] != nil {
			t.Fatalf("%s: %v", name, errs[i])
		}
	}
	out := func(r *Result) (string, map[string]int64) {
		data, _ := os.ReadFile(filepath.Join(r.Dir, WorkspaceDir, "out.txt"))
		stamps := map[string]int64{}
		for _, l := range strings.Fields(string(data)) {
			if k, v, ok := strings.Cut(l, "="); ok {
				stamps[k], _ = strconv.ParseInt(v, 10, 64)
			}
		}
		return string(data), stamps
	}
	fOut, f := out(results[0])
	cOut, cs := out(results[1])
	t.Logf("flooder: %s %+v\ncalm: %s %+v", fOut, results[0].Gateway, cOut, results[1].Gateway)
	if results[1].Status != "SUCCESS" {
		t.Fatalf("the calm run is %s while the other flooded its gateway: %s", results[1].Status, cOut)
	}
	if results[0].Status != "SUCCESS" {
		t.Fatalf("the flooder's own call after its flood failed (%s): %s", results[0].Status, fOut)
	}
	// The calm run's calls all fell inside the flood.
	if !(f["start"] <= cs["first"] && cs["last"] <= f["end"]) {
		t.Fatalf("the calm run's calls (%d..%d) were not made during the flood (%d..%d)", cs["first"], cs["last"], f["start"], f["end"])
	}
	if g := results[1].Gateway; g == nil || g.Turns != 20 {
		t.Errorf("calm gateway %+v", g)
	}
	if g := results[0].Gateway; g == nil || g.Refused == 0 || g.Turns != 1 {
		t.Errorf("flooder gateway %+v: its huge bodies were not refused", g)
	}
	calls, _ := os.ReadFile(filepath.Join(results[0].Dir, ModelCallsFile))
	for _, want := range []string{"request body over", "JSON values"} {
		if !strings.Contains(string(calls), want) {
			t.Errorf("the flooder's transcript has no refusal with %q:\n%.2000s", want, calls)
		}
	}
	// Nothing of either run is left in containerd (ctrtest checks at cleanup) nor in this
	// process: the gateways' goroutines are gone.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > g0+5 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after both runs (%d before):\n%s", runtime.NumGoroutine(), g0, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
