// Package supervisor owns one run's lifecycle, a table of named phases: it resolves the
// image, prepares the run directory and the workspace, starts the run's servers (model
// gateway, protected mocks, the task's services), launches the agent through a backend (the
// local containerd one, with its user-namespace ID slots and rootless mode, or a Kubernetes
// Pod), attests the agent's isolation, runs its iterations, reaps everything, snapshots the
// workspace, grades the snapshot on the host and writes result.json. It never parses YAML
// (package task does), never grades inside the agent's container, and never schedules more
// than one run (package experiment does).
package supervisor
