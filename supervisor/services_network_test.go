package supervisor

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/sandbox"
)

// hostServer serves token at /token on a loopback port of this test's network namespace,
// which is the daemon's "host" network as long as the daemon runs in it (make test's daemon
// does; a daemon started inside a network namespace of its own must run the test there too:
// `nsenter --net=/proc/DAEMON_PID/ns/net go test ...`). It never reaches beyond loopback.
func hostServer(t *testing.T, token string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/token" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, token)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// freeLoopbackPort is a port nothing listens on now on this namespace's loopback, for a
// service on the host's network to listen on.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// hostNetworkTask: a service that fetches the token from the host's loopback server (its
// log says FETCHED or FETCH-FAILED) and serves what it got on port; the agent asks the
// service for it (out.txt) and the host server itself (direct.txt).
func hostNetworkTask(id, network string, hostPort, port int) string {
	p := fmt.Sprint(port)
	svc := fmt.Sprintf(`mkdir -p /workspace/www; if wget -qO /workspace/www/t.txt http://127.0.0.1:%d/token; then echo FETCHED; else echo FETCH-FAILED; fi; exec httpd -f -p 127.0.0.1:%s -h /workspace/www`, hostPort, p)
	agent := fmt.Sprintf("wget -qO- http://fetch:%s/t.txt >out.txt; timeout 5 wget -qO- http://127.0.0.1:%d/token >direct.txt; true", p, hostPort)
	return agentTask(id, agent, "  - {type: file_contains, path: out.txt, includes: [CEVAL-HOSTNET]}\n  - {type: file_contains, path: direct.txt, includes: [CEVAL-HOSTNET]}\n",
		"services:\n  - name: fetch\n    network: "+network+"\n    command: [sh, -c, "+quote(svc)+"]\n    ports: ["+p+"]\n    ready: {tcp: "+p+", interval: 50ms, retries: 200}\n")
}

// TestServiceOnTheHostsNetworkOnlyWhenTheUserAllowsIt: a service with network: host, run
// with the user's host networking allowed, reaches a server on the host's loopback and
// relays what it got to the agent, whose own network stays loopback-only (its direct fetch
// of the same server fails); the same task without the user's permission is refused before
// anything starts, naming the flag; with network: none the service reaches nothing.
func TestServiceOnTheHostsNetworkOnlyWhenTheUserAllowsIt(t *testing.T) {
	token := "CEVAL-HOSTNET-" + canary(t)
	hostPort := hostServer(t, token)

	t.Run("allowed", func(t *testing.T) {
		res, err := runTask(t, hostNetworkTask("svc-hostnet", "host", hostPort, freeLoopbackPort(t)), nil, Options{Allow: Allow{HostNetwork: true}})
		if err != nil {
			t.Fatal(err)
		}
		log := serviceLog(t, res, "fetch")
		if !strings.Contains(log, "FETCHED") {
			t.Fatalf("the service on the host's network did not reach the host's loopback server (is the test in the daemon's network namespace?); its log:\n%s", log)
		}
		if len(res.Criteria) != 2 || !res.Criteria[0].Passed {
			t.Fatalf("the agent did not get the token through the service: %+v", res.Criteria)
		}
		if res.Criteria[1].Passed {
			t.Fatalf("the agent reached the host's server itself: its network must stay loopback-only: %+v", res.Criteria[1])
		}
		if s := res.Services[0]; s.Isolation == nil || s.Isolation.Network != "host" {
			t.Errorf("the service's attested network: %+v", s.Isolation)
		}
		if res.Isolation == nil || res.Isolation.Network != "none" {
			t.Errorf("the agent's attested network: %+v", res.Isolation)
		}
		noLeftovers(t, res)
	})

	t.Run("not allowed", func(t *testing.T) {
		_, err := runTask(t, hostNetworkTask("svc-hostnet-refused", "host", hostPort, freeLoopbackPort(t)), nil, Options{})
		var in *sandbox.InputError
		if !errors.As(err, &in) || !strings.Contains(err.Error(), "service fetch asks for network: host") || !strings.Contains(err.Error(), "--allow-host-network") {
			t.Fatalf("want the run refused naming the service and --allow-host-network, got %v", err)
		}
		c, ctx := ctrtest.Connect(t)
		if err := ctrtest.Leftovers(ctx, c); err != nil {
			t.Errorf("left behind: %v", err)
		}
	})

	t.Run("none", func(t *testing.T) {
		// The user's permission changes nothing for a service that does not ask for it.
		res, err := runTask(t, hostNetworkTask("svc-hostnet-none", "none", hostPort, 8080), nil, Options{Allow: Allow{HostNetwork: true}})
		if err != nil {
			t.Fatal(err)
		}
		if log := serviceLog(t, res, "fetch"); !strings.Contains(log, "FETCH-FAILED") {
			t.Fatalf("a service with network: none reached the host's server; its log:\n%s", log)
		}
		if res.Criteria[0].Passed || res.Criteria[1].Passed {
			t.Fatalf("the token reached the agent: %+v", res.Criteria)
		}
		noLeftovers(t, res)
	})
}
