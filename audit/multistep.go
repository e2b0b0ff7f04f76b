package audit

import (
	"fmt"
	"strings"

	"ceval.dev/ceval/task"
)

// stepsSolveRunner runs the script of the step the agent is in: the scripts follow it as
// $1..$n, one per step, and CEVAL_STEP (1-based) picks one.
const stepsSolveRunner = `shift $((CEVAL_STEP-1)) && f=/tmp/ceval-solve && printf '%s' "$1" > "$f" && chmod 700 "$f" && cd /workspace && exec "$f"`

// hasOracle reports whether the task names a solution: the task's, or a step's.
func hasOracle(t *task.Task) bool {
	if t.Solution != nil {
		return true
	}
	for _, s := range t.TaskSteps {
		if s.Solution != nil {
			return true
		}
	}
	return false
}

// oracleFor is the task's oracle agent. A multi-step task's runs once per step, as every
// agent does, and applies that step's solution script (steps[].solution, else the task's
// solution.script), all of them on its command line.
func oracleFor(t *task.Task) (Agent, error) {
	if !t.MultiStep() {
		return Oracle(t.Solution)
	}
	a := Agent{Name: OracleAgent, Kind: KindOracle}
	argv := []string{"/bin/sh", "-c", stepsSolveRunner, "solve"}
	total := 0
	var names []string
	for i, st := range t.TaskSteps {
		s := t.StepSolution(i)
		switch {
		case s == nil:
			return a, fmt.Errorf("step %d (%s) has no solution: give it solution: {script: ...}, or the task a solution.script for every step", i+1, st.Name)
		case s.Script == nil:
			return a, fmt.Errorf("step %d (%s): a multi-step task's oracle runs a script per step (solution.files would overwrite what the earlier steps built): give solution: {script: ...}", i+1, st.Name)
		}
		one, err := Oracle(s)
		if err != nil {
			return a, fmt.Errorf("step %d (%s): %w", i+1, st.Name, err)
		}
		body := one.Argv[len(one.Argv)-1]
		if total += len(body); total > maxArgBytes*4 {
			return a, fmt.Errorf("the steps' solution scripts are %d bytes in all: audit passes them on the agent's command line; keep them under %d KiB", total, maxArgBytes*4>>10)
		}
		argv = append(argv, body)
		names = append(names, st.Name)
	}
	a.What = "runs each step's solution script (" + strings.Join(names, ", ") + ")"
	a.Argv = argv
	return a, nil
}
