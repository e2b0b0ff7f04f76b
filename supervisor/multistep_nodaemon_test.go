package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/kubernetes"
	"ceval.dev/ceval/task"
)

// multiStepTask is a two-step task: step 1 wants a.txt, step 2 (whose files bring
// given.txt) wants b.txt holding "b"; extra is added at the top level.
func multiStepTask(extra string) string {
	return `task_id: two
agent: {type: command, command: [/bin/sh, -c, "true"]}
sandbox:
  limits: {timeout: 60s}
steps:
  - name: first
    prompt: write a.txt
    success_criteria:
      - {type: file_exists, path: a.txt}
  - name: second
    prompt: write b.txt
    files: step2
    success_criteria:
      - {type: file_exists, path: b.txt}
      - {type: file_contains, path: b.txt, includes: [b]}
` + extra
}

// stepAgent acts by the prompt in its home: solve says which steps it solves (1-based);
// seen records, per run, whether given.txt (step 2's file) was in the workspace.
func stepAgent(solve []int, seen *[]bool) func(ws, home string) (*sandbox.Outcome, error) {
	n := 0
	return func(ws, home string) (*sandbox.Outcome, error) {
		n++
		_, err := os.Stat(filepath.Join(ws, "given.txt"))
		*seen = append(*seen, err == nil)
		if !slices.Contains(solve, n) {
			return exited(1), nil
		}
		p, err := os.ReadFile(filepath.Join(home, ".ceval", "prompt.md"))
		if err != nil {
			return nil, err
		}
		switch string(p) {
		case "write a.txt":
			return exited(0), os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
		case "write b.txt":
			return exited(0), os.WriteFile(filepath.Join(ws, "b.txt"), []byte("b"), 0o644)
		}
		return exited(2), nil
	}
}

func runMultiStep(t *testing.T, doc string, rt *fakeRuntime) *record.Result {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "step2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "step2", "given.txt"), []byte("given"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	res, err := Run(context.Background(), tk, Options{RunsDir: t.TempDir(), InitDir: t.TempDir(), Backend: rt, LookupEnv: hostEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func stepStatuses(res *record.Result) []string {
	var out []string
	for _, s := range res.TaskSteps {
		out = append(out, s.Status)
	}
	return out
}

// TestMultiStepScoresEachStep: an agent that solves step 1 and not step 2 gets each step's
// grade; step 2's files reach the workspace before step 2 only; the task is FAILURE under
// the default rule (all) with every step's criteria in order, and each step's files kept.
func TestMultiStepScoresEachStep(t *testing.T) {
	var seen []bool
	rt := &fakeRuntime{agent: stepAgent([]int{1}, &seen)}
	res := runMultiStep(t, multiStepTask(""), rt)
	if got := stepStatuses(res); !slices.Equal(got, []string{"SUCCESS", "FAILURE"}) {
		t.Fatalf("step statuses %v", got)
	}
	if res.Status != record.StatusFailure || res.Score != 0 || res.StepScore != task.StepScoreAll || !res.Complete {
		t.Fatalf("task %s %v (rule %q, complete %v); want FAILURE 0 by all", res.Status, res.Score, res.StepScore, res.Complete)
	}
	if !slices.Equal(seen, []bool{false, true}) {
		t.Fatalf("given.txt in the workspace per step: %v; want only in step 2", seen)
	}
	if len(res.Criteria) != 3 || res.Criteria[0].Status != record.CriterionPass || res.Criteria[1].Status != record.CriterionFail {
		t.Fatalf("criteria %+v", res.Criteria)
	}
	if len(rt.again) != 1 || !slices.Contains(rt.again[0].Env, "CEVAL_STEP=2") || !slices.Contains(rt.again[0].Env, "CEVAL_STEP_NAME=second") {
		t.Fatalf("again %+v: want one more run with CEVAL_STEP=2", rt.again)
	}
	if !slices.Contains(rt.cfg.Env, "CEVAL_STEP=2") {
		t.Fatalf("env %v", rt.cfg.Env)
	}
	// step 1's snapshot moved aside; each step has its result.json; the run dir's is the task's
	for _, f := range []string{"task_steps/1/workspace/a.txt", "task_steps/1/result.json", "task_steps/2/result.json", "workspace/given.txt"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	onDisk, err := record.ReadResult(res.Dir)
	if err != nil || len(onDisk.TaskSteps) != 2 || onDisk.Status != record.StatusFailure {
		t.Fatalf("result.json %+v, %v", onDisk, err)
	}
}

func TestMultiStepSolvedIsSuccess(t *testing.T) {
	var seen []bool
	res := runMultiStep(t, multiStepTask(""), &fakeRuntime{agent: stepAgent([]int{1, 2}, &seen)})
	if res.Status != record.StatusSuccess || res.Score != 1 || !slices.Equal(stepStatuses(res), []string{"SUCCESS", "SUCCESS"}) {
		t.Fatalf("task %s %v, steps %v", res.Status, res.Score, stepStatuses(res))
	}
}

// TestMultiStepStopOnFailureSkipsTheRest: step 1 failed, so step 2 never runs: recorded
// SKIPPED, its criteria FAIL naming why, the agent ran once.
func TestMultiStepStopOnFailureSkipsTheRest(t *testing.T) {
	var seen []bool
	rt := &fakeRuntime{agent: stepAgent(nil, &seen)}
	res := runMultiStep(t, multiStepTask("stop_on_failure: true\n"), rt)
	if got := stepStatuses(res); !slices.Equal(got, []string{"FAILURE", record.StatusSkipped}) {
		t.Fatalf("step statuses %v", got)
	}
	if len(seen) != 1 || len(rt.again) != 0 {
		t.Fatalf("the agent ran %d times (again %d); want once", len(seen), len(rt.again))
	}
	s2 := res.TaskSteps[1]
	if !s2.Skipped || len(s2.Criteria) != 2 || s2.Criteria[0].Status != record.CriterionFail || !strings.Contains(s2.Criteria[0].Details, "stop_on_failure") {
		t.Fatalf("skipped step %+v", s2)
	}
	if res.TaskSteps[0].Over == "" || len(res.Criteria) != 3 || res.Status != record.StatusFailure {
		t.Fatalf("result %+v", res)
	}
	// without stop_on_failure the second step runs after a failed first
	seen = nil
	rt = &fakeRuntime{agent: stepAgent([]int{2}, &seen)}
	res = runMultiStep(t, multiStepTask(""), rt)
	if got := stepStatuses(res); !slices.Equal(got, []string{"FAILURE", "SUCCESS"}) || len(seen) != 2 {
		t.Fatalf("without stop_on_failure: steps %v, runs %d", got, len(seen))
	}
}

func TestMultiStepScoreRules(t *testing.T) {
	for _, tc := range []struct {
		rule   string
		solve  []int
		status string
		score  float64
	}{
		{"mean", []int{1}, record.StatusFailure, 0.5},
		{"mean", []int{1, 2}, record.StatusSuccess, 1},
		{"last", []int{2}, record.StatusSuccess, 1},
		{"last", []int{1}, record.StatusFailure, 0},
		{"all", []int{2}, record.StatusFailure, 0},
	} {
		var seen []bool
		res := runMultiStep(t, multiStepTask("step_score: "+tc.rule+"\n"), &fakeRuntime{agent: stepAgent(tc.solve, &seen)})
		if res.Status != tc.status || res.Score != tc.score || res.StepScore != tc.rule {
			t.Errorf("%s solving %v: %s %v, want %s %v", tc.rule, tc.solve, res.Status, res.Score, tc.status, tc.score)
		}
	}
}

// TestMultiStepRegradeGradesEachStepsOwnSnapshot: a regrade with changed criteria grades
// step 1 on step 1's kept snapshot (given.txt, which came with step 2, is not there) and
// step 2 on the run directory's, and combines them again.
func TestMultiStepRegradeGradesEachStepsOwnSnapshot(t *testing.T) {
	var seen []bool
	res := runMultiStep(t, multiStepTask(""), &fakeRuntime{agent: stepAgent([]int{1}, &seen)})
	if res.Status != record.StatusFailure {
		t.Fatalf("run: %s", res.Status)
	}
	changed := strings.NewReplacer("{type: file_exists, path: a.txt}", "{type: file_exists, path: given.txt}",
		"{type: file_exists, path: b.txt}\n      - {type: file_contains, path: b.txt, includes: [b]}", "{type: file_exists, path: a.txt}\n      - {type: file_exists, path: given.txt}").Replace(multiStepTask(""))
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "step2"), 0o755)
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	onDisk, err := record.ReadResult(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := RegradeRun(context.Background(), tk, res.Dir, onDisk, grader.Options{}); err != nil {
		t.Fatal(err)
	}
	again, err := record.ReadResult(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := stepStatuses(again); !slices.Equal(got, []string{"FAILURE", "SUCCESS"}) || again.Status != record.StatusFailure || len(again.Criteria) != 3 {
		t.Fatalf("regraded steps %v, task %s, %d criteria; want step 1 FAILURE on its own snapshot, step 2 SUCCESS", got, again.Status, len(again.Criteria))
	}
	if !strings.Contains(again.TaskSteps[0].Criteria[0].Details, "given.txt") {
		t.Errorf("step 1's criterion: %+v", again.TaskSteps[0].Criteria[0])
	}
}

// TestMultiStepEndedByLimitsKeepsEachStep: a sandbox its limits end in step 2 (the agent's
// doing) leaves step 1's grade, step 2 a FAILURE scoring 0, and the task graded by its rule.
func TestMultiStepEndedByLimitsKeepsEachStep(t *testing.T) {
	n := 0
	rt := &fakeRuntime{agent: func(ws, home string) (*sandbox.Outcome, error) {
		if n++; n == 2 {
			return nil, agentCaused{}
		}
		return exited(0), os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
	}}
	res := runMultiStep(t, multiStepTask("step_score: mean\n"), rt)
	if got := stepStatuses(res); !slices.Equal(got, []string{"SUCCESS", "FAILURE"}) || res.Status != record.StatusFailure || res.Score != 0.5 || len(res.Criteria) != 3 {
		t.Fatalf("steps %v, task %s %v, %d criteria", got, res.Status, res.Score, len(res.Criteria))
	}
	if !strings.Contains(res.TaskSteps[1].Criteria[0].Details, "ended by its limits") {
		t.Fatalf("step 2's criteria %+v", res.TaskSteps[1].Criteria)
	}
}

type agentCaused struct{}

func (agentCaused) Error() string       { return "the Pod was OOM-killed" }
func (agentCaused) AgentCaused() string { return "memory limit: the Pod was OOM-killed" }

// TestIterationEndedByLimitsIsTheAgentsFailure: an agent whose sandbox its limits end in a
// later iteration (its doing: an OOM of the whole Pod, say) gets the FAILURE the first
// iteration's did, never an ERROR that drops the run from the pass rates and retries it.
func TestIterationEndedByLimitsIsTheAgentsFailure(t *testing.T) {
	n := 0
	rt := &fakeRuntime{agent: func(ws, home string) (*sandbox.Outcome, error) {
		if n++; n == 2 {
			return nil, agentCaused{}
		}
		return exited(1), nil
	}}
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(agentTask("iter", "true", "  - {type: file_exists, path: hello.txt}\n", "iterations: {max: 3}\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	res, err := Run(context.Background(), tk, Options{RunsDir: t.TempDir(), InitDir: t.TempDir(), Backend: rt, LookupEnv: hostEnv(nil)})
	if err != nil || res.Status != record.StatusFailure || !res.Complete {
		t.Fatalf("err %v, status %s, complete %v: want the agent's FAILURE", err, res.Status, res.Complete)
	}
}

// TestMultiStepClaudeCodeContinuesItsSession: Claude Code's next step continues its session
// (--continue) with the step's prompt, Codex resumes its last one, as iterations do.
func TestMultiStepClaudeCodeContinuesItsSession(t *testing.T) {
	for _, tc := range []struct{ agent, want string }{{"claude-code", "--continue"}, {"codex", "resume"}} {
		var seen []bool
		rt := &fakeRuntime{agent: stepAgent([]int{1, 2}, &seen)}
		doc := strings.Replace(multiStepTask(""), "agent: {type: command, command: [/bin/sh, -c, \"true\"]}", "agent: {type: "+tc.agent+"}", 1)
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "step2"), 0o755)
		p := filepath.Join(dir, "task.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		tk, err := task.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		defer tk.Close()
		env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-0123456789", "OPENAI_API_KEY": "sk-test-0123456789"}
		res, err := Run(context.Background(), tk, Options{RunsDir: t.TempDir(), InitDir: t.TempDir(), Backend: rt, LookupEnv: hostEnv(env)})
		if err != nil {
			t.Fatal(err)
		}
		if len(rt.again) != 1 || !slices.Contains(rt.again[0].Argv, tc.want) || !slices.Contains(rt.again[0].Argv, "write b.txt") {
			t.Fatalf("%s: the next runs %+v; want %s with the step's prompt", tc.agent, rt.again, tc.want)
		}
		if res.Status != record.StatusSuccess {
			t.Fatalf("%s: %s", tc.agent, res.Status)
		}
	}
}

// TestKubernetesRefusesMultiStepTasksByName: the Kubernetes backend cannot run the agent again
// over the same workspace yet, and says so naming steps.
func TestKubernetesRefusesMultiStepTasksByName(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "step2"), 0o755)
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(multiStepTask("")), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	if err := kubernetes.Check(tk); err == nil || !strings.Contains(err.Error(), "multi-step tasks (steps:") {
		t.Fatalf("kubernetes.Check: %v", err)
	}
}

// TestMultiStepAfterAgentRunsAfterEachStep: after_agent commands run after each step's
// agent, one log per step, each recorded with its step.
func TestMultiStepAfterAgentRunsAfterEachStep(t *testing.T) {
	var seen []bool
	rt := &fakeRuntime{agent: stepAgent([]int{1, 2}, &seen)}
	res := runMultiStep(t, multiStepTask("after_agent: [\"true\"]\n"), rt)
	if !slices.Equal(rt.steps, []string{"after_agent-1-step-1", "after_agent-1-step-2"}) {
		t.Fatalf("steps run %v", rt.steps)
	}
	if len(res.Steps) != 2 || res.Steps[0].TaskStep != 1 || res.Steps[1].TaskStep != 2 || res.Steps[1].Log != "steps/after_agent-1-step-2.log" {
		t.Fatalf("steps recorded %+v", res.Steps)
	}
}

// TestCheckRefusesALaterStepsPromptTheAgentCannotTake: a later step's prompt over what
// claude-code or codex take as one argument (a rephrase can make one) is refused before
// the run starts, naming the step, not an ERROR when the step comes.
func TestCheckRefusesALaterStepsPromptTheAgentCannotTake(t *testing.T) {
	for _, agent := range []string{"claude-code", "codex"} {
		doc := strings.Replace(multiStepTask(""), "agent: {type: command, command: [/bin/sh, -c, \"true\"]}", "agent: {type: "+agent+"}", 1)
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "step2"), 0o755)
		p := filepath.Join(dir, "task.yaml")
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		tk, err := task.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		defer tk.Close()
		env := hostEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-0123456789", "OPENAI_API_KEY": "sk-test-0123456789"})
		if err := Check(tk, Options{LookupEnv: env}); err != nil {
			t.Fatalf("%s: the task as written: %v", agent, err)
		}
		tk.TaskSteps = slices.Clone(tk.TaskSteps)
		tk.TaskSteps[1].Prompt = strings.Repeat("x", maxPromptArg+1)
		err = Check(tk, Options{LookupEnv: env})
		var ie *sandbox.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "step 2 second: prompt is 122881 bytes") {
			t.Fatalf("%s: a second step's prompt too long: %v", agent, err)
		}
	}
}
