package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	_, err := Run(context.Background(), tk, Options{RunsDir: t.TempDir(), InitDir: t.TempDir(), containers: rt, LookupEnv: hostEnv(nil)})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "only the local containerd backend runs") || rt.launched != 0 {
		t.Fatalf("err %v (launched %d), want an InputError before the launch", err, rt.launched)
	}
	if err := CheckKubernetes(tk); err == nil || !strings.Contains(err.Error(), "services") {
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
