package supervisor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/testtree"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// stepsScript is the model of TestRealCLIsRunATwoStepTaskInOneSession for one CLI: turns
// are answered by conversation depth, so turns 2 and 3 (step 2's) are reached only by a
// request that carries step 1's conversation, that is, by a CLI that continued its session.
// A fresh session would get turn 0 again and never write step2.txt. Step 2's shell command
// reads the file step 1 wrote: the workspace carried over.
func stepsScript(api, writeTool, writeInput, shellTool, shellInput string) string {
	return `version: 1
api: ` + api + `
turns:
  - text: "Step one."
    tool_calls:
      - name: ` + writeTool + `
        input: ` + writeInput + `
    usage: {input_tokens: 1000, output_tokens: 20}
  - text: "Step one done."
    usage: {input_tokens: 1100, output_tokens: 5}
  - text: "Step two."
    tool_calls:
      - name: ` + shellTool + `
        input: {` + shellInput + `: "cat step1.txt > step2.txt && echo two >> step2.txt"}
    usage: {input_tokens: 1200, output_tokens: 20}
  - text: "Step two done."
    usage: {input_tokens: 1300, output_tokens: 5}
`
}

// TestRealCLIsRunATwoStepTaskInOneSession runs the real Claude Code and Codex CLIs through
// the gateway in replay over a two-step task: step 2's container continues (Claude Code
// --continue) or resumes (Codex exec resume --last) the session step 1's left in the shared
// home, so step 2's first request carries step 1's prompt and answer; step 2 builds on the
// file step 1 wrote; result.json scores each step and task_steps/1/ keeps step 1's
// sessions. Without the resume flags step 2 starts a fresh conversation, gets turn 0 again
// and fails.
func TestRealCLIsRunATwoStepTaskInOneSession(t *testing.T) {
	c, ctx := withAgentImage(t)
	for _, cli := range []struct{ name, agent, script string }{
		{"claude-code", "{type: claude-code, model: claude-sonnet-4-5",
			stepsScript("anthropic", "Write", `{file_path: /workspace/step1.txt, content: "one\n"}`, "Bash", "command")},
		{"codex", "{type: codex, model: gpt-5-codex",
			stepsScript("openai", "exec_command", `{cmd: "echo one > step1.txt"}`, "exec_command", "cmd")},
	} {
		t.Run(cli.name, func(t *testing.T) {
			first, second := "Write step1.txt "+canary(t), "Now write step2.txt "+canary(t)
			dir := testtree.New(t, map[string]string{
				"model.yaml": cli.script,
				"task.yaml": `task_id: cli-steps
agent: ` + cli.agent + `, gateway: {mode: replay, fixture: model.yaml}}
sandbox:
  image: ceval.local/agent:latest
  limits: {timeout: 2m, memory_mb: 1024, cpus: 2, pids: 128, disk_mb: 64}
step_score: mean
steps:
  - name: first
    prompt: ` + first + `
    success_criteria:
      - {type: file_contains, path: step1.txt, includes: [one]}
  - name: second
    prompt: ` + second + `
    success_criteria:
      - {type: file_contains, path: step2.txt, includes: [one, two]}
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
			if res.Status != record.StatusSuccess || res.Score != 1 || len(res.TaskSteps) != 2 ||
				res.TaskSteps[0].Status != record.StatusSuccess || res.TaskSteps[1].Status != record.StatusSuccess ||
				res.TaskSteps[0].Score != 1 || res.TaskSteps[1].Score != 1 || res.StepScore != task.StepScoreMean {
				stdout, _ := os.ReadFile(filepath.Join(res.Dir, record.StdoutFile))
				stderr, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
				t.Fatalf("status %s %v, steps %+v\nstep 2's stdout:\n%s\nstderr:\n%s", res.Status, res.Score, res.TaskSteps, tail(stdout), tail(stderr))
			}
			// result.json on disk says the same, step by step.
			var onDisk record.Result
			b, err := os.ReadFile(filepath.Join(res.Dir, record.ResultFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &onDisk); err != nil {
				t.Fatal(err)
			}
			if len(onDisk.TaskSteps) != 2 || onDisk.TaskSteps[0].Name != "first" || onDisk.TaskSteps[1].Name != "second" ||
				onDisk.TaskSteps[0].Score != 1 || onDisk.TaskSteps[1].Score != 1 {
				t.Errorf("result.json's task_steps %+v", onDisk.TaskSteps)
			}
			// The gateway answered all four turns across both containers, none missed.
			if g := res.Gateway; g == nil || g.Turns != 4 || g.ReplayMisses != 0 {
				t.Fatalf("gateway %+v", res.Gateway)
			}
			// Step 2's first request (depth 2) is one conversation with step 1's: it holds step
			// 1's prompt and step 2's.
			carried := false
			for _, call := range readCalls(t, filepath.Join(res.Dir, record.ModelCallsFile)) {
				req := string(call.Request)
				if call.Tools && call.Depth == 2 && strings.Contains(req, first) && strings.Contains(req, second) {
					carried = true
				}
				if call.Tools && call.Depth < 2 && strings.Contains(req, second) {
					t.Errorf("a request at depth %d holds step 2's prompt", call.Depth)
				}
			}
			if !carried {
				t.Errorf("no request at depth 2 carries step 1's prompt with step 2's: step 2 did not continue the session")
			}
			// Each step's session files were kept: step 1's under task_steps/1/.
			for _, p := range []string{filepath.Join(record.TaskStepsDir, "1", SessionsDir), SessionsDir} {
				if _, err := os.Stat(filepath.Join(res.Dir, p)); err != nil {
					t.Errorf("sessions: %v", err)
				}
			}
			if b, err := os.ReadFile(filepath.Join(res.Dir, record.TaskStepsDir, "1", record.WorkspaceDir, "step1.txt")); err != nil || string(b) != "one\n" {
				t.Errorf("step 1's kept workspace: %q %v", b, err)
			}
		})
	}
}
