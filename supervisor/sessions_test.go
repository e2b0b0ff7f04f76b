package supervisor

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"ceval.dev/ceval/task"
)

func TestCopySessionsCopiesTheCLIsTranscripts(t *testing.T) {
	home, run := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(home, ".codex/sessions/2026/11/29"), 0o755))
	must(t, os.WriteFile(filepath.Join(home, ".codex/sessions/2026/11/29/rollout-1.jsonl"), []byte("{\"type\":\"session_meta\"}\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(home, ".codex/config.toml"), []byte("not a session file"), 0o644))
	copied, notes, err := copySessions(task.AgentCodex, home, run)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"agent_sessions/.codex/sessions"}; !reflect.DeepEqual(copied, want) || len(notes) != 0 {
		t.Fatalf("copied %v notes %v, want %v and no notes", copied, notes, want)
	}
	if _, err := os.Stat(filepath.Join(run, "agent_sessions/.codex/sessions/2026/11/29/rollout-1.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(run, "agent_sessions/.codex/config.toml")); !os.IsNotExist(err) {
		t.Fatalf("a file outside the session directory was copied: %v", err)
	}
}

// The home is the agent's: a session directory that is a symlink to the host's /etc copies
// nothing, and a link inside is recorded, never followed.
func TestCopySessionsFollowsNoLink(t *testing.T) {
	home, run := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(home, ".claude"), 0o755))
	must(t, os.Symlink("/etc", filepath.Join(home, ".claude/projects")))
	copied, _, err := copySessions(task.AgentClaudeCode, home, run)
	if err != nil || len(copied) != 0 {
		t.Fatalf("copied %v, err %v; want nothing copied and no error", copied, err)
	}
	if _, err := os.Stat(filepath.Join(run, SessionsDir)); !os.IsNotExist(err) {
		t.Fatalf("something was written: %v", err)
	}

	must(t, os.Remove(filepath.Join(home, ".claude/projects")))
	must(t, os.MkdirAll(filepath.Join(home, ".claude/projects/-workspace"), 0o755))
	must(t, os.Symlink("/etc/passwd", filepath.Join(home, ".claude/projects/-workspace/s.jsonl")))
	if _, _, err := copySessions(task.AgentClaudeCode, home, run); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(run, "agent_sessions/.claude/projects/-workspace/s.jsonl"))
	if err == nil {
		t.Fatalf("the link was recreated or followed on disk: %v", fi.Mode())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
