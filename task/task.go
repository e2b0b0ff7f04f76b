package task

import (
	"strings"
	"time"

	"ceval.dev/ceval/gateway/transcript"
	"ceval.dev/ceval/mockd/fixture"
)

// Defaults for fields a task may leave out.
const (
	DefaultImage         = "ceval.local/default:latest"
	DefaultPassThreshold = 0.9
	DefaultWeight        = 1.0
	DefaultCheckTimeout  = 30 * time.Second
)

// Agent types.
const (
	AgentCommand    = "command"
	AgentClaudeCode = "claude-code"
	AgentCodex      = "codex"
)

// Task is a loaded, validated task file. Its material (reference, template, plugins,
// modules) was opened at load through the task's directory and is held open (see Dir and
// File; Close releases it); workspace paths are relative and confined to the workspace
// (starter files, criteria).
type Task struct {
	Path        string // absolute path of the task file
	Dir         string // absolute directory of the task file; every task path stays inside it
	ID          string
	Description string
	Tags        []string
	Prompt      string // the prompt text, read from initial_prompt_file when that is used
	PromptFile  string // initial_prompt_file as written, "" when the prompt is inline
	Agent       *Agent // nil when the task names none (fine for validate and grade)
	Sandbox     Sandbox
	Reference   *Dir // reference.directory, opened at load; nil when none
	Criteria    []Criterion
	Plugins     []Plugin // projected read-only into the agent's container
	// ProtectedMocks are tools answered from fixtures by ceval's host-side mock server; the
	// fixtures never enter the agent's container.
	ProtectedMocks []ProtectedMock
	// RunLimits are the run's model budgets, enforced by the model gateway; nil when the
	// task sets none.
	RunLimits *RunLimits
	// Iterations run the agent again after a failed grade (nil: once); SimulatedUser plays
	// the human between those runs (nil: none). See MaxRuns.
	Iterations    *Iterations
	SimulatedUser *SimulatedUser
	// Solution is the task's oracle for `ceval audit`; grader-only, nil when none.
	Solution *Solution
	// GraderFiles are the task files executing criteria (WASM and verifier containers) see,
	// read-only, at /task (grader_files).
	GraderFiles []GraderFile
	// PythonPackages are Debian pure-Python packages every Python criterion can import.
	PythonPackages []string
	// Setup runs in the agent's sandbox before the agent starts; AfterAgent after it is
	// gone and before the snapshot (see Step).
	Setup, AfterAgent []Step
	// PythonWheels are pure-Python wheels every Python criterion can import.
	PythonWheels []*Wheel
	// Services are the task's own programs beside the agent, in start order (see Service).
	Services []Service
	// TaskSteps are a multi-step task's steps (steps:, see TaskStep), nil for a plain task;
	// Prompt is then the first step's and Criteria every step's in step order. StepScore
	// (step_score) makes the task's score from the steps'; StopOnFailure is the steps'
	// default stop_on_failure.
	TaskSteps     []TaskStep
	StepScore     string
	StopOnFailure bool

	// Set only for a task expanded from an experiment (see LoadExperiment).
	// Dataset is the task_id of the dataset task this one is a row of (its ID is then
	// Dataset.ROW); "" for a plain task.
	Dataset       string
	ExperimentDir string // the experiment file's directory: paths of its defaults and variants stay inside it
	ConfigSHA256  string // sha256 of the merged document (task file, defaults, variant, -D overrides)

	read map[string][32]byte // sha256 of each file read at load (the task file, prompt, fixtures, schemas), by path
}

// Agent says which agent CLI runs the task.
type Agent struct {
	Type           string
	Command        []string // argv, for type command
	Model          string
	Args           []string
	EnvPassthrough []string
	// Gateway is the model gateway the agent reaches at http://127.0.0.1:80; nil when the
	// agent gets none (type command without agent.gateway).
	Gateway *Gateway
}

// Gateway modes (see package gateway).
const (
	GatewayForward = "forward"
	GatewayRecord  = "record"
	GatewayReplay  = "replay"
)

// Gateway is agent.gateway: how the run's model gateway answers.
type Gateway struct {
	Mode        string              // forward (default), record or replay
	FixturePath string              // absolute, inside the task's directory; replay only
	Fixture     *transcript.Fixture // parsed at load from FixturePath; what replay serves
	// ServerTools keeps provider-side tools (web search, code execution, MCP connectors).
	ServerTools bool
}

// RunLimits is run_limits: budgets on what the agent spends through the model gateway,
// metered there (never from the agent's own output). Zero means no limit. When one is
// exceeded the gateway refuses further calls and ceval ends the agent.
type RunLimits struct {
	MaxTurns        int64   // model answers
	MaxInputTokens  int64   // every input token, cached ones included
	MaxOutputTokens int64   // reasoning tokens included
	MaxTotalTokens  int64   // input plus output
	MaxUSD          float64 // priced from the prices table in ceval's config, at agent.model's price
}

// Bounds of run_limits.
const (
	MaxRunTurns  = 1_000_000
	MaxRunTokens = 1 << 40
	MaxRunUSD    = 1_000_000
)

// Sandbox is the agent's container.
type Sandbox struct {
	Image     string
	Network   string
	Limits    Limits
	Workspace Workspace

	// Packages and Pip ask for a Debian image with these packages (and pinned Python
	// packages installed from the wheels in PipFindLinks, held open like all task
	// material); see PackageImage.
	Packages     []string
	Pip          []string
	PipFindLinks *Dir

	// ImageWorkdir is sandbox.image_workdir: whether the fresh workspace starts from the
	// tree at the image config's WorkingDir (ImageWorkdirCopy) or empty (ImageWorkdirIgnore).
	// "" is the default: copy when the image names a WorkingDir other than "/".
	ImageWorkdir string

	// Outputs are sandbox.outputs: absolute container paths outside /workspace (/tmp,
	// /output) the agent may write, each a capped scratch filesystem like the workspace,
	// copied out after the agent by the same snapshot rules. A criterion's absolute path
	// below one of them reads that copy; a verifier sees it at the same path.
	Outputs []string
}

// MaxOutputs bounds sandbox.outputs.
const MaxOutputs = 8

// OutputOf returns the entry of outputs that holds the absolute path p (p itself or below
// it), or "" when none does.
func OutputOf(outputs []string, p string) string {
	for _, o := range outputs {
		if p == o || strings.HasPrefix(p, o+"/") {
			return o
		}
	}
	return ""
}

// Values of sandbox.image_workdir.
const (
	ImageWorkdirCopy   = "copy"
	ImageWorkdirIgnore = "ignore"
)

// Limits bound the agent's container.
type Limits struct {
	Timeout  time.Duration
	MemoryMB int64
	CPUs     float64
	Pids     int64
	DiskMB   int64
}

// Workspace is what the agent finds in /workspace when it starts.
type Workspace struct {
	StarterFiles []StarterFile
	TemplateDir  *Dir // opened at load; nil when none; the first of a list
	// TemplateOverlays are the directories after the first of a template_dir list, copied
	// over it in order (a later one's entries replace an earlier one's).
	TemplateOverlays []*Dir
}

// Templates are the template directories in the order they are copied.
func (w Workspace) Templates() []*Dir {
	if w.TemplateDir == nil {
		return nil
	}
	return append([]*Dir{w.TemplateDir}, w.TemplateOverlays...)
}

// PluginMountRoot is where a plugin is mounted when the task names no mount: a directory
// per plugin, named after it.
const PluginMountRoot = "/opt/ceval/plugins"

// Plugin is one plugin bundle (or a source tree built into one for the run) that the agent
// sees read-only.
type Plugin struct {
	Dir   *Dir   // opened at load: a built bundle or a source tree
	Name  string // the directory's base name; unique in the task
	Mount string // absolute container path; PluginMountRoot/Name unless the task says
}

// ProtectedMock is one mocked tool: the agent calls Tool and gets the answers of Fixture.
type ProtectedMock struct {
	Tool        string           // the command name the agent calls, e.g. "gh"
	FixturePath string           // absolute, inside the task's directory
	Fixture     *fixture.Fixture // parsed and validated at load time
	MaxRequests int              // 1..MaxMockRequests; DefaultMockRequests when the task names none
}

// Bounds of protected_mocks[].max_requests.
const (
	DefaultMockRequests = 100
	MaxMockRequests     = 10000
)

// StarterFile is one file written into the workspace before the agent starts.
type StarterFile struct {
	Path    string // relative to the workspace, cleaned, never leaving it
	Content string
}

// Criterion types.
const (
	FileExists          = "file_exists"
	FileContains        = "file_contains"
	FileMatchesRegex    = "file_matches_regex"
	FileCheck           = "file_check"
	JSONCheck           = "json_check"
	ClassificationMatch = "classification_match"
	RunCommand          = "run_command"
	WASMCheck           = "wasm"
	CLICalled           = "cli_called"       // graded on the protected mocks' call log
	CommandExecuted     = "command_executed" // graded on the protected mocks' call log
	// Graded on the tool calls in the model gateway's transcript (package toolcalls).
	ToolCalled         = "tool_called"
	ToolCallsBudget    = "tool_calls_budget"
	SkillUsed          = "skill_used"
	CommandsEfficiency = "commands_efficiency" // coder_eval's name: a tool_calls_budget
	SkillTriggered     = "skill_triggered"     // coder_eval's name: a skill_used
	LLMJudge           = "llm_judge"           // a model's verdict, asked by ceval on the host
	AgentJudge         = "agent_judge"         // a judge agent's verdict, from its own sandbox
)

// Criterion is one success criterion: what every type has, and its type's own fields in Spec.
type Criterion struct {
	Type          string
	Description   string
	Weight        float64
	PassThreshold float64
	Line, Column  int    // where it starts in the task file
	Alias         string // the coder_eval type the task wrote (command_executed, ...), "" when none

	// Spec is the type's own fields, one struct per type (*RunCommandSpec, *FileContainsSpec,
	// *ToolCalledSpec, *LLMJudgeSpec, ...).
	Spec CriterionSpec
}

// FlagCheck is one flag predicate of a cli_called criterion: Op applied to the flag
// (equals, contains and regex test its value; present and absent, the flag itself).
type FlagCheck struct {
	Flag  string
	Op    string // equals | contains | regex | present | absent
	Value string // for equals, contains and regex
}

// OnToolCalls reports whether the criterion is graded on the model gateway's transcript.
func (c *Criterion) OnToolCalls() bool {
	switch c.Spec.(type) {
	case *ToolCalledSpec, *ToolCallsBudgetSpec, *SkillUsedSpec:
		return true
	}
	return false
}

// PatternCheck is one regular expression of a file_check.
type PatternCheck struct {
	Pattern   string
	MustMatch bool
}

// Assertion is one JMESPath assertion of a json_check.
type Assertion struct {
	Expression string
	Operator   string
	Expected   any
}

// Operators of json_check assertions.
var Operators = []string{"equals", "not_equals", "contains", "gt", "gte", "lt", "lte", "type", "regex", "exists"}
