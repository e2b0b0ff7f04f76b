// Command ceval-init is PID 1 in every agent container: it starts the agent, forwards
// termination signals to it, reaps every process (orphans included), kills whatever is left
// when the agent exits (holding the agent's exit, traced, until every other process is dead,
// so nothing the agent started outlives it), and enforces a hard deadline that holds even if the host side died.
// With --supervisor-fifo it also kills everything as soon as the host's supervisor is gone:
// the FIFO's only writer is the supervisor, so the init's read of it ends when it dies.
// It is static, uses no writable filesystem and never writes to stdout, which is the agent's.
// With --control ADDR (kube.go) it is the init of a Kubernetes Pod: it takes the run's
// parameters, the workspace and the go-ahead from ceval over a connection to ADDR, sends its
// attestation, the agent's output, relayed connections and the exit back, streams the
// workspace out as tar, and kills everything if that connection ends before Quit.
//
// Usage:
//
//	ceval-init [--timeout DURATION] [--grace DURATION] [--wait-go] [--supervisor-fifo PATH] [--rlimit-as BYTES] -- ARGV...
//	ceval-init --control ADDR
//	ceval-init --mcp-serve PORT -- ARGV...   (a stdio MCP server's service process: mcp.go)
//	ceval-init --mcp-relay HOST:PORT         (the stdio command an agent's CLI starts for it)
package main
