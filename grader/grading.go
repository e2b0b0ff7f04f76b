package grader

import (
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// Grading says what graded a result's executing criteria (record.Grading).
type Grading = record.Grading

// Interpreter identifies an interpreter by its exact bytes (record.Interpreter).
type Interpreter = record.Interpreter

// InterpreterReporter is an Executor that can say which Python interpreter a criterion it
// executed ran in (nil when it ran none).
type InterpreterReporter interface {
	Python(c *task.Criterion) *Interpreter
}

// Python is the WASM executor's interpreter for c, when it reports one.
func (t Tiers) Python(c *task.Criterion) *Interpreter {
	if r, ok := t.WASM.(InterpreterReporter); ok && c.Tier() == task.TierWASM {
		return r.Python(c)
	}
	return nil
}

// notePython records in r the interpreter c ran in, if the executor says.
func notePython(r *Result, ex Executor, c *task.Criterion) {
	rep, ok := ex.(InterpreterReporter)
	if !ok {
		return
	}
	if p := rep.Python(c); p != nil {
		if r.Grading == nil {
			r.Grading = &Grading{}
		}
		r.Grading.Python = p
	}
}
