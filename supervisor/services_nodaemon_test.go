package supervisor

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/kubernetes"
	"ceval.dev/ceval/task"
)

func loadServiceTask(t *testing.T) *task.Task {
	t.Helper()
	p := filepath.Join(t.TempDir(), "task.yaml")
	doc := agentTask("svc", "true", "  - {type: file_exists, path: hello.txt}\n",
		"services:\n  - {name: api, command: [httpd, -f], ports: [80], ready: {tcp: 80, interval: 1s, timeout: 1s, retries: 3}}\n"+
			"  - {name: db, command: [db], ready: {tcp: 5432}}\n")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	return tk
}

// A backend that cannot run services refuses the task before anything starts: nothing
// may run the agent without the services its task needs.
func TestServicesAreRefusedWhereTheyCannotRun(t *testing.T) {
	tk := loadServiceTask(t)
	rt := &fakeRuntime{agent: writesHello}
	_, err := Run(context.Background(), tk, Options{RunsDir: t.TempDir(), InitDir: t.TempDir(), Backend: rt, LookupEnv: hostEnv(nil)})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "only the local containerd backend runs") || rt.launched != 0 {
		t.Fatalf("err %v (launched %d), want an InputError before the launch", err, rt.launched)
	}
	if err := kubernetes.Check(tk); err == nil || !strings.Contains(err.Error(), "services") {
		t.Fatalf("CheckKubernetes: %v, want services refused", err)
	}
}

func TestAgentsHostsFileNamesEachServiceAtItsOwnLoopbackAddress(t *testing.T) {
	tk := loadServiceTask(t)
	got := hostsFile(tk.Services)
	for _, want := range []string{"127.0.0.1\tlocalhost\n", "127.0.10.1\tapi\n", "127.0.10.2\tdb\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("hosts file lacks %q:\n%s", want, got)
		}
	}
}

// A service outlives every wait the task declares: the agent's timeout, its steps and the
// readiness of every service, so its init's deadline never ends it before ceval does.
func TestServiceLifetimeCoversTheRunsDeclaredBudgets(t *testing.T) {
	tk := loadServiceTask(t)
	min := tk.Sandbox.Limits.Timeout + 3*(2*time.Second) + task.DefaultReadyRetries*(task.DefaultReadyInterval+task.DefaultReadyTimeout)
	if got := serviceLifetime(tk); got < min {
		t.Errorf("lifetime %s, want at least %s", got, min)
	}
}

// A service without a command runs its image's entrypoint and command, in the image's
// working directory, with the image's environment under the task's; ceval's HOME and USER
// stay.
func TestServiceRunsItsImagesCommandUnlessItNamesOne(t *testing.T) {
	img := ocispec.ImageConfig{Entrypoint: []string{"python3"}, Cmd: []string{"server.py"}, WorkingDir: "/app",
		Env: []string{"PATH=/usr/local/bin:/usr/bin", "LANG=C.UTF-8", "HOME=/root", "MODE=image"}}
	argv, env, wd, err := serviceRun(task.Service{Env: []string{"MODE=task"}}, img)
	if err != nil || !slices.Equal(argv, []string{"python3", "server.py"}) || wd != "/app" ||
		!slices.Equal(env, []string{"PATH=/usr/local/bin:/usr/bin", "LANG=C.UTF-8", "MODE=task"}) {
		t.Errorf("argv %q env %q workdir %q err %v", argv, env, wd, err)
	}
	argv, _, wd, err = serviceRun(task.Service{Command: []string{"httpd", "-f"}, Workdir: "/srv"}, img)
	if err != nil || !slices.Equal(argv, []string{"httpd", "-f"}) || wd != "/srv" {
		t.Errorf("argv %q workdir %q err %v", argv, wd, err)
	}
	if _, _, wd, _ := serviceRun(task.Service{Command: []string{"x"}}, ocispec.ImageConfig{}); wd != task.DefaultServiceWorkdir {
		t.Errorf("workdir %q without one in the image, want %s", wd, task.DefaultServiceWorkdir)
	}
	_, _, _, err = serviceRun(task.Service{}, ocispec.ImageConfig{})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "give the service a command") {
		t.Errorf("no command anywhere: %v", err)
	}
}

// An agent that opens connection after connection to a service gets at most maxRelays
// relayed at once: the rest are closed at once, so it cannot exhaust ceval's descriptors.
func TestRelayedConnectionsAreCappedPerRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("entering a network namespace (our own) needs root")
	}
	upstream, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer upstream.Close()
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := upstream.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	port := upstream.Addr().(*net.TCPAddr).Port
	ns, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var res []record.ServiceResult
	res = append(res, record.ServiceResult{Name: "api", Log: "api.log"})
	s := &service{spec: task.Service{Name: "api", Ports: []int{port}}, netns: ns, waited: make(chan struct{})}
	set := &serviceSet{runDir: t.TempDir(), res: &res, svcs: []*service{s}, conns: map[net.Conn]bool{},
		redact: func(s string) string { return s }, emit: func(string, map[string]any) {}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	set.lns = append(set.lns, ln)
	set.relays.Add(1)
	go set.accept(context.Background(), ln, s, port)
	var clients []net.Conn
	for range maxRelays + 40 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	// Every client reads until its connection ends. Once 40 were closed and maxRelays reached
	// the service, every connection has been accepted and decided: accepted - closed is at
	// most maxRelays, so no other connection can reach the service later.
	var closed atomic.Int32
	for _, c := range clients {
		go func() {
			if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
				closed.Add(1)
			}
		}()
	}
	reached := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(held)
	}
	for deadline := time.Now().Add(30 * time.Second); closed.Load() < 40 || reached() < maxRelays; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) || reached() > maxRelays {
			break
		}
	}
	if n := reached(); n != maxRelays || closed.Load() != 40 {
		t.Errorf("%d connections reached the service and %d were closed, want %d and 40", n, closed.Load(), maxRelays)
	}
	if err := set.stop(); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		c.Close()
	}
}
