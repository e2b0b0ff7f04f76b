package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/task"
)

// A task's MCP servers are services marked mcp: (task.MCPServer). ceval tells the agent's CLI
// of them the way it hands over plugin bundles: in files ceval writes into the run directory
// and mounts read-only, never in a config of the user's on the host and never in a file of
// the agent's home that the agent could rewrite for its next iteration.
//   - Claude Code: --mcp-config ClaudeMCPConfigPath --strict-mcp-config, so only ceval's
//     servers are connected (not a .mcp.json the agent writes into the workspace, nor one in
//     its ~/.claude.json, nor a plugin's).
//   - Codex: /etc/codex/managed_config.toml, the managed layer that overrides the user's
//     $CODEX_HOME/config.toml key by key, so each server's url or command, enabled = true
//     and an empty disabled_tools are ceval's whatever the agent writes there (servers the
//     agent adds to its own config run in its own container, as any program of its could).
// An HTTP or SSE server is reached at http://NAME:PORT/PATH through the services' relay; a
// stdio server's command runs in its service's container behind ceval-init --mcp-serve, and
// the CLI starts ceval-init --mcp-relay NAME:PORT as the server's command (cmd/ceval-init's
// mcp.go says why).

// Where the MCP configuration files are mounted in the agent's container.
const (
	ClaudeMCPConfigPath = "/opt/ceval/mcp/claude.json"
	CodexManagedConfig  = "/etc/codex/managed_config.toml"
	mcpDir              = "mcp" // in the run directory
)

// ClaudeMCPConfig is the --mcp-config file naming the task's MCP servers for Claude Code.
func ClaudeMCPConfig(t *task.Task) []byte {
	servers := map[string]any{}
	for _, s := range t.MCPServices() {
		m := s.MCP
		switch m.Transport {
		case task.MCPStdio:
			servers[s.Name] = map[string]any{"type": "stdio", "command": oci.InitPath, "args": mcpRelayArgs(s)}
		default: // http, sse: Claude Code names them as MCP does
			servers[s.Name] = map[string]any{"type": m.Transport, "url": m.URL(s.Name)}
		}
	}
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	return append(b, '\n')
}

// CodexMCPConfig is the [mcp_servers] part of Codex's managed configuration.
func CodexMCPConfig(t *task.Task) string {
	var b strings.Builder
	for _, s := range t.MCPServices() {
		fmt.Fprintf(&b, "[mcp_servers.%s]\n", strconv.Quote(s.Name))
		if s.MCP.Transport == task.MCPStdio {
			fmt.Fprintf(&b, "command = %s\nargs = [", strconv.Quote(oci.InitPath))
			for i, a := range mcpRelayArgs(s) {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Quote(a))
			}
			b.WriteString("]\n")
		} else {
			fmt.Fprintf(&b, "url = %s\n", strconv.Quote(s.MCP.URL(s.Name)))
		}
		b.WriteString("enabled = true\nrequired = true\ndisabled_tools = []\n\n")
	}
	return b.String()
}

// mcpRelayArgs are ceval-init's arguments that join a CLI's stdio to the service's server.
func mcpRelayArgs(s task.Service) []string {
	return []string{"--mcp-relay", s.Name + ":" + strconv.Itoa(s.MCP.Port)}
}

// mcpServeArgv is a stdio MCP service's process: its command behind ceval-init --mcp-serve.
func mcpServeArgv(s task.Service, argv []string) []string {
	if s.MCP == nil || s.MCP.Transport != task.MCPStdio {
		return argv
	}
	return append([]string{oci.InitPath, "--mcp-serve", strconv.Itoa(s.MCP.Port), "--"}, argv...)
}

// claudeMCPArgs are Claude Code's flags for the task's MCP servers; nil without any.
func claudeMCPArgs(t *task.Task) []string {
	if len(t.MCPServices()) == 0 {
		return nil
	}
	return []string{"--mcp-config", ClaudeMCPConfigPath, "--strict-mcp-config"}
}

// CheckMCP refuses a task whose agent has no client for one of its MCP servers' transports.
func CheckMCP(t *task.Task) error {
	if t.Agent == nil {
		return nil
	}
	for _, s := range t.MCPServices() {
		if why := task.MCPUnsupported(t.Agent.Type, s.MCP.Transport); why != "" {
			return fmt.Errorf("task %s: service %s is an MCP server over %s: %s", t.ID, s.Name, s.MCP.Transport, why)
		}
	}
	return nil
}

// prepareMCP writes the agent CLI's MCP configuration into the run directory, read-only,
// and returns its mounts; nil when the task has no MCP server or its agent no CLI that
// takes one (a command agent reaches the services by name like any other).
func prepareMCP(t *task.Task, runDir string) ([]oci.Mount, error) {
	if len(t.MCPServices()) == 0 || t.Agent == nil {
		return nil, nil
	}
	var name, dst string
	var body []byte
	switch t.Agent.Type {
	case task.AgentClaudeCode:
		name, dst, body = "claude.json", ClaudeMCPConfigPath, ClaudeMCPConfig(t)
	case task.AgentCodex:
		name, dst, body = "codex-managed_config.toml", CodexManagedConfig, []byte(CodexMCPConfig(t))
	default:
		return nil, nil
	}
	dir := filepath.Join(runDir, mcpDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &InfraError{fmt.Errorf("mcp: %w", err)}
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, body, 0o444); err != nil {
		return nil, &InfraError{fmt.Errorf("mcp: %w", err)}
	}
	return []oci.Mount{{Source: p, Destination: dst}}, nil
}
