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
