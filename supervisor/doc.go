// Package supervisor owns one run's lifecycle, a table of named phases: it resolves the
// image, prepares the run directory and the workspace, starts the run's servers (model
// gateway, protected mocks, the task's services), launches the agent through a
// sandbox.Backend (the local containerd one, package sandbox/local, or a Kubernetes Pod,
// package sandbox/kubernetes), has its isolation attested, runs its iterations,
// reaps everything, snapshots the workspace, grades the snapshot on the host and writes
// result.json. It never parses YAML (package task does), never grades inside the agent's
// container, never schedules more than one run (package experiment does), and holds no
// local sandbox code: ID slots, rootless mode, scratch filesystems and attestation from
// /proc are sandbox/local's, Pods sandbox/kubernetes' (callers import their names from there).
package supervisor
