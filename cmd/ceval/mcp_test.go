package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// TestImportedHarborMCPTaskRunsEndToEndAndAuditsOk: a Harbor task (written here) whose
// [[environment.mcp_servers]] names a compose service's streamable-HTTP endpoint imports ok
// with that service marked an MCP server, and the server serves: an agent that calls its
// tool over MCP passes, one that does nothing fails, and the audit (the oracle solution, which
// speaks MCP, against the null agent and the cheats) says ok.
func TestImportedHarborMCPTaskRunsEndToEndAndAuditsOk(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	out := t.TempDir()
	r := ceval(t, "import", "harbor", "../../importer/testdata/harbor/with-mcp", "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "with-mcp/task.yaml: ok") {
		t.Fatalf("import: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	tf := filepath.Join(out, "with-mcp", "task.yaml")
	if data, _ := os.ReadFile(tf); !strings.Contains(string(data), "mcp: {transport: http, port: 8000, path: /cgi-bin/rpc}") {
		t.Fatalf("the import did not make calc an MCP service:\n%s", data)
	}
	// The sample's Dockerfile is a plain FROM debian:bookworm-slim: the default image with bash
	// (harbor_reward runs test.sh with bash) stands in for it under that name.
	const base = "docker.io/library/debian:bookworm-slim"
	buildDefaultWithBash(t, ctx, c, base)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, base) })
	call := `wget -qO- --header 'Content-Type: application/json' --post-data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":40}}}' http://calc:8000/cgi-bin/rpc | sed -n 's/.*\"text\":\"\([0-9]*\)\".*/\1/p' > sum.txt`
	exp := filepath.Join(out, "exp.yaml")
	os.WriteFile(exp, []byte("experiment_id: harbor-mcp\ntasks: [with-mcp/task.yaml]\nvariants:\n"+
		"  - variant_id: calls\n    agent: {type: command, command: [/bin/sh, -c, "+quoteYAML(call)+"]}\n"+
		"  - variant_id: idle\n    agent: {type: command, command: [/bin/true]}\n"), 0o644)
	runs := t.TempDir()
	r = ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, exp)
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1 (idle fails)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	s := readSummary(t, onlyDir(t, runs))
	if s.Variants[0].VariantID != "calls" || s.Variants[0].Passed != 1 || s.Variants[1].Passed != 0 || s.Variants[1].Runs != 1 {
		t.Fatalf("summary %+v", s.Variants)
	}
	r = ceval(t, "audit", "--namespace", ctrtest.Namespace, "--runs-dir", t.TempDir(), "-j", "2", tf)
	if r.code != 0 || !regexp.MustCompile(`with-mcp\s+ok\s+SUCCESS 1.00`).MatchString(r.stdout) {
		t.Fatalf("audit: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// quoteYAML is s as a double-quoted YAML scalar.
func quoteYAML(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
