package record

// StepsDir is the run directory's subdirectory of step logs: StepsDir/<kind>-<n>.log holds
// a step's stdout and stderr, interleaved as written (see StepResult.Iteration).
const StepsDir = "steps"

// Step kinds: a task's setup and after_agent lists.
const (
	StepSetup      = "setup"
	StepAfterAgent = "after_agent"
)

// StepResult is one setup or after_agent step as it ran. What the step printed is only in
// its log: no field here is read from the step's output.
type StepResult struct {
	Kind  string `json:"kind"`  // StepSetup or StepAfterAgent
	Index int    `json:"index"` // 1-based, within its kind
	// Iteration is the agent's iteration an after_agent step followed, in a task that may
	// run the agent more than once (its log is then <kind>-<n>-iteration-<i>.log); else 0.
	Iteration int `json:"iteration,omitempty"`
	// TaskStep is the step of a multi-step task an after_agent step followed (its log is
	// <kind>-<n>-step-<s>.log); else 0.
	TaskStep  int     `json:"task_step,omitempty"`
	Run       string  `json:"run"`       // the command, as the task gives it
	ExitCode  *int    `json:"exit_code"` // the shell's exit status; nil when it did not run
	TimedOut  bool    `json:"timed_out,omitempty"`
	OutputCut bool    `json:"output_cut,omitempty"`
	Skipped   bool    `json:"skipped,omitempty"` // not run: a step before it failed
	Seconds   float64 `json:"seconds"`
	Log       string  `json:"log,omitempty"` // relative to the run directory
}

// OK says whether the step ran, exited 0 and was not stopped by its timeout.
func (s StepResult) OK() bool {
	return !s.Skipped && !s.TimedOut && s.ExitCode != nil && *s.ExitCode == 0
}

// VerifierDir is the run directory's subdirectory of what executed criteria's containers
// printed: VerifierDir/criterion-<n>.stdout.log and .stderr.log for the criterion at
// position n (1-based), redacted, each capped as the verifier caps what it reads.
const VerifierDir = "verifier"
