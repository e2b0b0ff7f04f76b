package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/tasktest"
	"ceval.dev/ceval/task"
)

// A task with services is refused on this backend before anything starts, and the message
// says exactly why a Pod cannot hold the local backend's network guarantee (one network
// namespace for every container: undeclared ports, the agent's ports, the gateway relay, the
// init's control port) and what to run instead.
func TestKubeRefusesServicesNamingTheSharedNetworkNamespace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "task.yaml")
	doc := tasktest.AgentTask("svc", "true", "  - {type: file_exists, path: hello.txt}\n",
		"services:\n  - {name: api, command: [httpd, -f], ports: [80], ready: {tcp: 80}}\n")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	err = Check(tk)
	if err == nil {
		t.Fatal("a task with services passed the kubernetes backend's check")
	}
	for _, want := range []string{"task svc: the kubernetes backend does not run services (a Pod's containers share one network namespace",
		"every port a service listens on, not only the declared ones", "the agent's own ports", "relay to the model gateway",
		"ceval-init's control port", "ceval run --backend local"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%s", want, err)
		}
	}
}
