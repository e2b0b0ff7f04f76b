package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/task"
)

func TestSplitWordsIsOneSimpleCommandWithoutExpansion(t *testing.T) {
	for in, want := range map[string][]string{
		`python3 /opt/agent.py --fast`:   {"python3", "/opt/agent.py", "--fast"},
		`/bin/sh -c 'echo hi > out.txt'`: {"/bin/sh", "-c", "echo hi > out.txt"},
		`echo "a \"b\" \$HOME" c\ d`:     {"echo", `a "b" $HOME`, "c d"},
		`x a'b'"c"`:                      {"x", "abc"},
		`   spaced   out  `:              {"spaced", "out"},
	} {
		got, err := splitWords(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`echo hi | cat`, `a; b`, `a && b`, `a > f`, `X=1 a`, `echo $HOME`, `echo "$HOME"`,
		"echo `id`", `echo $(id)`, `ls *.py`, `cat ~/x`, `a &`, `'unterminated`, "a\x01b"} {
		if got, err := splitWords(bad); err == nil {
			t.Errorf("splitWords(%q) = %q, want an error (it needs a shell)", bad, got)
		}
	}
}

func TestApplyAgentReplacesTheTasksAgent(t *testing.T) {
	base := func() *task.Task {
		return &task.Task{ID: "t", Path: "t.yaml", RunLimits: &task.RunLimits{MaxTurns: 3}}
	}
	tk := base()
	if err := applyAgent(tk, "none"); err != nil || tk.Agent.Type != task.AgentCommand || tk.RunLimits != nil {
		t.Errorf("none: %+v %v", tk.Agent, err)
	}
	tk = base()
	if err := applyAgent(tk, "python3 a.py"); err != nil || !reflect.DeepEqual(tk.Agent.Command, []string{"python3", "a.py"}) {
		t.Errorf("command: %+v %v", tk.Agent, err)
	}
	tk = base()
	if err := applyAgent(tk, "oracle"); err == nil || !strings.Contains(err.Error(), "has no solution") {
		t.Errorf("oracle without a solution: %v", err)
	}
	tk = base()
	if err := applyAgent(tk, task.AgentClaudeCode); err != nil || tk.Agent.Type != task.AgentClaudeCode || tk.Agent.Gateway == nil {
		t.Errorf("claude-code: %+v %v", tk.Agent, err)
	}
	if err := checkAgentSpec("a | b"); err == nil {
		t.Error("checkAgentSpec accepted a pipe")
	}
}

// An imported task names no agent: `ceval run --agent` runs it as Harbor's `-a` does.
func TestRunWithAgentOverride(t *testing.T) {
	_, _ = ctrtest.Connect(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	os.WriteFile(filepath.Join(dir, "solve.sh"), []byte("#!/bin/sh\necho solved > out.txt\n"), 0o644)
	os.WriteFile(p, []byte("task_id: noagent\ninitial_prompt: write out.txt\nsolution: {script: solve.sh}\n"+
		"success_criteria: [{type: file_contains, path: out.txt, includes: [solved]}]\n"), 0o644)
	run := func(agent string) cliResult {
		return ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", t.TempDir(), "--agent", agent, p)
	}
	if r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", t.TempDir(), p); r.code != 2 || !strings.Contains(r.stderr, "--agent") {
		t.Errorf("no agent, no --agent: exit %d, stderr %q (want 2, naming --agent)", r.code, r.stderr)
	}
	if r := run("oracle"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "SUCCESS") {
		t.Errorf("--agent oracle: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := run("none"); r.code != exitFailure {
		t.Errorf("--agent none: exit %d, want %d (the workspace as prepared fails)\n%s", r.code, exitFailure, r.stderr)
	}
	if r := run("/bin/sh -c 'echo solved > out.txt'"); r.code != 0 {
		t.Errorf("--agent command: exit %d\n%s", r.code, r.stderr)
	}
	if r := run("echo solved | tee out.txt"); r.code != 2 || !strings.Contains(r.stderr, "/bin/sh -c") {
		t.Errorf("--agent with a pipe: exit %d, stderr %q (want 2 and the /bin/sh -c hint)", r.code, r.stderr)
	}
}
