// Package policy holds the agent sandbox's fixed facts that the task schema, the spec
// builder, the image checks and the supervisor share: the agent's identity, the network
// modes and the default limits. It is a leaf: it imports nothing of ceval's.
package policy

import "time"

// AgentUID and AgentGID are the agent's identity inside every container. Explicit numbers:
// the image may have no passwd entry for them, and nothing is looked up.
const (
	AgentUID = 2000
	AgentGID = 2000
)

// GraderUID is a verifier container's UID and GID: distinct from the agent's, so nothing the
// agent's identity could own or signal is the grader's.
const GraderUID = 3000

// ServiceUID is a task service's UID and GID inside its container: neither the agent's nor
// the grader's. Each service also has a user namespace range of its own, so its host IDs are
// no other container's.
const ServiceUID = 4000

// Network modes of a sandbox.
const (
	NetworkNone = "none" // a new network namespace: loopback only
	NetworkHost = "host" // the host's network namespace; the caller checks the user allowed it
)

// Default limits for what a task (or a sandbox config) leaves out.
const (
	DefaultTimeout  = 30 * time.Minute
	DefaultMemoryMB = 2048
	DefaultCPUs     = 2.0
	DefaultPids     = 512
	DefaultDiskMB   = 1024
	// DefaultGrace is the time between SIGTERM and SIGKILL when an agent is stopped.
	DefaultGrace = 10 * time.Second
)

// LimitsEnforcedBy says, per limit, what enforces it in a run; result.json's attestation
// records it, so a weaker mechanism is never silent.
type LimitsEnforcedBy struct {
	Pids   string `json:"pids"`
	Memory string `json:"memory"`
	CPU    string `json:"cpu"`
	Disk   string `json:"disk"`
}

// The mechanisms LimitsEnforcedBy names.
const (
	EnforcedByCgroup      = "cgroup"
	EnforcedByRlimitNproc = "RLIMIT_NPROC (per UID in the run's user namespace)"
	EnforcedByRlimitAS    = "RLIMIT_AS (per process: a bound on each process's address space, not on their sum)"
	EnforcedByTmpfs       = "tmpfs size cap"
	NotEnforced           = "not enforced"
)

// RootfulLimits is what a root daemon enforces: every limit by the container's cgroup.
var RootfulLimits = LimitsEnforcedBy{Pids: EnforcedByCgroup, Memory: EnforcedByCgroup, CPU: EnforcedByCgroup, Disk: EnforcedByTmpfs}
