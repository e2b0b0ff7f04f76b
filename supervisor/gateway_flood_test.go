package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// floodAgent floods its own gateway from inside the container until the test tells it to
// stop (/workspace/stop; at most 3 minutes): connections held open far beyond the gateway's
// cap, connections that send a request's headers and then hold its body back, bodies over
// the 16 MiB cap, a body of millions of tiny JSON values just under it. A held-back body
// keeps a handler for 20s: were the gateway to serve runs one at a time, the other run would
// wait up to that long. Then it makes one normal call. (busybox wget -T crashes here: the
// timeouts are timeout(1)'s.)
const floodAgent = `cd /tmp
printf '%s' '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' > req.json
head -c 20000000 /dev/zero | tr '\0' A > huge
{ printf '{"model":"m","messages":['; yes 0, | tr -d '\n' | head -c 15000000; printf '0]}'; } > bomb
post() { timeout 20 wget -q -O "$2" --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file "$1" "$CEVAL_GATEWAY_URL/v1/messages"; }
hold() { i=0; while [ ! -e /workspace/stop ] && [ $i -lt 20 ]; do sleep 1; i=$((i+1)); done; }
for i in $(seq 10); do ( while [ ! -e /workspace/stop ]; do sleep 11 | timeout 12 nc 127.0.0.1 80 >/dev/null 2>&1; done ) & done
for i in $(seq 10); do ( while [ ! -e /workspace/stop ]; do { printf 'POST /v1/messages HTTP/1.1\r\nHost: gw\r\nx-api-key: %s\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{' "$CEVAL_GATEWAY_KEY"; hold; } | timeout 21 nc 127.0.0.1 80 >/dev/null 2>&1; done ) & done
for i in $(seq 3); do ( while [ ! -e /workspace/stop ]; do post huge /dev/null 2>/dev/null; done ) & done
for i in $(seq 2); do ( while [ ! -e /workspace/stop ]; do post bomb /dev/null 2>/dev/null; done ) & done
sleep 3
touch /workspace/flooding
i=0; while [ ! -e /workspace/stop ] && [ $i -lt 900 ]; do sleep 0.2; i=$((i+1)); done
[ -e /workspace/stop ] && echo stopped=test >> /workspace/out.txt
touch /workspace/stop
wait
post req.json /workspace/own.txt && echo own=ok >> /workspace/out.txt
true`

// calmAgent waits until the test says the other run floods its gateway (/workspace/go; at
// most 3 minutes), then makes 20 normal calls, each given 10s, and records when each began
// and ended (uptime in centiseconds).
const calmAgent = `printf '%s' '{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}' > /tmp/req.json
touch /workspace/ready
i=0; while [ ! -e /workspace/go ] && [ $i -lt 900 ]; do sleep 0.2; i=$((i+1)); done
ok=0
for i in $(seq 20); do
  read t0 _ < /proc/uptime
  timeout 10 wget -q -O /tmp/ans --header "x-api-key: $CEVAL_GATEWAY_KEY" --header "content-type: application/json" --post-file /tmp/req.json "$CEVAL_GATEWAY_URL/v1/messages" 2>>/workspace/err.txt && grep -q replayed-answer /tmp/ans && ok=$((ok+1))
  read t1 _ < /proc/uptime
  echo "$t0 $t1" | tr -d . >> /workspace/calls.txt
  sleep 0.2
done
echo "calls=20 ok=$ok" >> /workspace/out.txt`

// callBound is how long one calm call may take while the other run floods its gateway (the
// calm agent's timeout 10):
// generous for a loaded 2-core host, far below what serving the runs one at a time costs
// (the flooder's held-back bodies keep a handler for 20s each).
const callBound = 10 * time.Second

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
		doc = strings.Replace(doc, "timeout: 60s", "timeout: 300s", 1) // each agent waits at most 3 minutes for the other
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

	// Each run's scratch workspace, once its agent runs: the test tells the calm agent to
	// start calling once the flood is on, and the flooder to stop once the calm agent is done.
	workspaces := [2]chan string{make(chan string, 1), make(chan string, 1)}
	runDone := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var wg sync.WaitGroup
	results := make([]*record.Result, 2)
	errs := make([]error, 2)
	for i, tk := range []*task.Task{flooder, calm} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(runDone[i])
			var ws string
			progress := func(ev string, f map[string]any) {
				switch ev {
				case "run_started":
					ws = filepath.Join(f["run_dir"].(string), scratchSubdir, "workspace")
				case "agent_started":
					workspaces[i] <- ws
				}
			}
			results[i], errs[i] = runLoaded(t, ctx, c, tk, Options{Progress: progress, LookupEnv: func(string) (string, bool) { return "", false }})
		}()
	}
	coordinated := make(chan string, 1)
	go func() {
		coordinated <- coordinate(<-workspaces[0], <-workspaces[1], runDone[1])
	}()
	wg.Wait()
	for i, name := range []string{"flooder", "calm"} {
		if errs[i] != nil {
			t.Fatalf("%s: %v", name, errs[i])
		}
	}
	read := func(r *record.Result, name string) string {
		data, _ := os.ReadFile(filepath.Join(r.Dir, record.WorkspaceDir, name))
		return string(data)
	}
	if why := <-coordinated; why != "" {
		t.Fatalf("%s; the calm agent's calls (uptime cs, begin end): %q; wget said: %q", why, read(results[1], "calls.txt"), read(results[1], "err.txt"))
	}
	fOut, cOut := read(results[0], "out.txt"), read(results[1], "out.txt")
	var slowest time.Duration
	var durations []string
	for _, l := range strings.Split(strings.TrimSpace(read(results[1], "calls.txt")), "\n") {
		var t0, t1 int64
		if _, err := fmt.Sscan(l, &t0, &t1); err == nil {
			d := time.Duration(t1-t0) * 10 * time.Millisecond
			slowest = max(slowest, d)
			durations = append(durations, d.String())
		}
	}
	t.Logf("flooder: %s %+v\ncalm: %s %+v\ncalm calls took %v (slowest %v)", fOut, results[0].Gateway, cOut, results[1].Gateway, durations, slowest)
	if results[1].Status != "SUCCESS" || len(durations) != 20 {
		t.Fatalf("the calm run is %s while the other flooded its gateway (each call may take %v): %s\ncalls took %v; wget said: %s",
			results[1].Status, callBound, cOut, durations, read(results[1], "err.txt"))
	}
	if !strings.Contains(fOut, "stopped=test") {
		t.Fatalf("the flood ended before the calm run's calls did: %s", fOut)
	}
	if results[0].Status != "SUCCESS" {
		t.Fatalf("the flooder's own call after its flood failed (%s): %s", results[0].Status, fOut)
	}
	if g := results[1].Gateway; g == nil || g.Turns != 20 {
		t.Errorf("calm gateway %+v", g)
	}
	if g := results[0].Gateway; g == nil || g.Refused == 0 || g.Turns != 1 {
		t.Errorf("flooder gateway %+v: its huge bodies were not refused", g)
	}
	calls, _ := os.ReadFile(filepath.Join(results[0].Dir, record.ModelCallsFile))
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

// coordinate runs the flood test's two agents through their scratch workspaces: once the
// flooder floods and the calm agent is ready, the calm agent may call; once it is done, the
// flooder may stop. It returns what went wrong ("" when nothing did); either way both
// agents are released, so both runs end.
func coordinate(floodWS, calmWS string, calmDone <-chan struct{}) string {
	defer os.WriteFile(filepath.Join(floodWS, "stop"), nil, 0o644)
	defer os.WriteFile(filepath.Join(calmWS, "go"), nil, 0o644)
	wait := func(what string, limit time.Duration, done func() bool) string {
		for deadline := time.Now().Add(limit); !done(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				return fmt.Sprintf("%s did not happen within %v", what, limit)
			}
		}
		return ""
	}
	exists := func(p string) func() bool {
		return func() bool { _, err := os.Stat(p); return err == nil }
	}
	if why := wait("the flood", 2*time.Minute, exists(filepath.Join(floodWS, "flooding"))); why != "" {
		return why
	}
	if why := wait("the calm agent's start", 2*time.Minute, exists(filepath.Join(calmWS, "ready"))); why != "" {
		return why
	}
	if err := os.WriteFile(filepath.Join(calmWS, "go"), nil, 0o644); err != nil {
		return err.Error()
	}
	// Each call may take callBound before the agent's own timeout ends it: wait for all 20
	// at their slowest, so that slow calls are judged call by call below (with their
	// durations), not cut off here as a bare timeout.
	// The calm run may end (its scratch workspace snapshotted and unmounted) between two
	// looks: its end ends the wait too, and its snapshot is judged after.
	return wait("the calm agent's 20 calls", 20*(callBound+time.Second)+time.Minute, func() bool {
		select {
		case <-calmDone:
			return true
		default:
		}
		data, _ := os.ReadFile(filepath.Join(calmWS, "out.txt"))
		return strings.Contains(string(data), "calls=20")
	})
}
