package main

import (
	"fmt"
	"os"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/wasm"
)

// executorFor returns the WASM executor that grades executing criteria (run_command, wasm)
// when any of the tasks has one, else nil: a run that needs no WASM pays nothing for it.
// close releases its worker process.
func executorFor(tasks ...*task.Task) (ex grader.Executor, close func(), err error) {
	need := false
	for _, t := range tasks {
		for i := range t.Criteria {
			need = need || t.Criteria[i].Executes()
		}
	}
	if !need {
		return nil, func() {}, nil
	}
	e, err := wasm.NewExecutor(wasm.Options{Python: images.PythonSource(os.Stderr)})
	if err != nil {
		return nil, func() {}, fmt.Errorf("WASM sandbox for executing criteria: %w", err)
	}
	return e, func() { _ = e.Close() }, nil
}

// experimentTasks lists the task of every entry of an experiment.
func experimentTasks(e *task.Experiment) []*task.Task {
	tasks := make([]*task.Task, len(e.Entries))
	for i := range e.Entries {
		tasks[i] = e.Entries[i].Task
	}
	return tasks
}
