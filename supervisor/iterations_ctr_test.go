package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/testtree"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// TestCommandAgentFixesItsOutputAfterFeedback runs, against the real containerd, a command
// agent that writes the wrong answer until its prompt file holds the failed criterion's
// description: SUCCESS at iteration 2, with iteration 1's snapshot and logs kept, both
// containers attested, and the second agent seeing the first one's home.
func TestCommandAgentFixesItsOutputAfterFeedback(t *testing.T) {
	script := `echo "iteration $CEVAL_ITERATION"; ` +
		`if grep -q "answer.txt holds the answer" "$CEVAL_PROMPT_FILE"; then echo right > answer.txt; else echo wrong > answer.txt; fi; ` +
		`echo "$CEVAL_ITERATION" >> /home/agent/seen`
	doc := agentTask("fixes", script, "  - {type: file_contains, path: answer.txt, includes: [right], description: answer.txt holds the answer}\n",
		"iterations: {max: 3, feedback: descriptions}\n")
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" || res.IterationsUsed != 2 || len(res.Iterations) != 2 || res.Iterations[0].Status != "FAILURE" || res.Iterations[0].Score != 0 {
		t.Fatalf("status %s, iterations %+v", res.Status, res.Iterations)
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(res.Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("iterations/1/workspace/answer.txt"); got != "wrong\n" {
		t.Errorf("iteration 1's snapshot: %q", got)
	}
	if got := read("workspace/answer.txt"); got != "right\n" {
		t.Errorf("iteration 2's snapshot: %q", got)
	}
	if got := read("iterations/1/" + record.StdoutFile); got != "iteration 1\n" {
		t.Errorf("iteration 1's stdout: %q", got)
	}
	if got := read(record.StdoutFile); got != "iteration 2\n" {
		t.Errorf("iteration 2's stdout: %q", got)
	}
	r1, err := record.ReadResult(filepath.Join(res.Dir, "iterations", "1"))
	if err != nil || r1.Status != "FAILURE" {
		t.Fatalf("iterations/1/result.json: %+v %v", r1, err)
	}
	if res.Isolation == nil || res.Isolation.UID != 2000 || res.Isolation.CapEff != "0000000000000000" {
		t.Errorf("the second container's attestation: %+v", res.Isolation)
	}
	events := read(record.EventsFile)
	if n := strings.Count(events, `"attested"`); n != 2 {
		t.Errorf("%d attestations in events, want one per container", n)
	}
}

// TestSimulatedUserConversationInReplay runs a command agent under a simulated user whose
// answers come from a replay fixture: the user's first answer becomes the agent's second
// prompt, its second ends the conversation; the calls are recorded with what the model was
// shown (the instructions and the agent's last message, framed as untrusted).
func TestSimulatedUserConversationInReplay(t *testing.T) {
	script := `cat "$CEVAL_PROMPT_FILE" > "msg-$CEVAL_ITERATION.txt"; echo "I did iteration $CEVAL_ITERATION"`
	files := map[string]string{"user.yaml": "answers:\n  - {done: false, prompt: \"Please also write a haiku.\"}\n  - {done: true}\n"}
	doc := agentTask("conv", script, "  - {type: file_exists, path: haiku.txt, description: haiku.txt exists}\n",
		"simulated_user: {instructions: \"You want a haiku about the sea.\", max_turns: 5, fixture: user.yaml}\n")
	res, err := runTask(t, doc, files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.IterationsUsed != 2 || res.Iterations[1].Prompt != PromptSimulatedUser || res.Iterations[1].Over != "the simulated user ended the conversation" {
		t.Fatalf("iterations %+v", res.Iterations)
	}
	got, err := os.ReadFile(filepath.Join(res.Dir, "workspace", "msg-2.txt"))
	if err != nil || string(got) != "Please also write a haiku." {
		t.Fatalf("the second prompt: %q %v", got, err)
	}
	calls, err := os.ReadFile(filepath.Join(res.Dir, SimulatedUserCallsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "You want a haiku about the sea.") || !strings.Contains(lines[0], "I did iteration 1") ||
		!strings.Contains(lines[1], "I did iteration 2") || !strings.Contains(lines[0], `"mode":"replay"`) {
		t.Fatalf("simulated user calls:\n%s", calls)
	}
}

// claudeIterationsScript is the model of TestRealClaudeCodeResumesItsSessionAfterFeedback:
// turns are answered by conversation depth (assistant turns the request already holds), so
// turns 2 and 3 are reached only by a request that carries iteration 1's conversation, that
// is, by a CLI that resumed its session. A fresh session would get turn 0 again: "wrong".
const claudeIterationsScript = `version: 1
api: anthropic
turns:
  - text: "Writing the answer."
    tool_calls:
      - name: Write
        input: {file_path: /workspace/answer.txt, content: "wrong\n"}
    usage: {input_tokens: 1000, output_tokens: 20}
  - text: "Done."
    usage: {input_tokens: 1100, output_tokens: 5}
  - text: "Fixing it."
    tool_calls:
      - name: Write
        input: {file_path: /workspace/answer.txt, content: "right\n"}
    usage: {input_tokens: 1200, output_tokens: 20}
  - text: "Fixed."
    usage: {input_tokens: 1300, output_tokens: 5}
`

// codexIterationsScript: like claudeIterationsScript, for Codex's Responses API.
const codexIterationsScript = `version: 1
api: openai
turns:
  - text: "Writing the answer."
    tool_calls:
      - name: exec_command
        input: {cmd: "echo wrong > answer.txt"}
    usage: {input_tokens: 900, output_tokens: 20}
  - text: "Done."
    usage: {input_tokens: 1000, output_tokens: 5}
  - text: "Fixing it."
    tool_calls:
      - name: exec_command
        input: {cmd: "echo right > answer.txt"}
    usage: {input_tokens: 1100, output_tokens: 20}
  - text: "Fixed."
    usage: {input_tokens: 1200, output_tokens: 5}
`

// TestRealCLIsResumeTheirSessionAfterFeedback runs the real Claude Code and Codex CLIs
// through the gateway in replay mode for two iterations: the second container continues
// (Claude Code --continue) or resumes (Codex exec resume --last) the session the first left
// in the shared home, and succeeds. With run_limits.max_turns 3, the budget spans both
// iterations: the gateway refuses the fourth turn (iteration 2's second), whatever the
// container. The subtests share one import of the agent image.
func TestRealCLIsResumeTheirSessionAfterFeedback(t *testing.T) {
	c, ctx := withAgentImage(t)
	for _, cli := range []struct{ name, agent, script, limits, status string }{
		{"claude-code", "{type: claude-code, model: claude-sonnet-4-5", claudeIterationsScript, "", "SUCCESS"},
		{"codex", "{type: codex, model: gpt-5-codex", codexIterationsScript, "", "SUCCESS"},
		{"claude-code-budget", "{type: claude-code, model: claude-sonnet-4-5", claudeIterationsScript, "run_limits: {max_turns: 3}\n", record.StatusMaxTurns},
	} {
		t.Run(cli.name, func(t *testing.T) {
			dir := testtree.New(t, map[string]string{
				"model.yaml": cli.script,
				"task.yaml": `task_id: cli-iterations
initial_prompt: Write the answer to answer.txt.
agent: ` + cli.agent + `, gateway: {mode: replay, fixture: model.yaml}}
sandbox:
  image: ceval.local/agent:latest
  limits: {timeout: 2m, memory_mb: 1024, cpus: 2, pids: 128, disk_mb: 64}
iterations: {max: 2, feedback: descriptions}
` + cli.limits + `success_criteria:
  - {type: file_contains, path: answer.txt, includes: [right], description: answer.txt holds the right answer}
`})
			tk, err := task.Load(filepath.Join(dir, "task.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			defer tk.Close()
			res, err := runLoaded(t, ctx, c, tk, Options{LookupEnv: func(string) (string, bool) { return "", false }})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != cli.status || res.IterationsUsed != 2 || res.Iterations[0].Status != "FAILURE" {
				stdout, _ := os.ReadFile(filepath.Join(res.Dir, record.StdoutFile))
				stderr, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
				t.Fatalf("status %s, iterations %+v\nstdout:\n%s\nstderr:\n%s", res.Status, res.Iterations, tail(stdout), tail(stderr))
			}
			// The gateway served all four turns (three under the budget), across both
			// containers, and no request missed.
			if g := res.Gateway; g == nil || g.ReplayMisses != 0 || (cli.limits == "" && g.Turns != 4) ||
				(cli.limits != "" && (g.Turns != 3 || g.ExceededLimit != "max_turns 3" || res.Agent.StoppedBy == "")) {
				t.Fatalf("gateway %+v, agent %+v", res.Gateway, res.Agent)
			}
			// Both iterations' session files were kept.
			for _, p := range []string{"iterations/1/" + SessionsDir, SessionsDir} {
				if _, err := os.Stat(filepath.Join(res.Dir, p)); err != nil {
					t.Errorf("sessions: %v", err)
				}
			}
		})
	}
}
