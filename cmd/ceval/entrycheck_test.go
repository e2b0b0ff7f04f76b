package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every entry point refuses bad input before it reaches containerd (an unreachable address
// here, so reaching it is exit 3 naming containerd) or creates anything under --runs-dir.

// simulatedUserWithoutJudge writes a task with a simulated_user and a config with no judge
// model (which a simulated user needs): every entry point refuses the task.
func simulatedUserWithoutJudge(t *testing.T) (taskPath, configPath string) {
	dir := t.TempDir()
	taskPath, configPath = filepath.Join(dir, "task.yaml"), filepath.Join(dir, "config.yaml")
	os.WriteFile(taskPath, []byte("task_id: asks\ninitial_prompt: p\nagent: {type: command, command: [true]}\n"+
		"simulated_user: {instructions: be a user, max_turns: 2}\nsuccess_criteria: [{type: file_exists, path: x}]\n"), 0o644)
	os.WriteFile(configPath, nil, 0o600)
	return taskPath, configPath
}

func TestAuditRefusesABadTaskBeforeAnyStarts(t *testing.T) {
	p, cfg := simulatedUserWithoutJudge(t)
	runs := t.TempDir()
	r := ceval(t, "audit", "--config", cfg, "--containerd-address", "/nonexistent/containerd.sock", "--runs-dir", runs, "../../examples/audit/sound/task.yaml", p)
	if r.code != exitInvalid || !strings.Contains(r.stderr, p+": ") || !strings.Contains(r.stderr, "simulated_user") || strings.Contains(r.stderr, "containerd") {
		t.Errorf("exit %d, stderr %q; want 2 naming %s and simulated_user before containerd is reached", r.code, r.stderr, p)
	}
	if left, _ := os.ReadDir(runs); len(left) != 0 {
		t.Errorf("the refused audit wrote %v", left)
	}
}

func TestSandboxExecRefusesABadConfigBeforeContainerd(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("colour: red\n"), 0o600)
	r := ceval(t, "sandbox", "exec", "--config", cfg, "--containerd-address", "/nonexistent/containerd.sock", "--", "true")
	if r.code != exitInvalid || !strings.Contains(r.stderr, "colour") || strings.Contains(r.stderr, "containerd") {
		t.Errorf("exit %d, stderr %q; want 2 naming the config's bad field before containerd is reached", r.code, r.stderr)
	}
}
