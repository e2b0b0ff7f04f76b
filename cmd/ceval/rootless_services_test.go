package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/record"
)

// rootlessRunArgs is rootlessRun with more of ceval run's flags.
func rootlessRunArgs(t *testing.T, env []string, taskPath string, args ...string) (*record.Result, string) {
	t.Helper()
	runs := t.TempDir()
	r := rootlessCeval(t, env, append(append([]string{"run", "--allow-rlimit-limits", "--runs-dir", runs}, args...), taskPath)...)
	if r.code != 0 && r.code != 1 {
		t.Fatalf("ceval run exit %d, want a graded run\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	m, _ := filepath.Glob(filepath.Join(runs, "*", "*", "*", "*", record.ResultFile))
	if len(m) != 1 {
		t.Fatalf("want one result.json under %s, found %v\n%s", runs, m, r.stderr)
	}
	data, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	var res record.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	return &res, filepath.Dir(m[0])
}

// TestRootlessRunReachesItsServicesThroughTheRelayOnly: under a rootless daemon a task's
// service runs hardened like the agent, as UID 4000 in a per-run slice of the user's
// subordinate range apart from the agent's, and the agent reaches its declared port
// through ceval's relay (SUCCESS) but not an undeclared one; a service with network: host
// (run with --allow-host-network) reaches a server on the daemon's loopback, which the agent
// itself cannot.
func TestRootlessRunReachesItsServicesThroughTheRelayOnly(t *testing.T) {
	env, delegated := rootlessEnv(t)
	t.Run("relay", func(t *testing.T) {
		p := rootlessTask(t, "rl-service", `wget -qO- http://api:8080/answer.txt > /workspace/out.txt
if timeout 3 wget -qO- http://api:8081/answer.txt > /workspace/undeclared.txt 2>/dev/null; then echo reached > /workspace/undeclared-reached; fi
touch /workspace/done`, "timeout: 60s, memory_mb: 128, pids: 32, disk_mb: 16",
			"services:\n  - name: api\n    command: [sh, -c, 'httpd -p 8081 -h /workspace/www; exec httpd -f -p 8080 -h /workspace/www']\n    files: svc\n    ports: [8080]\n"+
				"    limits: {memory_mb: 128}\n    ready: {tcp: 8080, interval: 50ms, retries: 400}\n"+
				"success_criteria:\n  - {type: file_contains, path: out.txt, includes: [rootless-service-answer], description: the agent got the service's answer}\n"+
				"  - {type: file_exists, path: undeclared-reached, description: the agent reached an undeclared port, weight: 0}\n")
		if err := os.MkdirAll(filepath.Join(filepath.Dir(p), "svc", "www"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(p), "svc", "www", "answer.txt"), []byte("rootless-service-answer\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, _ := rootlessRunArgs(t, env, p)
		if len(res.Criteria) != 2 || !res.Criteria[0].Passed {
			t.Fatalf("status %s %s %+v", res.Status, res.Error, res.Criteria)
		}
		if res.Criteria[1].Passed {
			t.Fatalf("the agent reached the service's undeclared port 8081")
		}
		if len(res.Services) != 1 || !res.Services[0].Ready || res.Services[0].Isolation == nil {
			t.Fatalf("services %+v", res.Services)
		}
		a, s := res.Isolation, res.Services[0].Isolation
		if s.UID != 4000 || s.CapEff != "0000000000000000" || s.NoNewPrivs != 1 || s.Seccomp != 2 || len(s.Interfaces) != 1 || s.Interfaces[0] != "lo" {
			t.Fatalf("the service's attestation %+v", s)
		}
		wantHostIDsInSubordinateRange(t, s)
		wantLimitsBy(t, &record.Result{Isolation: s}, delegated)
		if x, y := a.UIDMap[0], s.UIDMap[0]; x.HostID < y.HostID+y.Size && y.HostID < x.HostID+x.Size {
			t.Fatalf("the service's host IDs %+v overlap the agent's %+v", y, x)
		}
	})
	t.Run("host network", func(t *testing.T) {
		// The daemon keeps the network namespace it was started in (rootlesskit --net=host):
		// this test's, whose loopback the server below listens on.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "rootless-host-token") })}
		go srv.Serve(ln)
		defer srv.Close()
		hostPort := ln.Addr().(*net.TCPAddr).Port
		free, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := free.Addr().(*net.TCPAddr).Port
		free.Close()
		svc := fmt.Sprintf("mkdir -p /workspace/www; wget -qO /workspace/www/t.txt http://127.0.0.1:%d/ && echo FETCHED; exec httpd -f -p 127.0.0.1:%d -h /workspace/www", hostPort, port)
		p := rootlessTask(t, "rl-service-host", fmt.Sprintf(`wget -qO- http://fetch:%d/t.txt > /workspace/out.txt
timeout 3 wget -qO- http://127.0.0.1:%d/ > /workspace/direct.txt
touch /workspace/done`, port, hostPort), "timeout: 60s, memory_mb: 128, pids: 32, disk_mb: 16",
			fmt.Sprintf("services:\n  - name: fetch\n    network: host\n    command: [sh, -c, %q]\n    ports: [%d]\n    limits: {memory_mb: 128}\n    ready: {tcp: %d, interval: 50ms, retries: 400}\n", svc, port, port)+
				"success_criteria:\n  - {type: file_contains, path: out.txt, includes: [rootless-host-token], description: the service fetched it}\n"+
				"  - {type: file_contains, path: direct.txt, includes: [rootless-host-token], description: the agent fetched it itself, weight: 0}\n")
		refused := rootlessCeval(t, env, "run", "--allow-rlimit-limits", "--runs-dir", t.TempDir(), p)
		if refused.code != 2 || !strings.Contains(refused.stderr, "--allow-host-network") {
			t.Fatalf("without --allow-host-network: exit %d, want 2 naming the flag\n%s", refused.code, refused.stderr)
		}
		res, dir := rootlessRunArgs(t, env, p, "--allow-host-network")
		if len(res.Criteria) != 2 || !res.Criteria[0].Passed || res.Criteria[1].Passed {
			log, _ := os.ReadFile(filepath.Join(dir, record.ServicesDir, "fetch.log"))
			t.Fatalf("status %s %s %+v (want the service's fetch and not the agent's)\nservice log:\n%s", res.Status, res.Error, res.Criteria, log)
		}
	})
}
