package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/task"
)

// TestStdioMCPServiceInRlimitModeNeedsRoomForCevalsServer: on a rootless daemon without a
// delegated cgroup subtree, memory is RLIMIT_AS per process, under which ceval-init
// --mcp-serve (Go) does not start below 1 GiB: such a service is refused with both fixes;
// with the room, in strict mode, rootful, or an HTTP MCP server, nothing is refused.
func TestStdioMCPServiceInRlimitModeNeedsRoomForCevalsServer(t *testing.T) {
	load := func(transport, memory string) *task.Task {
		p := filepath.Join(t.TempDir(), "task.yaml")
		doc := agentTask("svc-mcp-rl", "true", "  - {type: file_exists, path: done}\n",
			"services:\n  - {name: notes, command: [cat], ports: [7000], ready: {tcp: 7000}, mcp: {transport: "+transport+", port: 7000}"+memory+"}\n")
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
	rlimit, strict := &local.Rootless{}, &local.Rootless{Delegated: "/sys/fs/cgroup/ceval-rootless-u"}
	err := checkRlimitServices(load("stdio", ""), rlimit)
	if err == nil || !strings.Contains(err.Error(), "service notes is a stdio MCP server") || !strings.Contains(err.Error(), "memory_mb 512") ||
		!strings.Contains(err.Error(), "memory_mb: 1024") || !strings.Contains(err.Error(), "ceval rootless setup") {
		t.Fatalf("rlimit mode, default memory: %v", err)
	}
	for _, tc := range []struct {
		name string
		tk   *task.Task
		rl   *local.Rootless
	}{
		{"rlimit mode with 1 GiB", load("stdio", ", limits: {memory_mb: 1024}"), rlimit},
		{"strict mode", load("stdio", ""), strict},
		{"rootful", load("stdio", ""), nil},
		{"http server", load("http", ""), rlimit},
	} {
		if err := checkRlimitServices(tc.tk, tc.rl); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
