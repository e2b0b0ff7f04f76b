package task

import (
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MCP transports a service may serve (services[].mcp.transport).
const (
	MCPHTTP  = "http"  // MCP streamable HTTP at http://NAME:PORT/PATH
	MCPSSE   = "sse"   // MCP's older HTTP+SSE transport (Claude Code only; Codex has no client for it)
	MCPStdio = "stdio" // the service's command speaks MCP on stdin/stdout; ceval serves each connection to PORT a process of it
)

// MCPTransports lists the transports in the order help and the schema name them.
var MCPTransports = []string{MCPHTTP, MCPSSE, MCPStdio}

// MCPServer marks a service as an MCP server the agent's CLI is configured with: its tools
// appear to Claude Code and Codex as the server named like the service.
type MCPServer struct {
	Transport string
	Port      int    // one of the service's ports: its HTTP endpoint, or where ceval serves the stdio command
	Path      string // http, sse: the URL path (default /mcp, /sse); "" for stdio
	Line      int
	Column    int
}

// URL is where the agent's CLI reaches an HTTP or SSE server of the service named name.
func (m *MCPServer) URL(name string) string {
	return (&url.URL{Scheme: "http", Host: name + ":" + strconv.Itoa(m.Port), Path: m.Path}).String()
}

// MCPServices are the task's services marked as MCP servers, in start order.
func (t *Task) MCPServices() []Service {
	var out []Service
	for _, s := range t.Services {
		if s.MCP != nil {
			out = append(out, s)
		}
	}
	return out
}

// mcp reads services[i].mcp: {transport, port, path}.
func (l *loader) mcp(n *yaml.Node, where string, s *Service) {
	rn := resolve(n)
	m := &MCPServer{Transport: MCPHTTP, Line: rn.Line, Column: rn.Column}
	var port int64
	var pathNode *yaml.Node
	got := l.mapping(n, where, []field{
		{"transport", func(v *yaml.Node) {
			l.str(v, where+".transport", &m.Transport)
			if !slices.Contains(MCPTransports, m.Transport) {
				l.errorf(resolve(v), "%s.transport %q: want one of %s", where, m.Transport, strings.Join(MCPTransports, ", "))
			}
		}},
		{"port", func(v *yaml.Node) { l.integer(v, where+".port", 1, 65535, &port) }},
		{"path", func(v *yaml.Node) { pathNode = v; l.str(v, where+".path", &m.Path) }},
	})
	if got == nil {
		return
	}
	m.Port = int(port)
	if got["port"] == nil {
		l.errorf(rn, "%s: missing required field port (the service's port the agent's CLI reaches it at; one of its ports)", where)
	}
	switch {
	case m.Transport == MCPStdio && pathNode != nil:
		l.errorf(resolve(pathNode), "%s.path: a stdio server has no URL path; leave it out", where)
	case pathNode != nil && (!path.IsAbs(m.Path) || strings.ContainsAny(m.Path, "?# \t\n\x00")):
		l.errorf(resolve(pathNode), "%s.path %q: want an absolute URL path such as /mcp (no query or fragment)", where, m.Path)
	case pathNode == nil && m.Transport == MCPHTTP:
		m.Path = "/mcp"
	case pathNode == nil && m.Transport == MCPSSE:
		m.Path = "/sse"
	}
	s.MCP = m
}

// checkMCP holds an MCP server's port to the service's declared ports (the only ones the
// agent reaches).
func (l *loader) checkMCP(s Service, where string) bool {
	if s.MCP == nil || s.MCP.Port == 0 {
		return true
	}
	if !slices.Contains(s.Ports, s.MCP.Port) {
		l.errorf(&yaml.Node{Line: s.MCP.Line, Column: s.MCP.Column}, "%s.mcp.port %d is not among the service's ports %v: add it to ports, which are all the agent can reach", where, s.MCP.Port, s.Ports)
		return false
	}
	return true
}

// MCPUnsupported is why an agent type cannot use a transport; "" when it can.
func MCPUnsupported(agentType, transport string) string {
	if agentType == AgentCodex && transport == MCPSSE {
		return "Codex has no client for MCP's HTTP+SSE transport (it speaks stdio and streamable HTTP): serve it as transport http, or run the task with claude-code"
	}
	return ""
}
