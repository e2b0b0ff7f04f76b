package task

import (
	"strings"
	"testing"
)

func TestMCPServicesLoadWithTheirTransportsDefaults(t *testing.T) {
	doc := minimal + `services:
  - {name: calc, command: [srv], ports: [8000], ready: {tcp: 8000}, mcp: {port: 8000}}
  - {name: feed, command: [srv], ports: [80], ready: {tcp: 80}, mcp: {transport: sse, port: 80}}
  - {name: notes, command: [srv], ports: [7000], ready: {tcp: 7000}, mcp: {transport: stdio, port: 7000}}
  - {name: api, command: [srv], ports: [9000], ready: {tcp: 9000}, mcp: {transport: http, port: 9000, path: /v1/mcp}}
  - {name: plain, command: [srv], ready: {tcp: 1}}
`
	tk, err := Load(writeTask(t, doc, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	var got []string
	for _, s := range tk.MCPServices() {
		got = append(got, s.Name+" "+s.MCP.Transport+" "+s.MCP.URL(s.Name))
	}
	want := "calc http http://calc:8000/mcp,feed sse http://feed:80/sse,notes stdio http://notes:7000,api http http://api:9000/v1/mcp"
	if strings.Join(got, ",") != want {
		t.Fatalf("MCP services %q, want %q", strings.Join(got, ","), want)
	}
}

func TestBadMCPServicesAreReportedAtTheirPosition(t *testing.T) {
	svc := func(mcp string) string {
		return "services:\n  - name: api\n    command: [srv]\n    ports: [80]\n    ready: {tcp: 80}\n    mcp: " + mcp + "\n"
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"no port", svc("{transport: http}"), "10:10: services[0].mcp: missing required field port"},
		{"port not declared", svc("{port: 81}"), "10:10: services[0].mcp.port 81 is not among the service's ports [80]"},
		{"bad transport", svc("{transport: websocket, port: 80}"), `10:22: services[0].mcp.transport "websocket": want one of http, sse, stdio`},
		{"stdio with a path", svc("{transport: stdio, port: 80, path: /mcp}"), "10:45: services[0].mcp.path: a stdio server has no URL path"},
		{"relative path", svc("{port: 80, path: mcp}"), `10:27: services[0].mcp.path "mcp": want an absolute URL path`},
		{"query in path", svc(`{port: 80, path: "/mcp?x=1"}`), `services[0].mcp.path "/mcp?x=1": want an absolute URL path`},
		{"unknown field", svc("{port: 80, url: http://x}"), `10:21: unknown field "url" in services[0].mcp`},
		{"not a mapping", svc("yes"), "10:10: services[0].mcp must be a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTask(t, minimal+tc.doc, nil)
			_, err := Load(p)
			ps, ok := err.(Problems)
			if !ok {
				t.Fatalf("want Problems, got %v", err)
			}
			if !strings.Contains(ps.Error(), tc.want) {
				t.Errorf("want %q in:\n%s", tc.want, ps.Error())
			}
		})
	}
}
