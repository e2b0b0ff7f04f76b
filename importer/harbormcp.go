package importer

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Harbor's [[environment.mcp_servers]] (its task config's MCPServerConfig: name, transport
// "sse" (the default), "streamable-http" or "stdio", url for the first two, command and args
// for stdio) are the MCP servers Harbor writes into the agent CLI's own configuration. In
// ceval an MCP server is a service marked mcp: (docs/tasks.md), which ceval configures for
// Claude Code and Codex itself:
//   - sse / streamable-http at http://SERVICE:PORT/PATH, SERVICE a compose service: that
//     service gets mcp: {transport: sse|http, port: PORT, path: PATH} (PORT joins its ports);
//   - stdio: Harbor's CLI starts the command in the agent's container; ceval runs it in a
//     service of its own from the task's image (so it sees the image's files, not what the
//     agent writes), reached by the agent's CLI on a port ceval serves it at.
// Anything else (another host, https, a field Harbor's model lacks) is unmapped at its line.

// harborMCPEntry is one [[environment.mcp_servers]] entry as task.toml wrote it.
type harborMCPEntry struct {
	line   int
	fields map[string]string // name, transport, url, command: unquoted
	args   []string          // args
	lines  map[string]int    // each field's line
	bad    map[string]string // fields this importer could not read, with why
	extra  []string          // keys Harbor's model does not have
}

// harborMCPStdioPort is the first port a stdio server's service is served at.
const harborMCPStdioPort = 7000

var (
	mcpTableHeader  = regexp.MustCompile(`^\[\[\s*environment\.mcp_servers\s*\]\]$`)
	notServiceChars = regexp.MustCompile(`[^a-z0-9-]+`)
)

// harborMCPEntries reads task.toml's MCP servers: [[environment.mcp_servers]] tables and
// mcp_servers = [{...}, ...] under [environment], in file order.
func harborMCPEntries(data []byte) []*harborMCPEntry {
	var out []*harborMCPEntry
	var cur *harborMCPEntry
	table := ""
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := strings.TrimSpace(stripComment(lines[i]))
		switch {
		case line == "":
			continue
		case mcpTableHeader.MatchString(line):
			cur = newMCPEntry(n)
			out = append(out, cur)
			continue
		case strings.HasPrefix(line, "["):
			cur = nil
			if strings.HasPrefix(line, "[[") {
				table = ""
			} else {
				table = strings.TrimSpace(strings.Trim(line, "[]"))
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if cur != nil {
			cur.set(k, v, n)
			continue
		}
		if table == "environment" && k == "mcp_servers" {
			for strings.Count(v, "[") > strings.Count(v, "]") && i+1 < len(lines) {
				i++
				v += " " + strings.TrimSpace(stripComment(lines[i]))
			}
			for _, t := range tomlInlineTable.Regexp().FindAllString(v, -1) {
				e := newMCPEntry(n)
				for _, kv := range splitTOMLInline(t[1 : len(t)-1]) {
					if ik, iv, ok := strings.Cut(kv, "="); ok {
						e.set(strings.Trim(strings.TrimSpace(ik), `"`), strings.TrimSpace(iv), n)
					}
				}
				out = append(out, e)
			}
		}
	}
	return out
}

func newMCPEntry(line int) *harborMCPEntry {
	return &harborMCPEntry{line: line, fields: map[string]string{}, lines: map[string]int{}, bad: map[string]string{}}
}

// splitTOMLInline splits an inline table's body at the commas outside strings and arrays.
func splitTOMLInline(s string) []string {
	var out []string
	depth, inStr, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && inStr:
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && c == '[':
			depth++
		case !inStr && c == ']':
			depth--
		case !inStr && depth == 0 && c == ',':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func (e *harborMCPEntry) set(k, v string, line int) {
	e.lines[k] = line
	switch k {
	case "name", "transport", "url", "command":
		s, err := strconv.Unquote(v)
		if err != nil {
			e.bad[k] = "not a string this importer reads"
			return
		}
		e.fields[k] = s
	case "args":
		inner, ok := strings.CutPrefix(v, "[")
		inner, ok2 := strings.CutSuffix(inner, "]")
		if !ok || !ok2 {
			e.bad[k] = "not a list of strings this importer reads"
			return
		}
		for _, item := range splitTOMLInline(inner) {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			s, err := strconv.Unquote(item)
			if err != nil {
				e.bad[k] = "not a list of strings this importer reads"
				return
			}
			e.args = append(e.args, s)
		}
	default:
		e.extra = append(e.extra, k)
	}
}

// harborMCP maps task.toml's MCP servers onto root's services (mcpServers: the entries;
// image: the agent's image, which a stdio server's service runs).
func (c *conv) harborMCP(entries []*harborMCPEntry, root *yaml.Node, image string) {
	svcs := get(root, "services")
	byName := func(name string) *yaml.Node {
		if svcs == nil {
			return nil
		}
		for _, s := range svcs.Content {
			if n := get(s, "name"); n != nil && n.Value == name {
				return s
			}
		}
		return nil
	}
	at := func(e *harborMCPEntry, k string) *yaml.Node {
		if l, ok := e.lines[k]; ok {
			return &yaml.Node{Line: l}
		}
		return &yaml.Node{Line: e.line}
	}
	const field = "environment.mcp_servers[]"
	for _, e := range entries {
		if len(e.bad) > 0 || len(e.extra) > 0 {
			for k, why := range e.bad {
				c.unmapped(at(e, k), field+"."+k, "%s: the server is not carried", why)
			}
			for _, k := range e.extra {
				c.unmapped(at(e, k), field+"."+k, "not a field of Harbor's MCP server config (name, transport, url, command, args): the server is not carried")
			}
			continue
		}
		name := e.fields["name"]
		if name == "" {
			c.unmapped(at(e, "name"), field+".name", "missing: an MCP server needs a name; the server is not carried")
			continue
		}
		transport, ok := e.fields["transport"]
		if !ok {
			transport = "sse" // Harbor's default
		}
		switch transport {
		case "sse", "streamable-http":
			c.harborMCPURL(e, name, transport, byName, at)
		case "stdio":
			if svcs == nil {
				svcs = &yaml.Node{Kind: yaml.SequenceNode}
				set(root, "services", svcs)
			}
			c.harborMCPStdio(e, name, svcs, byName, at, image)
		default:
			c.unmapped(at(e, "transport"), field+".transport", "%q: Harbor's transports are sse, streamable-http and stdio; the server is not carried", transport)
		}
	}
}

// harborMCPURL marks the compose service an sse or streamable-http server's url names.
func (c *conv) harborMCPURL(e *harborMCPEntry, name, transport string, byName func(string) *yaml.Node, at func(*harborMCPEntry, string) *yaml.Node) {
	const field = "environment.mcp_servers[].url"
	raw := e.fields["url"]
	u, err := url.Parse(raw)
	if raw == "" || err != nil || u.Host == "" {
		c.unmapped(at(e, "url"), field, "%s server %s has no url this importer reads (%q): the server is not carried", transport, name, raw)
		return
	}
	if u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		c.unmapped(at(e, "url"), field, "%s: ceval's services speak plain http://SERVICE:PORT/PATH on the task's private network (no TLS, credentials or query): the server is not carried", raw)
		return
	}
	host := u.Hostname()
	svc := byName(host)
	if svc == nil {
		c.unmapped(at(e, "url"), field, "%s: %s is not a service of environment/docker-compose.yaml that ceval runs, and ceval's agent reaches no other host: serve it from a compose service", raw, host)
		return
	}
	port := 80
	if p := u.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	if get(svc, "mcp") != nil {
		c.unmapped(at(e, "url"), field, "%s: service %s is already an MCP server (another entry): ceval serves one MCP server a service", raw, host)
		return
	}
	ports := get(svc, "ports")
	if ports == nil {
		ports = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		set(svc, "ports", ports)
	}
	if !slices.ContainsFunc(ports.Content, func(n *yaml.Node) bool { return n.Value == strconv.Itoa(port) }) {
		ports.Content = append(ports.Content, scalar(strconv.Itoa(port)))
		c.note(at(e, "url"), field, "port %d joined service %s's ports (compose reaches every port of a service; ceval only those declared)", port, host)
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	mcp := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	set(mcp, "transport", scalar(map[string]string{"sse": "sse", "streamable-http": "http"}[transport]))
	set(mcp, "port", scalar(strconv.Itoa(port)))
	set(mcp, "path", str(path))
	set(svc, "mcp", mcp)
	c.note(at(e, "name"), "environment.mcp_servers[]", "%s became service %s's mcp: (%s on port %d at %s): ceval configures it for Claude Code and Codex itself", name, host, transport, port, path)
	if transport == "sse" {
		c.note(at(e, "transport"), "environment.mcp_servers[].transport", "sse (Harbor's default) is MCP's older HTTP+SSE transport, which Claude Code speaks and Codex does not: run the task with claude-code, or serve streamable HTTP and say transport = \"streamable-http\"")
	}
	if name != host {
		c.note(at(e, "name"), "environment.mcp_servers[].name", "ceval names an MCP server after its service: its tools are mcp__%s__TOOL, not mcp__%s__TOOL (Harbor's name)", host, name)
	}
}

// harborMCPStdio adds a service that serves a stdio server's command from the task's image.
func (c *conv) harborMCPStdio(e *harborMCPEntry, name string, svcs *yaml.Node, byName func(string) *yaml.Node, at func(*harborMCPEntry, string) *yaml.Node, image string) {
	cmd := e.fields["command"]
	if cmd == "" {
		c.unmapped(at(e, "command"), "environment.mcp_servers[].command", "missing: a stdio server needs a command; the server is not carried")
		return
	}
	svcName := strings.Trim(notServiceChars.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if !serviceName.MatchString(svcName) || byName(svcName) != nil {
		c.unmapped(at(e, "name"), "environment.mcp_servers[].name", "%q: its service would be named %q, which is not a free service name: rename the server", name, svcName)
		return
	}
	port := harborMCPStdioPort // the first no service declares
	for slices.ContainsFunc(svcs.Content, func(s *yaml.Node) bool {
		p := get(s, "ports")
		return p != nil && slices.ContainsFunc(p.Content, func(n *yaml.Node) bool { return n.Value == strconv.Itoa(port) })
	}) {
		port++
	}
	s := &yaml.Node{Kind: yaml.MappingNode}
	set(s, "name", str(svcName))
	if image != "" {
		set(s, "image", str(image))
	}
	set(s, "command", strList(append([]string{cmd}, e.args...)))
	set(s, "ports", &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Content: []*yaml.Node{scalar(strconv.Itoa(port))}})
	ready := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	set(ready, "tcp", scalar(strconv.Itoa(port)))
	set(s, "ready", ready)
	mcp := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	set(mcp, "transport", scalar("stdio"))
	set(mcp, "port", scalar(strconv.Itoa(port)))
	set(s, "mcp", mcp)
	svcs.Content = append(svcs.Content, s)
	c.note(at(e, "command"), "environment.mcp_servers[]", "stdio server %s became service %s: ceval runs %s in a container of its own from the task's image (one process per session of the agent's CLI, which reaches it on port %d), not in the agent's container as Harbor's CLI starts it: it sees the image's files, not what the agent writes", name, svcName, strconv.Quote(cmd), port)
	if svcName != name {
		c.note(at(e, "name"), "environment.mcp_servers[].name", "ceval names an MCP server after its service: its tools are mcp__%s__TOOL, not mcp__%s__TOOL (Harbor's name)", svcName, name)
	}
}
