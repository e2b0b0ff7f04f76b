// Package kubernetes is the Kubernetes backend of package sandbox (ceval run --backend
// kubernetes): each sandbox is a Pod of the user's cluster with the local sandbox's
// hardening and a deny-all NetworkPolicy, driven through ceval's init in the Pod over a
// port-forward (package kube's client and session). The workspace goes in and out through
// that channel; the model gateway and the mocks stay on this host and are relayed to the
// Pod's loopback (Backend is a sandbox.Remote: the init's path in the Pod, the
// connections relayed). Check (Backend.Check for supervisor.Check) refuses up front what it cannot run with the local backend's
// guarantees yet; a Pod's attestation (its init's report) is checked against the same
// sandbox.Policy as a local container's; lost Pods are told from limits the agent hit.
package kubernetes
