package supervisor

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
)

// apiService is a service serving svc/www over HTTP on 8080 (busybox httpd of the default
// image), ready once the port accepts.
const apiService = `services:
  - name: api
    command: [httpd, -f, -p, "8080", -h, /workspace/www]
    files: svc
    ports: [8080]
    ready: {tcp: 8080, interval: 50ms, retries: 200}
`

// serviceLog reads a service's log from a run directory.
func serviceLog(t *testing.T, res *record.Result, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(res.Dir, record.ServicesDir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// noLeftovers fails when a run left a container, task, snapshot or scratch mount behind.
func noLeftovers(t *testing.T, res *record.Result) {
	t.Helper()
	c, ctx := ctrtest.Connect(t)
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("left behind: %v", err)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), res.Dir) {
		t.Errorf("a scratch filesystem of the run is still mounted")
	}
	if _, err := os.Stat(filepath.Join(res.Dir, scratchSubdir+"-services")); err == nil {
		t.Errorf("the services' scratch directory is left in the run directory")
	}
}

// TestAgentSolvesATaskThroughAServicesHTTPAPI: the answer exists only in the service's
// files; the agent gets it by calling the service by name, so the run succeeds, and the
// service was ready before the agent started and stopped before grading.
func TestAgentSolvesATaskThroughAServicesHTTPAPI(t *testing.T) {
	token := canary(t)
	doc := agentTask("svc-api", "wget -qO- http://api:8080/answer.txt >out.txt",
		"  - {type: file_contains, path: out.txt, includes: ["+quote(token)+"]}\n", apiService)
	res, err := runTask(t, doc, map[string]string{"svc/www/answer.txt": token + "\n"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		t.Fatalf("status %s: %+v; agent stderr in %s", res.Status, res.Criteria, res.Dir)
	}
	if len(res.Services) != 1 {
		t.Fatalf("services %+v", res.Services)
	}
	s := res.Services[0]
	if !s.Ready || s.Address != "127.0.10.1" || !slices.Equal(s.Ports, []int{8080}) || s.ExitedEarly || s.Isolation == nil || s.Isolation.UID != 4000 {
		t.Errorf("service result %+v", s)
	}
	if s.Isolation != nil && res.Isolation != nil {
		a, b := res.Isolation.UIDMap[0], s.Isolation.UIDMap[0]
		if a.HostID < b.HostID+b.Size && b.HostID < a.HostID+a.Size {
			t.Errorf("the service's host IDs %+v overlap the agent's %+v", b, a)
		}
	}
	t.Logf("service ready after %.3fs (%d tries)", s.ReadySeconds, s.ReadyTries)
	ev := eventNames(t, res.Dir)
	if !isSubsequence(ev, []string{"service_ready", "agent_started", "service_stopped", "snapshot_taken", "graded"}) {
		t.Errorf("events %v: the service must be ready before the agent and stopped before the snapshot", ev)
	}
	if m := readResult(t, res); m["services"] == nil {
		t.Errorf("result.json lists no services")
	}
	noLeftovers(t, res)
}

// TestIdleAgentFailsBesideAService: the service alone solves nothing.
func TestIdleAgentFailsBesideAService(t *testing.T) {
	token := canary(t)
	doc := agentTask("svc-idle", "true", "  - {type: file_contains, path: out.txt, includes: ["+quote(token)+"]}\n", apiService)
	res, err := runTask(t, doc, map[string]string{"svc/www/answer.txt": token}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "FAILURE" {
		t.Fatalf("status %s, want FAILURE", res.Status)
	}
	noLeftovers(t, res)
}

// TestServiceNeverReadyIsErrorBeforeTheAgentWithItsLog: the run is ceval's ERROR (the
// agent is not to blame), the agent never started, the service's output is in its log and
// nothing is left in containerd.
func TestServiceNeverReadyIsErrorBeforeTheAgentWithItsLog(t *testing.T) {
	doc := agentTask("svc-never-ready", "touch agent-ran", "  - {type: file_exists, path: agent-ran}\n", `services:
  - name: db
    command: [sh, -c, "echo db is starting; echo no config >&2; sleep 600"]
    ports: [5432]
    ready: {tcp: 5432, interval: 50ms, timeout: 200ms, retries: 10}
`)
	res, err := runTask(t, doc, nil, Options{})
	var se *ServiceError
	var ie *InfraError
	if !errors.As(err, &se) || !errors.As(err, &ie) || se.Name != "db" {
		t.Fatalf("err %v (%T), want an InfraError holding db's ServiceError", err, err)
	}
	if !strings.Contains(err.Error(), "TCP port 5432 failed 10 tries") || !strings.Contains(err.Error(), "services/db.log") {
		t.Errorf("error %q does not say what failed and where its log is", err)
	}
	if res.Status != record.StatusError || res.Complete || res.Isolation != nil || res.Agent.ExitCode != nil {
		t.Fatalf("result %+v: want ERROR with no agent", res)
	}
	if ev := eventNames(t, res.Dir); slices.Contains(ev, "agent_started") || slices.Contains(ev, "attested") {
		t.Fatalf("events %v: the agent's container started", ev)
	}
	if log := serviceLog(t, res, "db"); !strings.Contains(log, "db is starting\n") || !strings.Contains(log, "no config\n") {
		t.Errorf("db.log = %q", log)
	}
	if s := res.Services; len(s) != 1 || s[0].Ready || s[0].ReadyTries != 10 {
		t.Errorf("services %+v", s)
	}
	noLeftovers(t, res)
}

// TestServiceExitingBeforeReadyIsErrorAtOnce: a service that dies is not waited for to the
// end of its retries.
func TestServiceExitingBeforeReadyIsErrorAtOnce(t *testing.T) {
	doc := agentTask("svc-dies", "true", "  - {type: file_exists, path: x}\n", `services:
  - name: db
    command: [sh, -c, "echo bad flag >&2; exit 3"]
    ready: {command: [sh, -c, "exit 1"], interval: 1s, retries: 1000}
`)
	res, err := runTask(t, doc, nil, Options{})
	var se *ServiceError
	if !errors.As(err, &se) || !strings.Contains(se.Why, "exited with status 3") {
		t.Fatalf("err %v, want db's exit", err)
	}
	if res.Timings.Total > 60 {
		t.Errorf("the run took %.0fs: the dead service was waited for", res.Timings.Total)
	}
	noLeftovers(t, res)
}

// TestServiceCrashingMidRunIsRecordedAndTheRunGraded: the service quits while the agent
// runs; the agent sees its port refused, the run is graded as usual, and result.json says
// the service exited early with its status.
func TestServiceCrashingMidRunIsRecordedAndTheRunGraded(t *testing.T) {
	doc := agentTask("svc-crash",
		"wget -qO- http://api:8080/a.txt >before.txt; sleep 4; wget -qO- -T 3 http://api:8080/a.txt >after.txt || echo down >after.txt",
		"  - {type: file_contains, path: before.txt, includes: [alive]}\n  - {type: file_contains, path: after.txt, includes: [down]}\n", `services:
  - name: api
    command: [sh, -c, "httpd -p 8080 -h /workspace/www; sleep 2; echo crashing; exit 7"]
    files: svc
    ports: [8080]
    ready: {command: [wget, -qO-, "http://127.0.0.1:8080/a.txt"], interval: 50ms, retries: 100}
`)
	res, err := runTask(t, doc, map[string]string{"svc/www/a.txt": "alive"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		t.Fatalf("status %s: %+v", res.Status, res.Criteria)
	}
	s := res.Services[0]
	if !s.ExitedEarly || s.ExitCode == nil || *s.ExitCode != 7 {
		t.Errorf("service result %+v: want exited early with 7", s)
	}
	if log := serviceLog(t, res, "api"); !strings.Contains(log, "crashing") {
		t.Errorf("api.log = %q", log)
	}
	noLeftovers(t, res)
}

// serviceAttack is an agent that attacks the service beside it and writes what it got to
// report.txt, then kills every process it can signal: the service's declared port works
// (declared.txt), and nothing else of the service is the agent's to reach.
const serviceAttack = `p="CEVAL""-CANARY-"; r=report.txt
timeout 5 wget -qO- http://api:8080/ok.txt >declared.txt 2>&1
for a in api 127.0.0.1 127.0.10.1; do
  if timeout 5 wget -qO- http://$a:9090/s.txt 2>/dev/null | grep -q "$p"; then echo "port9090 $a: GOT" >>$r; else echo "port9090 $a: none" >>$r; fi
done
for port in 22 80 5432 9090 8081; do nc -w 2 api $port </dev/null && echo "port $port: GOT" >>$r; done
nc -w 2 api 8080 </dev/null && echo "nc control: open" >>$r
s="workspace""/secret"
cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' >/tmp/proc.txt
if grep -q -e "$p" -e "$s" /tmp/proc.txt; then echo "proc: GOT" >>$r; else echo "proc: none" >>$r; fi
others=0; for d in /proc/[0-9]*; do u=$(awk '/^Uid:/{print $2}' $d/status 2>/dev/null); [ -n "$u" ] && [ "$u" != 2000 ] && others=$((others+1)); done
echo "other users' processes: $others" >>$r
if find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f -print 2>/dev/null | xargs grep -ls "$p" 2>/dev/null | grep -q .; then echo "files: GOT" >>$r; else echo "files: none" >>$r; fi
echo signals >>$r
kill -9 -1
`

// TestAgentAttackingAServiceGetsNothing: the agent can reach the service's declared port
// and nothing else of it: not an undeclared port (by its name, the service's address or
// its own loopback), not its processes' environment or command lines in /proc, not its
// files, and its kill -9 -1 leaves the service running.
func TestAgentAttackingAServiceGetsNothing(t *testing.T) {
	secret := canary(t)
	doc := agentTask("svc-attack", serviceAttack,
		"  - {type: file_contains, path: declared.txt, includes: [served]}\n"+
			"  - type: file_contains\n    path: report.txt\n    includes: [\"nc control: open\", \"port9090 api: none\", \"port9090 127.0.0.1: none\", \"port9090 127.0.10.1: none\", \"proc: none\", \"other users' processes: 0\", \"files: none\", signals]\n    excludes: [GOT]\n",
		`services:
  - name: api
    command: [sh, -c, "httpd -p 9090 -h /workspace/secret && exec httpd -f -p 8080 -h /workspace/www"]
    env: {SERVICE_SECRET: `+quote(secret)+`}
    files: svc
    ports: [8080]
    ready: {tcp: 8080, interval: 50ms, retries: 200}
`)
	res, err := runTask(t, doc, map[string]string{"svc/www/ok.txt": "served", "svc/secret/s.txt": secret}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		report, _ := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, "report.txt"))
		declared, _ := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, "declared.txt"))
		t.Fatalf("status %s: the agent got something of the service:\n%s\ndeclared port: %q\n%+v", res.Status, report, declared, res.Criteria)
	}
	if s := res.Services[0]; s.ExitedEarly {
		t.Errorf("the agent's kill -9 -1 ended the service: %+v", s)
	}
	noLeftovers(t, res)
}

// TestServiceServesEveryIterationOfTheAgent: the service runs across the agent's
// iterations, each a fresh container whose network namespace gets the relay anew; the
// second iteration fetches what the first did not.
func TestServiceServesEveryIterationOfTheAgent(t *testing.T) {
	token := canary(t)
	doc := agentTask("svc-iterations", `[ "$CEVAL_ITERATION" = 2 ] && wget -qO- http://api:8080/answer.txt >out.txt; wget -qO- http://api:8080/answer.txt >>seen.txt`,
		"  - {type: file_contains, path: out.txt, includes: ["+quote(token)+"]}\n", apiService, "iterations: {max: 2}\n")
	res, err := runTask(t, doc, map[string]string{"svc/www/answer.txt": token + "\n"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" || res.IterationsUsed != 2 {
		t.Fatalf("status %s after %d iterations: %+v", res.Status, res.IterationsUsed, res.Criteria)
	}
	if s := res.Services[0]; s.ExitedEarly || !s.Ready {
		t.Errorf("service %+v", s)
	}
	noLeftovers(t, res)
}

// kvService keeps what is stored over HTTP (busybox httpd's CGI): /cgi-bin/set?V stores V,
// /cgi-bin/get answers it.
const kvService = `services:
  - name: kv
    command: [sh, -c, "mkdir -p /workspace/www/cgi-bin && cd /workspace/www/cgi-bin && printf '#!/bin/sh\\necho \"$QUERY_STRING\" >/workspace/state\\nprintf \"Content-Type: text/plain\\\\r\\\\n\\\\r\\\\nstored\\\\n\"\\n' >set && printf '#!/bin/sh\\nprintf \"Content-Type: text/plain\\\\r\\\\n\\\\r\\\\n\"\\ncat /workspace/state\\n' >get && chmod 755 set get && exec httpd -f -p 8080 -h /workspace/www"]
    ports: [8080]
    ready: {tcp: 8080, interval: 50ms, retries: 200}
`

// TestStepsReachTheServicesAsTheAgentDoes: a setup step seeds the service, the agent reads
// what it stored, and an after_agent step reads it too (the service stops only after it).
func TestStepsReachTheServicesAsTheAgentDoes(t *testing.T) {
	doc := agentTask("svc-steps", "wget -qO- http://kv:8080/cgi-bin/get >out.txt",
		"  - {type: file_contains, path: out.txt, includes: [seeded-7]}\n  - {type: file_contains, path: after.txt, includes: [seeded-7]}\n",
		kvService, "setup:\n  - wget -qO- http://kv:8080/cgi-bin/set?seeded-7\nafter_agent:\n  - wget -qO- http://kv:8080/cgi-bin/get >after.txt\n")
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		t.Fatalf("status %s: %+v; steps %+v", res.Status, res.Criteria, res.Steps)
	}
	ev := eventNames(t, res.Dir)
	if !isSubsequence(ev, []string{"service_ready", "step_finished", "agent_started", "step_finished", "service_stopped", "snapshot_taken"}) {
		t.Errorf("events %v", ev)
	}
	noLeftovers(t, res)
}

// TestServiceReachesNothingOfTheAgents: the other way round, a service finds nothing of the
// agent's while it runs: not a port the agent listens on (its own loopback is not the
// agent's), not the agent's files, not its processes. The probes' results are in its log.
func TestServiceReachesNothingOfTheAgents(t *testing.T) {
	secret := canary(t)
	// The agent's own fetch of its port is the control: the probe works where it can reach.
	agent := "echo " + secret + " >secret.txt; echo " + secret + " >/tmp/secret.txt; httpd -p 9999 -h /workspace; sleep 0.3; " +
		"timeout 2 wget -qO- http://127.0.0.1:9999/secret.txt >control.txt; sleep 8"
	probe := `p="CEVAL""-CANARY-"; httpd -p 8080; sleep 1; for i in 1 2 3 4 5 6; do
  timeout 2 wget -qO- http://127.0.0.1:9999/secret.txt 2>/dev/null | grep -q "$p" && echo GOT-PORT
  cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' >/tmp/proc.txt; grep -q "$p" /tmp/proc.txt && echo GOT-PROC
  find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f -print 2>/dev/null | xargs grep -ls "$p" 2>/dev/null | grep -q . && echo GOT-FILES
  sleep 0.5
done; echo probes-done; sleep 600`
	doc := agentTask("svc-probes", agent, "  - {type: file_contains, path: control.txt, includes: ["+quote(secret)+"]}\n",
		"services:\n  - name: probe\n    command: [sh, -c, "+quote(probe)+"]\n    ports: [8080]\n    ready: {tcp: 8080, interval: 50ms, retries: 200}\n")
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		t.Fatalf("the agent's control fetch of its own port failed: %+v", res.Criteria)
	}
	log := serviceLog(t, res, "probe")
	if !strings.Contains(log, "probes-done") || strings.Contains(log, "GOT") {
		t.Fatalf("the service's probes (want probes-done and no GOT):\n%s", log)
	}
	noLeftovers(t, res)
}

// TestServiceReachesTheServicesItDependsOn: api depends on kv and answers from it (its CGI
// asks kv by name), so the agent gets kv's value through api; a service it does not depend
// on stays out of its reach.
func TestServiceReachesTheServicesItDependsOn(t *testing.T) {
	doc := agentTask("svc-depends", "wget -qO- http://api:8081/cgi-bin/get >out.txt; wget -qO- http://api:8081/cgi-bin/other >other.txt",
		"  - {type: file_contains, path: out.txt, includes: [seeded-9]}\n  - {type: file_contains, path: other.txt, includes: [unreachable], excludes: [other-secret]}\n",
		`services:
  - name: kv
    command: [sh, -c, "mkdir -p /workspace/www/cgi-bin && echo seeded-9 >/workspace/state && cd /workspace/www/cgi-bin && printf '#!/bin/sh\nprintf \"Content-Type: text/plain\\\\r\\\\n\\\\r\\\\n\"\ncat /workspace/state\n' >get && chmod 755 get && exec httpd -f -p 8080 -h /workspace/www"]
    ports: [8080]
    ready: {tcp: 8080, interval: 50ms, retries: 200}
  - name: other
    command: [sh, -c, "mkdir -p /tmp/www && echo other-secret >/tmp/www/s.txt && exec httpd -f -p 8082 -h /tmp/www"]
    ports: [8082]
    ready: {tcp: 8082, interval: 50ms, retries: 200}
  - name: api
    depends_on: [kv]
    command: [sh, -c, "mkdir -p /workspace/www/cgi-bin && cd /workspace/www/cgi-bin && printf '#!/bin/sh\nprintf \"Content-Type: text/plain\\\\r\\\\n\\\\r\\\\n\"\nwget -qO- http://kv:8080/cgi-bin/get\n' >get && printf '#!/bin/sh\nprintf \"Content-Type: text/plain\\\\r\\\\n\\\\r\\\\n\"\ntimeout 3 wget -qO- http://other:8082/s.txt || echo unreachable\n' >other && chmod 755 get other && exec httpd -f -p 8081 -h /workspace/www"]
    ports: [8081]
    ready: {tcp: 8081, interval: 50ms, retries: 200}
`)
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		t.Fatalf("status %s: %+v\napi.log: %s", res.Status, res.Criteria, serviceLog(t, res, "api"))
	}
	noLeftovers(t, res)
}

// TestAgentListensOnAServicesPortNumberBesideIt: the agent runs its own server on a
// wildcard address at the port number the service declares, and still reaches the service
// at api:8080 (ceval's relay listens elsewhere; the namespace redirects to it).
func TestAgentListensOnAServicesPortNumberBesideIt(t *testing.T) {
	token := canary(t)
	doc := agentTask("svc-same-port", "mkdir www && echo own >www/own.txt && httpd -p 8080 -h www && wget -qO- http://127.0.0.1:8080/own.txt >own.txt && wget -qO- http://api:8080/answer.txt >out.txt",
		"  - {type: file_contains, path: out.txt, includes: ["+quote(token)+"]}\n  - {type: file_contains, path: own.txt, includes: [own]}\n", apiService)
	res, err := runTask(t, doc, map[string]string{"svc/www/answer.txt": token + "\n"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		t.Fatalf("status %s: %+v", res.Status, res.Criteria)
	}
	noLeftovers(t, res)
}
