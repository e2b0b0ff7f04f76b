// Package supervisor owns one run's lifecycle: it prepares the run directory and the
// workspace, launches the agent through package launcher with the spec from package oci,
// attests the agent's isolation, reaps everything, snapshots the workspace and grades the
// snapshot on the host. It never parses YAML (package task does) and never grades inside
// the agent's container.
package supervisor
