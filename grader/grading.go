package grader

import "ceval.dev/ceval/task"

// Grading says what graded a result's executing criteria, so that a result names the
// interpreter its Python checks ran in (result.json's "grading").
type Grading struct {
	// Python is the CPython module the WASM sandbox ran python3 and pytest criteria in;
	// nil when no criterion ran Python there.
	Python *Interpreter `json:"python,omitempty"`
}

// Interpreter identifies an interpreter by its exact bytes.
type Interpreter struct {
	Name   string `json:"name"`   // what it is and where it came from
	SHA256 string `json:"sha256"` // of the module that ran
}

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
