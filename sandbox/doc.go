// Package sandbox is the contract between a run and the sandbox its agent runs in: Backend
// (prepare, resolve the image, create, check a task up front; optionally Remote: sandboxes
// away from this host, their init at its own path, the agent's connections relayed back) and Sandbox (start, attest, wait and reap in Run;
// setup steps; copy out; destroy; optionally Readier, readied ahead of its start), with what every backend shares: Config, Outcome,
// AgainConfig, the attestation's Policy and CheckAttestation, the ID range runs take their
// host IDs from (IDRange, checked against the host's account files), GatewayURL,
// InputError, and the run's services a verifier container reaches (ServiceAccess, carried
// by a context). The local containerd backend (sandbox/local) and the Kubernetes one
// (sandbox/kubernetes) implement it; the caller constructs one and supervisor drives a run
// through it, naming none but the local one as its default: a new backend is one package.
package sandbox
