package supervisor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/task"
)

func loadMCPTask(t *testing.T, agent string) *task.Task {
	t.Helper()
	p := filepath.Join(t.TempDir(), "task.yaml")
	doc := "task_id: m\ninitial_prompt: go\nagent:\n  type: " + agent + "\n" +
		"services:\n" +
		"  - {name: calc, command: [srv], ports: [8000], ready: {tcp: 8000}, mcp: {port: 8000, path: /rpc}}\n" +
		"  - {name: feed, command: [srv], ports: [80], ready: {tcp: 80}, mcp: {transport: sse, port: 80}}\n" +
		"  - {name: notes, command: [srv, --stdio], ports: [7000], ready: {tcp: 7000}, mcp: {transport: stdio, port: 7000}}\n" +
		"  - {name: db, command: [db], ports: [5432], ready: {tcp: 5432}}\n" +
		"success_criteria:\n  - {type: file_exists, path: x}\n"
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

// Claude Code gets the task's MCP servers in a --mcp-config file ceval writes read-only
// (stdio through ceval-init --mcp-relay), and --strict-mcp-config so it connects no other.
func TestClaudeCodeIsConfiguredWithTheTasksMCPServersOnly(t *testing.T) {
	tk := loadMCPTask(t, task.AgentClaudeCode)
	argv, err := AgentArgv(tk)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(argv, "--mcp-config"); i < 0 || argv[i+1] != ClaudeMCPConfigPath || !slices.Contains(argv, "--strict-mcp-config") {
		t.Fatalf("argv %q", argv)
	}
	dir := t.TempDir()
	mounts, err := prepareMCP(tk, dir)
	if err != nil || len(mounts) != 1 || mounts[0].Destination != ClaudeMCPConfigPath {
		t.Fatalf("mounts %+v, %v", mounts, err)
	}
	st, err := os.Stat(mounts[0].Source)
	if err != nil || st.Mode().Perm() != 0o444 {
		t.Fatalf("config file %v %v", st, err)
	}
	var cfg struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	data, _ := os.ReadFile(mounts[0].Source)
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"calc":  `{"type":"http","url":"http://calc:8000/rpc"}`,
		"feed":  `{"type":"sse","url":"http://feed:80/sse"}`,
		"notes": `{"args":["--mcp-relay","notes:7000"],"command":"` + oci.InitPath + `","type":"stdio"}`,
	}
	if len(cfg.MCPServers) != len(want) {
		t.Fatalf("servers %v", cfg.MCPServers)
	}
	for name, w := range want {
		if b, _ := json.Marshal(cfg.MCPServers[name]); string(b) != w {
			t.Errorf("%s: %s, want %s", name, b, w)
		}
	}
	// Without MCP servers nothing changes: no flags, no file.
	plain := loadServiceTask(t)
	plain.Agent.Type = task.AgentClaudeCode
	if argv, _ := AgentArgv(plain); slices.Contains(argv, "--mcp-config") || slices.Contains(argv, "--strict-mcp-config") {
		t.Errorf("argv without MCP servers %q", argv)
	}
	if m, err := prepareMCP(plain, t.TempDir()); m != nil || err != nil {
		t.Errorf("mounts without MCP servers %v %v", m, err)
	}
}

// Codex gets them in /etc/codex/managed_config.toml (read-only), the layer over the user's
// config.toml: each server enabled, required and with no tool disabled, whatever the agent
// writes into its own config. The format is the one `codex mcp list --json` read back from
// the pinned Codex (measured); an SSE server is refused before the run (Codex has no client).
func TestCodexIsConfiguredWithTheTasksMCPServersInItsManagedConfig(t *testing.T) {
	tk := loadMCPTask(t, task.AgentCodex)
	if err := CheckMCP(tk); err == nil || !strings.Contains(err.Error(), "service feed is an MCP server over sse: Codex has no client") {
		t.Fatalf("CheckMCP %v", err)
	}
	tk.Services = slices.DeleteFunc(tk.Services, func(s task.Service) bool { return s.Name == "feed" })
	if err := CheckMCP(tk); err != nil {
		t.Fatal(err)
	}
	mounts, err := prepareMCP(tk, t.TempDir())
	if err != nil || len(mounts) != 1 || mounts[0].Destination != CodexManagedConfig {
		t.Fatalf("mounts %+v, %v", mounts, err)
	}
	data, _ := os.ReadFile(mounts[0].Source)
	want := `[mcp_servers."calc"]
url = "http://calc:8000/rpc"
enabled = true
required = true
disabled_tools = []

[mcp_servers."notes"]
command = "` + oci.InitPath + `"
args = ["--mcp-relay", "notes:7000"]
enabled = true
required = true
disabled_tools = []

`
	if string(data) != want {
		t.Fatalf("managed config:\n%s\nwant:\n%s", data, want)
	}
	if argv, _ := AgentArgv(tk); slices.Contains(argv, "--mcp-config") {
		t.Errorf("codex argv %q", argv)
	}
}

// A stdio server's service runs its command behind ceval-init --mcp-serve PORT; any other
// service runs its command as it is.
func TestStdioMCPServiceRunsBehindTheInitsBridge(t *testing.T) {
	tk := loadMCPTask(t, task.AgentClaudeCode)
	for _, s := range tk.Services {
		got := strings.Join(mcpServeArgv(s, s.Command), " ")
		want := strings.Join(s.Command, " ")
		if s.Name == "notes" {
			want = oci.InitPath + " --mcp-serve 7000 -- srv --stdio"
		}
		if got != want {
			t.Errorf("%s: %q, want %q", s.Name, got, want)
		}
	}
}
