package audit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMultiStepOracleRunsEachStepsScript: the oracle of a multi-step task carries each
// step's solution script (a step's own, else the task's) and runs the one CEVAL_STEP names; a
// step without any solution is an oracle error naming it.
func TestMultiStepOracleRunsEachStepsScript(t *testing.T) {
	doc := "task_id: ms\nsolution: {script: all.sh}\nsteps:\n" +
		"  - {name: a, prompt: p, solution: {script: one.sh}, success_criteria: [{type: file_exists, path: x}]}\n" +
		"  - {name: b, prompt: q, success_criteria: [{type: file_exists, path: y}]}\n"
	tk := load(t, writeTask(t, doc, map[string]string{"one.sh": "#!/bin/sh\necho one > \"$OUT\"\n", "all.sh": "#!/bin/sh\necho \"all $CEVAL_STEP\" > \"$OUT\"\n"}))
	if !hasOracle(tk) {
		t.Fatal("no oracle")
	}
	a, err := oracleFor(tk)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.What, "a, b") {
		t.Errorf("what %q", a.What)
	}
	// Run the runner on the host as the agent would, in a scratch directory standing in for
	// /workspace (the runner cds there: point it at the scratch directory instead).
	dir := t.TempDir()
	for step, want := range map[string]string{"1": "one\n", "2": "all 2\n"} {
		out := filepath.Join(dir, "out-"+step)
		argv := append([]string{}, a.Argv...)
		argv[2] = strings.ReplaceAll(strings.ReplaceAll(argv[2], "/tmp/ceval-solve", filepath.Join(dir, "solve")), "cd /workspace", "cd "+dir)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"CEVAL_STEP=" + step, "OUT=" + out, "PATH=/usr/bin:/bin"}
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("step %s: %v\n%s", step, err, b)
		}
		if got, _ := os.ReadFile(out); string(got) != want {
			t.Errorf("step %s's oracle wrote %q, want %q", step, got, want)
		}
	}
	noSol := load(t, writeTask(t, "task_id: ms\nsteps:\n  - {name: a, prompt: p, solution: {script: one.sh}, success_criteria: [{type: file_exists, path: x}]}\n"+
		"  - {name: b, prompt: q, success_criteria: [{type: file_exists, path: y}]}\n", map[string]string{"one.sh": "#!/bin/sh\n"}))
	if _, err := oracleFor(noSol); err == nil || !strings.Contains(err.Error(), "step 2 (b) has no solution") {
		t.Fatalf("a step without a solution: %v", err)
	}
}
