package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// stepsTask is a task that wants hello.txt, with extra (its setup and after_agent) added.
func stepsTask(extra string) string {
	return agentTask("steps", "true", "  - {type: file_exists, path: hello.txt}\n", extra)
}

// runFakeSteps runs the task doc on rt; events collects the run's events.
func runFakeSteps(t *testing.T, rt *fakeRuntime, doc string, o Options, events *[]string) (*record.Result, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	o.RunsDir, o.InitDir, o.Backend = t.TempDir(), t.TempDir(), rt
	if o.LookupEnv == nil {
		o.LookupEnv = hostEnv(nil)
	}
	if events != nil {
		o.Progress = func(ev string, _ map[string]any) { *events = append(*events, ev) }
	}
	return Run(context.Background(), tk, o)
}

// exitsWith is a fake step that prints its command and exits with codes[name] (0 if absent).
func exitsWith(codes map[string]int) func(string, []string, string, io.Writer) (launcher.Exit, error) {
	return func(name string, argv []string, _ string, log io.Writer) (launcher.Exit, error) {
		fmt.Fprintf(log, "%s: %s\n", name, strings.Join(argv, " "))
		return launcher.Exit{Code: codes[name], CgroupEmpty: true}, nil
	}
}

func TestFailingSetupStepEndsTheRunAsErrorBeforeTheAgentStarts(t *testing.T) {
	agentRan := false
	rt := &fakeRuntime{
		agent: func(ws, home string) (*sandbox.Outcome, error) { agentRan = true; return writesHello(ws, home) },
		step:  exitsWith(map[string]int{"setup-2": 3}),
	}
	var events []string
	res, err := runFakeSteps(t, rt, stepsTask("setup: [make deps, make more, make all]\nafter_agent: [make build]\n"), Options{}, &events)
	var se *StepError
	var ie *InfraError
	var pe *PhaseError
	if !errors.As(err, &se) || !errors.As(err, &ie) || !errors.As(err, &pe) || pe.Phase != PhaseSetup {
		t.Fatalf("err %v (%T), want an InfraError holding a StepError, of phase setup", err, err)
	}
	if agentRan || slices.Contains(events, "agent_started") || !slices.Equal(rt.steps, []string{"setup-1", "setup-2"}) {
		t.Fatalf("agent ran %v, steps run %v, events %v: nothing after the failed setup step may run", agentRan, rt.steps, events)
	}
	for _, want := range []string{`setup step 2 ("make more") exited with 3`, "steps/setup-2.log", "the agent was not started"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	onDisk, rerr := record.ReadResult(res.Dir)
	if rerr != nil || onDisk.Status != record.StatusError || onDisk.Complete || onDisk.Error != err.Error() {
		t.Fatalf("result.json %+v, %v", onDisk, rerr)
	}
	st := onDisk.Steps
	if len(st) != 3 || !st[0].OK() || st[1].OK() || *st[1].ExitCode != 3 || !st[2].Skipped || st[2].ExitCode != nil || st[2].Log != "" {
		t.Fatalf("steps in result.json %+v", st)
	}
	if log, _ := os.ReadFile(filepath.Join(res.Dir, st[1].Log)); string(log) != "setup-2: /bin/sh -c make more\n" {
		t.Fatalf("setup-2.log = %q", log)
	}
	if rt.closed != 1 {
		t.Fatalf("sandbox closed %d times, want 1", rt.closed)
	}
}

// TestFailingAfterAgentStepIsRecordedAndTheRunGradedAsUsual: an after_agent step's failure
// is never the run's ERROR: the agent gets the grade of what it left.
func TestFailingAfterAgentStepIsRecordedAndTheRunGradedAsUsual(t *testing.T) {
	for _, tc := range []struct {
		name   string
		agent  func(ws, home string) (*sandbox.Outcome, error)
		status string
	}{
		{"work done", writesHello, "SUCCESS"},
		{"work not done", func(string, string) (*sandbox.Outcome, error) { return exited(0), nil }, "FAILURE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &fakeRuntime{agent: tc.agent, step: exitsWith(map[string]int{"after_agent-1": 2})}
			var events []string
			res, err := runFakeSteps(t, rt, stepsTask("setup: [make deps]\nafter_agent: [make build, make test]\n"), Options{}, &events)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status || !res.Complete || res.Error != "" {
				t.Fatalf("status %s complete %v error %q, want %s", res.Status, res.Complete, res.Error, tc.status)
			}
			st := res.Steps
			if len(st) != 3 || !st[0].OK() || st[1].Kind != record.StepAfterAgent || *st[1].ExitCode != 2 || !st[2].Skipped {
				t.Fatalf("steps %+v", st)
			}
			// setup before the agent; after_agent once it is gone, before the snapshot.
			after := []string{"agent_started", "agent_exited", "step_started", "step_finished", "after_agent_failed", "snapshot_taken"}
			if !isSubsequence(events, after) || !isSubsequence(events, []string{"image_ready", "step_started", "step_finished", "agent_started"}) {
				t.Fatalf("events %v", events)
			}
		})
	}
}

// isSubsequence says whether want appears in got in order.
func isSubsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// TestStepLogIsRedactedEvenWhenTheRunEndsThere: a setup step that prints a passed-through
// secret and fails ends the run before redactLogs; its log is redacted at once anyway.
func TestStepLogIsRedactedEvenWhenTheRunEndsThere(t *testing.T) {
	secret := canary(t)
	rt := &fakeRuntime{agent: writesHello, step: func(name string, _ []string, _ string, log io.Writer) (launcher.Exit, error) {
		fmt.Fprintf(log, "token is %s\n", secret)
		return launcher.Exit{Code: 1, CgroupEmpty: true}, nil
	}}
	o := Options{Allow: Allow{Env: []string{"DEPLOY_TOKEN"}}, LookupEnv: hostEnv(map[string]string{"DEPLOY_TOKEN": secret})}
	doc := strings.Replace(stepsTask("setup: [env]\n"), "  type: command\n", "  type: command\n  env_passthrough: [DEPLOY_TOKEN]\n", 1)
	res, err := runFakeSteps(t, rt, doc, o, nil)
	if err == nil {
		t.Fatal("a failed setup step did not fail the run")
	}
	log, rerr := os.ReadFile(filepath.Join(res.Dir, "steps", "setup-1.log"))
	if rerr != nil || strings.Contains(string(log), secret) || !strings.Contains(string(log), "token is ") {
		t.Fatalf("setup-1.log = %q (%v); want the secret redacted", log, rerr)
	}
}

// TestInterruptDuringAStepLeavesTheRunUngraded: Ctrl-C during an after_agent step is not a
// step failure: the run is incomplete, so a resume runs it again.
func TestInterruptDuringAStepLeavesTheRunUngraded(t *testing.T) {
	rt := &fakeRuntime{agent: writesHello, step: func(string, []string, string, io.Writer) (launcher.Exit, error) {
		return launcher.Exit{Code: 137, Interrupted: true}, nil
	}}
	var events []string
	res, err := runFakeSteps(t, rt, stepsTask("after_agent: [make build]\n"), Options{}, &events)
	var pe *PhaseError
	if !errors.As(err, &pe) || pe.Phase != PhaseAfterAgent || !res.Interrupted || res.Complete || slices.Contains(events, "graded") {
		t.Fatalf("err %v, result %+v, events %v", err, res, events)
	}
}

// TestStepsWithIterations: setup runs once per run, after_agent after each iteration of the
// agent (before that iteration's snapshot and grade), each iteration's after_agent with a
// log of its own; a build step whose output the criteria grade sees each iteration's work.
func TestStepsWithIterations(t *testing.T) {
	agentRuns := 0
	rt := &fakeRuntime{}
	rt.agent = func(ws, _ string) (*sandbox.Outcome, error) {
		agentRuns++
		if agentRuns == 2 { // fixed after feedback: the source the build step turns into hello.txt
			return exited(0), os.WriteFile(filepath.Join(ws, "src.txt"), []byte("hello\n"), 0o644)
		}
		return exited(0), nil
	}
	rt.step = func(name string, argv []string, ws string, log io.Writer) (launcher.Exit, error) {
		fmt.Fprintln(log, name)
		if strings.HasPrefix(name, record.StepAfterAgent) { // the "build": src.txt -> hello.txt
			if b, err := os.ReadFile(filepath.Join(ws, "src.txt")); err == nil {
				if err := os.WriteFile(filepath.Join(ws, "hello.txt"), b, 0o644); err != nil {
					return launcher.Exit{}, err
				}
			}
		}
		return launcher.Exit{CgroupEmpty: true}, nil
	}
	res, err := runFakeSteps(t, rt, stepsTask("setup: [seed]\nafter_agent: [build]\niterations: {max: 3, feedback: descriptions}\n"), Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"setup-1", "after_agent-1-iteration-1", "after_agent-1-iteration-2"}
	if res.Status != "SUCCESS" || res.IterationsUsed != 2 || !slices.Equal(rt.steps, want) {
		t.Fatalf("status %s after %d iterations, steps %v; want SUCCESS at 2 with steps %v", res.Status, res.IterationsUsed, rt.steps, want)
	}
	var iters []int
	for _, s := range res.Steps {
		if s.Kind == record.StepAfterAgent {
			iters = append(iters, s.Iteration)
			if _, err := os.Stat(filepath.Join(res.Dir, s.Log)); err != nil {
				t.Errorf("after_agent log: %v", err)
			}
		}
	}
	if !slices.Equal(iters, []int{1, 2}) {
		t.Fatalf("after_agent steps' iterations %v, want [1 2]", iters)
	}
}
