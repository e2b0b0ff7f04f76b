package main

import (
	"strings"
	"testing"
)

func TestImagesBuildAgentRefusesUnknownCLIBeforeConnecting(t *testing.T) {
	r := ceval(t, "images", "build-agent", "--with", "claude-code,aider", "--containerd-address", "/nonexistent/containerd.sock")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown agent CLI "aider" in --with; choose from: claude-code, codex`) {
		t.Fatalf("exit %d, stderr %q; want 2 and the choices", r.code, r.stderr)
	}
	r = ceval(t, "images", "build-agent", "--help")
	for _, want := range []string{"@anthropic-ai/claude-code-linux-x64-musl@2.1.332", "@openai/codex@0.169.0-linux-x64", "apt-get install musl bash-static", "mmdebstrap", "--minimal", "--offline", "--force"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("build-agent --help (exit %d) lacks %q:\n%s", r.code, want, r.stdout)
		}
	}
}
