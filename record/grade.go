package record

// Grade is the graded outcome of a task, as the grader fills it: result.json's first fields.
type Grade struct {
	TaskID        string            `json:"task_id"`
	Status        string            `json:"status"`
	Score         float64           `json:"score"`
	Criteria      []CriterionResult `json:"criteria"`
	SnapshotNotes []SnapshotNote    `json:"snapshot_notes,omitempty"`
	Grading       *Grading          `json:"grading,omitempty"`
}

// Run statuses a grade gives (a run's own are StatusTimeout and the budgets').
const (
	StatusSuccess   = "SUCCESS"
	StatusFailure   = "FAILURE"
	StatusNotGraded = "NOT_GRADED"
	StatusError     = "ERROR"
)

// CriterionStatus is the outcome of one criterion.
type CriterionStatus string

// Criterion statuses. ERROR is only ever caused on ceval's side (a task the grader cannot
// apply, an executor failure, a cancelled grade); whatever the workspace holds can at
// worst make a criterion FAIL.
const (
	CriterionPass      CriterionStatus = "PASS"
	CriterionFail      CriterionStatus = "FAIL"
	CriterionNotGraded CriterionStatus = "NOT_GRADED"
	CriterionError     CriterionStatus = "ERROR"
)

// CriterionResult is the graded outcome of one criterion.
type CriterionResult struct {
	Type        string          `json:"type"`
	Description string          `json:"description"`
	Status      CriterionStatus `json:"status"`
	Score       float64         `json:"score"`
	Passed      bool            `json:"passed"`
	Weight      float64         `json:"weight"`
	Gating      bool            `json:"gating"`
	Details     string          `json:"details"`
	// Label is a classification_match's expected and predicted label, from which the
	// summary computes precision, recall and F1 per dataset; nil for other types.
	Label *Label `json:"label,omitempty"`
	// Parts counts the checks the task lists in a file_contains, file_check or json_check
	// (strings, patterns, assertions, schema) and how many were met; nil for other types.
	Parts *Parts `json:"parts,omitempty"`
	// Rewards are an executed criterion's named rewards (Harbor's reward.json), from which
	// its score was taken (reward_key, else their mean); nil when it printed none.
	Rewards map[string]float64 `json:"rewards,omitempty"`
	// OutputLogs are the files, relative to the run directory, where the supervisor saved
	// what an executed criterion's container printed (stdout, then stderr), redacted.
	OutputLogs []string `json:"output_logs,omitempty"`
	// Output is what the executor kept of the command's output, for the supervisor to save;
	// never in result.json (the details quote its tail).
	Output *CriterionOutput `json:"-"`
}

// CriterionOutput is what an executed criterion's command printed, as the executor kept it:
// each stream's first bytes up to the executor's cap, and how many bytes past the cap it dropped.
type CriterionOutput struct {
	Stdout, Stderr       []byte
	StdoutCut, StderrCut int64
}

// Parts is how many of the checks a criterion lists were met: numbers that come from the
// task's own structure, never from a check's output (a follow-up prompt may show them).
type Parts struct {
	Met   int `json:"met"`
	Total int `json:"total"`
}

// Label is one classification: the label the task expects and the one the agent wrote.
type Label struct {
	Expected string `json:"expected"`
	// Predicted is the trimmed file content, "" when the file held no readable label or one
	// longer than the grader's cap (and longer than Expected): agent output is hostile, so a
	// result never carries an unbounded label.
	Predicted string `json:"predicted"`
}

// SnapshotNote explains why a workspace path is missing from, or incomplete in, the
// snapshot the grade was taken of (the grader copies the snapshot's notes).
type SnapshotNote struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

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
