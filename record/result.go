package record

import (
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/toolcalls"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// StatusTimeout is the status of a run whose agent its timeout ended (see FinalStatus).
const StatusTimeout = "TIMEOUT"

// Result is result.json: the grade plus what the run was.
type Result struct {
	Grade
	RunID        string       `json:"run_id"`
	Variant      string       `json:"variant"`
	Repeat       int          `json:"repeat"`
	Attempt      int          `json:"attempt,omitempty"` // >1 when this is a retry
	Agent        AgentResult  `json:"agent"`
	Isolation    *Attestation `json:"isolation,omitempty"`
	Timings      Timings      `json:"timings"`
	Resources    Resources    `json:"resources"`
	Image        Image        `json:"image"`
	TaskSHA256   string       `json:"task_sha256"`
	CevalVersion string       `json:"ceval_version"`
	LimitsHit    []string     `json:"limits_hit,omitempty"`
	Interrupted  bool         `json:"interrupted,omitempty"`
	Error        string       `json:"error,omitempty"`
	Complete     bool         `json:"complete"` // false when interrupted or failed on ceval's side
	Dir          string       `json:"-"`

	// Verifier is how the task's sandbox: container criteria ran (the user's choice, never
	// the task's); nil for a task without any.
	Verifier *VerifierResult `json:"verifier,omitempty"`

	// Plugins are the task's plugin bundles, verified before the agent started and after.
	Plugins []PluginResult `json:"plugins,omitempty"`

	// Mocks are the task's protected mocks: the tools and the call counts (the calls are in
	// MockCallsFile).
	Mocks *MockResult `json:"mocks,omitempty"`

	// Gateway is the model gateway's mode and the usage it metered (the calls are in
	// ModelCallsFile); Agent.Tokens is what the CLI itself reported.
	Gateway *GatewayResult `json:"gateway,omitempty"`

	// ToolCalls counts the tool calls the model asked for, per tool, as the gateway's
	// transcript records them (package toolcalls).
	ToolCalls *toolcalls.Summary `json:"tool_calls,omitempty"`

	// Steps are the task's setup and after_agent steps, in the order they ran.
	Steps []StepResult `json:"steps,omitempty"`
	// Services are the task's services, in the order they started.
	Services []ServiceResult `json:"services,omitempty"`
	// IterationsUsed is how many times the agent ran (task iterations or simulated_user);
	// 0 for a task with neither. The grade above is the last iteration's; Iterations lists
	// each one's, and IterationsDir/<n>/ keeps its files.
	IterationsUsed int         `json:"iterations_used,omitempty"`
	Iterations     []Iteration `json:"iterations,omitempty"`
	// TaskSteps are a multi-step task's steps (task.yaml's steps:), each with its grade;
	// the grade above is the task's by StepScore (CombineSteps) over every step's criteria
	// in step order, and TaskStepsDir/<n>/ keeps each step's files.
	TaskSteps []TaskStep `json:"task_steps,omitempty"`
	StepScore string     `json:"step_score,omitempty"`
}

// IterationsDir is the run directory's subdirectory holding one directory per iteration
// (1, 2, ...): its result.json, and for every iteration but the last (whose files are the
// run directory's own) its workspace snapshot, manifest, agent logs and sessions.
const IterationsDir = "iterations"

// Iteration is one run of the agent within a run: how it was prompted and how it graded.
type Iteration struct {
	N      int     `json:"n"`
	Prompt string  `json:"prompt"` // initial | feedback | simulated_user
	Status string  `json:"status"`
	Score  float64 `json:"score"`
	Agent  float64 `json:"agent_seconds"`
	// Over is why no iteration followed this one ("" while one did).
	Over string `json:"over,omitempty"`
}

// AgentResult is what the agent did, as far as ceval saw it.
type AgentResult struct {
	Type      string         `json:"type"`
	Model     string         `json:"model,omitempty"`
	Override  string         `json:"override,omitempty"` // ceval run --agent, which replaced the task's agent
	ExitCode  *int           `json:"exit_code"`
	TimedOut  bool           `json:"timed_out"`
	StoppedBy string         `json:"stopped_by,omitempty"` // why ceval ended the agent early: the run budget exceeded
	OutputCut bool           `json:"output_cut,omitempty"`
	Turns     int            `json:"turns,omitempty"`
	Tokens    map[string]int `json:"tokens,omitempty"`
	Usage     string         `json:"usage_source,omitempty"`
	// Sessions are the agent CLI's own session files, copied out of its home (relative to
	// the run directory).
	Sessions []string `json:"sessions,omitempty"`
}

// Timings are the lifecycle's phases in seconds.
type Timings struct {
	Prepare  float64 `json:"prepare"`
	Launch   float64 `json:"launch"` // the container's task created and started, its init attested
	Agent    float64 `json:"agent"`
	Reap     float64 `json:"reap"` // from the agent's exit (or stop) until its task is deleted and mocks and gateway stopped
	Snapshot float64 `json:"snapshot"`
	Grade    float64 `json:"grade"`
	Total    float64 `json:"total"`
}

// Resources are the container's peaks.
type Resources struct {
	PeakMemoryBytes uint64 `json:"peak_memory_bytes"`
	PeakPids        uint64 `json:"peak_pids"`
	OOMKills        uint64 `json:"oom_kills,omitempty"`
}

// ModelCallsFile is the model gateway's transcript in a run directory.
const ModelCallsFile = "model_calls.jsonl"

// Run statuses of a run whose agent hit a gateway budget (see FinalStatus); the snapshot is
// still graded.
const (
	StatusMaxTurns    = "MAX_TURNS_EXHAUSTED"
	StatusTokenBudget = "TOKEN_BUDGET_EXCEEDED"
	StatusCostBudget  = "COST_BUDGET_EXCEEDED"
)

// GatewayResult is result.json's record of the model gateway: usage metered from what the
// provider answered, never from the agent's own output.
type GatewayResult struct {
	Mode string `json:"mode"`
	Log  string `json:"log"` // file name in the run directory
	GatewayTotals
}

// Budget kinds in GatewayTotals.Exceeded.
const (
	ExceededTurns  = "turns"
	ExceededTokens = "tokens"
	ExceededCost   = "cost"
)

// GatewayTotals are what passed through the model gateway, which counts them: the only usage
// ceval trusts.
type GatewayTotals struct {
	Requests                 int   `json:"requests"`
	Turns                    int   `json:"turns"`        // model answers (2xx)
	InputTokens              int64 `json:"input_tokens"` // all input, cached included
	CachedInputTokens        int64 `json:"cached_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens,omitempty"`
	OutputTokens             int64 `json:"output_tokens"`
	ReasoningTokens          int64 `json:"reasoning_output_tokens,omitempty"`
	Refused                  int   `json:"refused,omitempty"`        // requests the gateway answered with an error itself
	StrippedTools            int   `json:"stripped_tools,omitempty"` // provider-side tools removed
	// UpstreamFailures are calls the provider did not answer after the retries (transport
	// error, timeout, 5xx, ceval's credential refused); ProviderDown are those of them that
	// found it down (no connection, 5xx, 401/407). Neither is the agent's doing: a run is
	// ERROR only when the provider was down and no call was ever answered (see docs/tasks.md, status rules for model calls).
	UpstreamFailures int `json:"upstream_failures,omitempty"`
	ProviderDown     int `json:"provider_down,omitempty"`
	// What the agent may provoke, recorded and never an ERROR: 429s left after the retries,
	// the provider's other 4xx answers (relayed), calls cut off by the run's end, answers
	// the agent stopped reading, and requests refused for a field or header the allowlist
	// does not forward.
	RateLimited      int     `json:"upstream_rate_limited,omitempty"`
	UpstreamRejected int     `json:"upstream_rejected,omitempty"`
	CutAtRunEnd      int     `json:"cut_at_run_end,omitempty"`
	AgentDisconnects int     `json:"agent_disconnects,omitempty"`
	NotAllowed       int     `json:"not_allowed,omitempty"`
	ReplayMisses     int     `json:"replay_misses,omitempty"`
	LogLinesDropped  int     `json:"transcript_lines_dropped,omitempty"` // past the transcript's size cap
	CostUSD          float64 `json:"cost_usd,omitempty"`                 // priced from the gateway's price table
	UnpricedCalls    int     `json:"unpriced_calls,omitempty"`           // answered calls whose model the price table lacks
	Exceeded         string  `json:"budget_exceeded,omitempty"`          // turns | tokens | cost
	ExceededLimit    string  `json:"budget_exceeded_limit,omitempty"`
}

// MockCallsFile is the protected mocks' call log in a run directory.
const MockCallsFile = "mock_calls.jsonl"

// MockResult is result.json's record of the protected mocks.
type MockResult struct {
	Tools []string  `json:"tools"`
	Log   string    `json:"log"` // file name in the run directory
	Stats MockStats `json:"stats"`
}

// MockStats are the protected mocks' server's counts, which it keeps.
type MockStats struct {
	Calls       int `json:"calls"`     // requests answered from a rule or the default
	Unmatched   int `json:"unmatched"` // no rule and no default
	UnknownTool int `json:"unknown_tool"`
	OverBudget  int `json:"over_budget"` // refused after max_requests
	Refused     int `json:"refused"`     // peers of another UID, connections over the cap
	Malformed   int `json:"malformed"`   // bad, oversized or slow requests
}

// PluginsDir is the run directory's subdirectory where a task's plugin source trees are
// built into bundles.
const PluginsDir = "plugins"

// PluginResult is one plugin of a run: which bundle was mounted where, and the digest of
// its tree verified before the agent started and again after it was stopped.
type PluginResult struct {
	Name         string `json:"name"`
	Source       string `json:"source"`          // the task's path
	Bundle       string `json:"bundle"`          // the bundle mounted: Source's copy or build in the run directory
	Built        bool   `json:"built,omitempty"` // Source was a source tree, built for this run (else a bundle, copied)
	Mount        string `json:"mount"`           // where the agent sees the bundle's tree, read-only
	SHA256Before string `json:"tree_sha256_before"`
	SHA256After  string `json:"tree_sha256_after,omitempty"`
	// HasSkills says the bundle has a skills/ directory (Codex gets it linked in); not recorded.
	HasSkills bool `json:"-"`
}

// Attestation is the isolation of the agent's container as the kernel reports it, read by
// the host from /proc of the container's init after its execve and before the agent starts
// (the init waits for the host's go-ahead). The agent is the init's child and can only have
// less, never more: no capabilities to regain and no_new_privs set.
type Attestation struct {
	UID        int      `json:"uid"`
	GID        int      `json:"gid"`
	Groups     []int    `json:"groups"`
	CapInh     string   `json:"cap_inh"`
	CapPrm     string   `json:"cap_prm"`
	CapEff     string   `json:"cap_eff"`
	CapBnd     string   `json:"cap_bnd"`
	CapAmb     string   `json:"cap_amb"`
	NoNewPrivs int      `json:"no_new_privs"`
	Seccomp    int      `json:"seccomp"`
	PidsMax    string   `json:"pids_max"`
	Interfaces []string `json:"interfaces"`
	Network    string   `json:"network"`

	// HostUID and HostGID are the init's IDs as the host sees them; UID and GID above are
	// the same IDs inside the container, through UIDMap and GIDMap (/proc/PID/uid_map and
	// gid_map of the live init: container ID, host ID, count).
	HostUID int                    `json:"host_uid"`
	HostGID int                    `json:"host_gid"`
	UIDMap  []specs.LinuxIDMapping `json:"uid_map"`
	GIDMap  []specs.LinuxIDMapping `json:"gid_map"`
	// DaemonUserNS, only in a rootless run, is HostUID, HostGID, UIDMap and GIDMap as the
	// rootless daemon's own user namespace numbers them (rootlesskit's, where ID n >= 1 is the
	// user's n-th subordinate ID); the fields above are those translated through that
	// namespace's maps into the real host's IDs.
	DaemonUserNS *DaemonUserNS `json:"daemon_userns,omitempty"`
	// Rlimits are the init's soft and hard limits the policy sets, from /proc/PID/limits.
	Rlimits []specs.POSIXRlimit `json:"rlimits"`
	// LimitsEnforcedBy says per limit what enforces it (a rootless run's may be weaker
	// than cgroups: never silently).
	LimitsEnforcedBy policy.LimitsEnforcedBy `json:"limits_enforced_by"`
}

// DaemonUserNS is a rootless run's IDs in its daemon's user namespace (see Attestation).
type DaemonUserNS struct {
	HostUID int                    `json:"host_uid"`
	HostGID int                    `json:"host_gid"`
	UIDMap  []specs.LinuxIDMapping `json:"uid_map"`
	GIDMap  []specs.LinuxIDMapping `json:"gid_map"`
}

// Image names one image in containerd and the content it resolves to on this platform;
// a run records it so its result says exactly which bytes the agent ran on.
type Image struct {
	Name           string        `json:"name"`
	ManifestDigest digest.Digest `json:"manifest_digest"`
	ConfigDigest   digest.Digest `json:"config_digest"`
	// AgentCLIs are the real agent CLIs ceval images build-agent put in the image with their
	// pinned versions, from its config labels: "claude-code@2.1.332 codex@0.169.0-linux-x64".
	AgentCLIs string `json:"agent_clis,omitempty"`
	// Reference and Digest are the registry reference a task named and the digest the run
	// (every run of its experiment) was pinned to: see ImagePin.
	Reference string        `json:"reference,omitempty"`
	Digest    digest.Digest `json:"digest,omitempty"`
	// Source is where the image came from: built, imported or pulled ("" when unknown).
	Source string `json:"source,omitempty"`
}

// ImagePin is an image a task names pinned to the digest its reference resolved to when
// the experiment (or the run) started: every run uses exactly that digest.
type ImagePin struct {
	Name      string        `json:"name"`      // as the task writes it
	Reference string        `json:"reference"` // normalised: HOST/REPO:TAG or HOST/REPO@DIGEST
	Digest    digest.Digest `json:"digest"`    // the manifest (or index) digest
}

// VerifierResult is how a run's verifier containers ran.
type VerifierResult struct {
	// User is "root in its own user namespace" (over a writable, capped copy of the image's
	// root) or "uid 3000" (over the image's read-only root: a rootless daemon).
	User string `json:"user"`
	// Network is the user's verifier_network: "none" (each criterion's own, none unless the
	// task asks for host and the user allows it) or "host" (every criterion on the host's).
	Network string `json:"network"`
}
