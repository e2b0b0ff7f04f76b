package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
	"golang.org/x/sys/unix"
)

// runIterFake runs doc (a command-agent task) on rt without a daemon.
func runIterFake(t *testing.T, rt *fakeRuntime, doc string) (*record.Result, error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	return Run(context.Background(), tk, Options{RunsDir: t.TempDir(), InitDir: t.TempDir(), Backend: rt, LookupEnv: hostEnv(nil)})
}

// TestIterationsRunTheAgentAgainWithFeedbackUntilSuccess: an agent that writes the right
// file only once its prompt holds the failed criterion's description succeeds at
// iteration 2, both iterations are recorded (result and files), and the follow-up prompt
// and CEVAL_ITERATION reach the second container.
func TestIterationsRunTheAgentAgainWithFeedbackUntilSuccess(t *testing.T) {
	var prompts []string
	rt := &fakeRuntime{}
	rt.agent = func(ws, home string) (*sandbox.Outcome, error) {
		p, err := os.ReadFile(filepath.Join(home, ".ceval", "prompt.md"))
		if err != nil {
			return nil, err
		}
		prompts = append(prompts, string(p))
		content := "wrong\n"
		if strings.Contains(string(p), "hello.txt says hello") {
			content = "hello\n"
		}
		return exited(0), os.WriteFile(filepath.Join(ws, "hello.txt"), []byte(content), 0o644)
	}
	doc := agentTask("iter", "true", "  - {type: file_contains, path: hello.txt, includes: [hello], description: hello.txt says hello}\n",
		"iterations: {max: 3, feedback: descriptions}\n")
	res, err := runIterFake(t, rt, doc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" || res.IterationsUsed != 2 || len(res.Iterations) != 2 {
		t.Fatalf("status %s, iterations_used %d, iterations %+v", res.Status, res.IterationsUsed, res.Iterations)
	}
	if it := res.Iterations; it[0].Status != "FAILURE" || it[0].Prompt != PromptInitial || it[1].Status != "SUCCESS" || it[1].Prompt != PromptFeedback || it[1].Over != "SUCCESS" {
		t.Fatalf("iterations %+v", it)
	}
	if len(prompts) != 2 || prompts[0] != "do the task" || !strings.Contains(prompts[1], "hello.txt says hello") {
		t.Fatalf("prompts %q", prompts)
	}
	if len(rt.again) != 1 || !slices.Contains(rt.again[0].Env, "CEVAL_ITERATION=2") || !slices.Contains(rt.cfg.Env, "CEVAL_ITERATION=2") {
		t.Fatalf("second container: %+v", rt.again)
	}
	for _, p := range []string{"iterations/1/result.json", "iterations/1/workspace/hello.txt", "iterations/1/" + record.StdoutFile, "iterations/2/result.json", "workspace/hello.txt", "result.json"} {
		if _, err := os.Stat(filepath.Join(res.Dir, p)); err != nil {
			t.Errorf("run directory: %v", err)
		}
	}
	first, err := os.ReadFile(filepath.Join(res.Dir, "iterations/1/workspace/hello.txt"))
	if err != nil || string(first) != "wrong\n" {
		t.Errorf("iteration 1's snapshot holds %q, %v", first, err)
	}
	onDisk, err := record.ReadResult(res.Dir)
	if err != nil || onDisk.IterationsUsed != 2 || onDisk.Status != "SUCCESS" {
		t.Fatalf("result.json %+v, %v", onDisk, err)
	}
}

// TestIterationsStopAtTheirMax: an agent that never fixes its work runs iterations.max
// times and no more; the result is the last iteration's.
func TestIterationsStopAtTheirMax(t *testing.T) {
	runs := 0
	rt := &fakeRuntime{agent: func(ws, _ string) (*sandbox.Outcome, error) { runs++; return exited(0), nil }}
	res, err := runIterFake(t, rt, agentTask("iter", "true", "  - {type: file_exists, path: hello.txt}\n", "iterations: {max: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if runs != 3 || res.IterationsUsed != 3 || res.Status != "FAILURE" || res.Iterations[2].Over != "iterations.max 3 reached" {
		t.Fatalf("runs %d, result %+v", runs, res.Iterations)
	}
}

func TestFollowUpArgvResumesTheCLIsSession(t *testing.T) {
	for _, c := range []struct {
		agent task.Agent
		want  string
	}{
		{task.Agent{Type: task.AgentCommand, Command: []string{"/bin/sh", "-c", "x"}}, "/bin/sh -c x"},
		{task.Agent{Type: task.AgentClaudeCode, Model: "m1"}, "claude -p NEXT --continue --output-format stream-json --verbose --dangerously-skip-permissions --model m1"},
		{task.Agent{Type: task.AgentCodex, Model: "m2"}, "codex exec resume --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --model m2 --last NEXT"},
	} {
		a := c.agent
		argv, err := FollowUpArgv(&task.Task{ID: "t", Prompt: "FIRST", Agent: &a}, "NEXT")
		if err != nil || strings.Join(argv, " ") != c.want {
			t.Errorf("%s: %q, %v; want %s", a.Type, argv, err, c.want)
		}
	}
}

func TestParseUserTurn(t *testing.T) {
	for _, c := range []struct {
		in     string
		done   bool
		prompt string
		bad    bool
	}{
		{`{"done": true}`, true, "", false},
		{`{"done": false, "prompt": "add tests"}`, false, "add tests", false},
		{`{"done": false}`, false, "", true},
		{`{"done": false, "prompt": "x"} more`, false, "", true},
		{`{"done": false, "prompt": "x", "score": 1}`, false, "", true},
		{`sure, here you go`, false, "", true},
	} {
		done, p, err := ParseUserTurn(c.in)
		if (err != nil) != c.bad || done != c.done || p != c.prompt {
			t.Errorf("ParseUserTurn(%q) = %v %q %v", c.in, done, p, err)
		}
	}
}

// TestIterationsShareTheTaskTimeLimit: each iteration's container gets what is left of
// sandbox.limits.timeout, and no iteration starts once it is spent.
func TestIterationsShareTheTaskTimeLimit(t *testing.T) {
	runs := 0
	rt := &fakeRuntime{agent: func(ws, _ string) (*sandbox.Outcome, error) {
		runs++
		out := exited(0)
		out.Exit.Duration = 40 * time.Second
		return out, nil
	}}
	res, err := runIterFake(t, rt, agentTask("iter", "true", "  - {type: file_exists, path: hello.txt}\n", "iterations: {max: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 || len(rt.again) != 1 || rt.again[0].Timeout != 20*time.Second {
		t.Fatalf("runs %d, again %+v", runs, rt.again)
	}
	if last := res.Iterations[len(res.Iterations)-1]; last.Over != "the task's time limit is spent" || res.Timings.Agent != 80 {
		t.Fatalf("iterations %+v, agent time %v", res.Iterations, res.Timings.Agent)
	}
}

func TestRegradeUpdatesOnlyTheLastIteration(t *testing.T) {
	res := &record.Result{Iterations: []record.Iteration{{N: 1, Status: "FAILURE", Score: 0}, {N: 2, Status: "FAILURE", Score: 0.5}}}
	res.Status, res.Score = "SUCCESS", 1
	regradeLastIteration(res)
	if it := res.Iterations; it[0].Status != "FAILURE" || it[0].Score != 0 || it[1].Status != "SUCCESS" || it[1].Score != 1 {
		t.Fatalf("iterations %+v", it)
	}
}

// TestSimulatedUserNeverSeesACredentialTheAgentPrinted: an agent passed a credential prints
// it as its last message; the simulated user's model input and call log hold it redacted.
func TestSimulatedUserNeverSeesACredentialTheAgentPrinted(t *testing.T) {
	const secret = "sk-live-PASSED-THROUGH-4242"
	rt := &fakeRuntime{}
	rt.agent = func(ws, _ string) (*sandbox.Outcome, error) {
		return exited(0), os.WriteFile(rt.cfg.StdoutPath, []byte("my key is "+secret+"\n"), 0o600)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "user.yaml"), []byte("answers: [{done: true}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "task_id: sim\ninitial_prompt: do the task\nagent:\n  type: command\n  command: [x]\n  env_passthrough: [API_TOKEN]\n" +
		"simulated_user: {instructions: be a user, max_turns: 2, fixture: user.yaml}\nsuccess_criteria:\n  - {type: file_exists, path: hello.txt}\n"
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	res, err := Run(context.Background(), tk, Options{RunsDir: t.TempDir(), InitDir: t.TempDir(), Backend: rt,
		Allow: Allow{Env: []string{"API_TOKEN"}}, LookupEnv: hostEnv(map[string]string{"API_TOKEN": secret})})
	if err != nil {
		t.Fatal(err)
	}
	calls, err := os.ReadFile(filepath.Join(res.Dir, SimulatedUserCallsFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(calls), secret) || !strings.Contains(string(calls), "my key is [REDACTED]") {
		t.Fatalf("simulated user calls:\n%s", calls)
	}
}

// TestAgentThatFillsItsHomeKeepsItsFailureNotError: after a failing iteration, ceval writes
// the follow-up prompt into the agent's home, which the agent owns and which is capped. An
// agent that filled it (here a tiny tmpfs over the home, filled to ENOSPC, with .ceval gone)
// ends its iterations with the FAILURE it earned: the run must not become an ERROR that
// leaves it out of the pass rate and gives it a re-run.
func TestAgentThatFillsItsHomeKeepsItsFailureNotError(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	runs := 0
	rt := &fakeRuntime{}
	rt.agent = func(ws, home string) (*sandbox.Outcome, error) {
		runs++
		if err := unix.Mount("tmpfs", home, "tmpfs", 0, "size=64k,nr_inodes=16"); err != nil {
			return nil, err
		}
		t.Cleanup(func() { unix.Unmount(home, unix.MNT_DETACH) })
		for i := 0; ; i++ {
			if err := os.WriteFile(filepath.Join(home, fmt.Sprintf("fill-%d", i)), make([]byte, 4096), 0o644); err != nil {
				break
			}
		}
		return exited(0), nil
	}
	res, err := runIterFake(t, rt, agentTask("iter", "true", "  - {type: file_exists, path: hello.txt, description: hello.txt exists}\n",
		"iterations: {max: 3, feedback: descriptions}\n"))
	if err != nil {
		t.Fatalf("err %v: an agent that filled its home made the run fail", err)
	}
	if res.Status != "FAILURE" || runs != 1 || res.IterationsUsed != 1 || !strings.Contains(res.Iterations[0].Over, "follow-up prompt could not be written") {
		t.Fatalf("status %s after %d runs, iterations %+v; want FAILURE after 1, its iterations over", res.Status, runs, res.Iterations)
	}
}
