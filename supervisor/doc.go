// Package supervisor owns one run's lifecycle, a table of named phases: it resolves the
// image, prepares the run directory and the workspace, starts the run's servers (model
// gateway, protected mocks, the task's services), launches the agent through the
// sandbox.Backend its caller gives (Options.Backend: a Kubernetes Pod, package
// sandbox/kubernetes, or any other; nil: the local containerd one, sandbox/local's Backend), has its isolation attested, runs its iterations (feedback or
// a simulated user) and a multi-step task's steps, reaps everything, snapshots the
// workspace, grades the snapshot on the host (an agent_judge's judge agent a run of its own)
// and writes result.json. Check is the one up-front check of a task against a run's
// options (the backend's own Check included), which every entry point calls before anything starts; Prepare takes a run ahead
// of its turn; RegradeRun grades a finished run's snapshot again.
//
// It never parses YAML (package task does; images reads a Harbor task's compose file), never grades inside the agent's container,
// never schedules more than one run (package experiment does), and holds no backend's
// sandbox code: ID slots, rootless mode, scratch filesystems and attestation from /proc are
// sandbox/local's, Pods sandbox/kubernetes' (callers import their names from there). The
// task's services are the exception: local containers (local.Sandbox) beside the agent's,
// their ports relayed through launcher's network namespaces (services.go), which the
// Kubernetes backend refuses.
package supervisor
