// Package verdict holds what `ceval audit` concludes about each task (its verdict, the runs
// behind it and the criteria they fooled) and the audit.json file that carries it to
// reports. It is a leaf: reading verdicts never pulls in the sandbox, so the report package
// shows them without importing containerd.
package verdict

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Verdicts.
const (
	OK       = "ok"       // the oracle reaches SUCCESS and no baseline or cheat does
	Hackable = "hackable" // the oracle reaches SUCCESS, and so does a baseline or a cheat
	Broken   = "broken"   // no oracle, or the oracle does not reach SUCCESS: unsolvable as written
	Error    = "error"    // an audit run failed on ceval's side: nothing was proved
)

// File is the audit's result beside its run directories, and in an experiment's directory
// once a report shows it.
const File = "audit.json"

// maxFile caps audit.json (it is read back as input).
const maxFile = 64 << 20

// Run is one audit agent's run of a task.
type Run struct {
	Agent   string  `json:"agent"`
	Kind    string  `json:"kind"`
	What    string  `json:"what"`
	Status  string  `json:"status"` // the run's status (SUCCESS, FAILURE, ...); "" when it did not run
	Score   float64 `json:"score"`
	Success bool    `json:"success"`
	// AboveNull says the score is over the null agent's: the agent gained something
	// without solving the task, even if it stayed below the pass threshold.
	AboveNull bool `json:"above_null,omitempty"`
	// Fooled are the gating criteria this agent passed and the null agent did not.
	Fooled []Criterion `json:"fooled,omitempty"`
	// Criteria is every criterion's outcome in this run.
	Criteria []Criterion `json:"criteria,omitempty"`
	RunDir   string      `json:"run_dir,omitempty"`
	Error    string      `json:"error,omitempty"` // why the run failed on ceval's side
}

// Criterion names one criterion of the task.
type Criterion struct {
	Index       int    `json:"index"` // in success_criteria
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	Line        int    `json:"line"`
	Gating      bool   `json:"gating"`
	Passed      bool   `json:"passed"`
}

func (c Criterion) String() string {
	s := fmt.Sprintf("success_criteria[%d] (%s, line %d)", c.Index, c.Type, c.Line)
	if c.Description != "" {
		s += " " + c.Description
	}
	return s
}

// Report is the audit of one task.
type Report struct {
	TaskID  string `json:"task_id"`
	Variant string `json:"variant,omitempty"`
	Path    string `json:"path"`
	// TaskSHA256 is task.Digest of the task audited (merged with its experiment's defaults
	// and variant): a report shows a verdict as current only for a run of the same task.
	TaskSHA256 string   `json:"task_sha256,omitempty"`
	Verdict    string   `json:"verdict"`
	Reasons    []string `json:"reasons"` // why the verdict is not ok; empty when it is
	Oracle     *Run     `json:"oracle"`  // nil when the task has no solution
	// Runs are the null agent, the unchanged agent and every cheat, in that order.
	Runs []Run `json:"runs"`
	// Warnings are the weak patterns validate --strict finds in the criteria (informational:
	// the runs are the proof).
	Warnings []string `json:"warnings,omitempty"`
	// Leaked is the informational leaked-criteria run (--leaked-criteria); it never changes
	// the verdict.
	Leaked *Run `json:"leaked_criteria,omitempty"`
}

// Read reads an audit.json: the reports `ceval audit` wrote. A verdict it does not know is
// an error (the file may come from elsewhere).
func Read(path string) ([]Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("%s: larger than %d MiB: not an audit.json", path, maxFile>>20)
	}
	var reps []Report
	if err := json.Unmarshal(data, &reps); err != nil {
		return nil, fmt.Errorf("%s: not an audit.json (a list of ceval audit reports): %w", path, err)
	}
	for i, r := range reps {
		switch r.Verdict {
		case OK, Hackable, Broken, Error:
		default:
			return nil, fmt.Errorf("%s: report %d (%s): unknown verdict %q", path, i, r.TaskID, r.Verdict)
		}
	}
	return reps, nil
}
