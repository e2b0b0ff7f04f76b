package task_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSchemaImportsNoServer: the task schema parses the mock and gateway fixture formats
// through their leaf packages (mockd/fixture, gateway/transcript), never through the servers,
// so a server can change without touching the schema.
func TestSchemaImportsNoServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "ceval.dev/ceval/task").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "ceval.dev/ceval/mockd", dep == "ceval.dev/ceval/gateway", strings.Contains(dep, "containerd"):
			t.Errorf("task depends on %s: parse its formats through a leaf package", dep)
		}
	}
}
