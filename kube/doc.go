// Package kube runs an agent's sandbox as a Kubernetes Pod: it builds the Pod spec with the
// same hardening as the local containerd sandbox (pod.go, pure and unit-tested) plus a deny-all
// NetworkPolicy per run, and creates, watches and deletes them through client-go (cluster.go).
// It never shells out to kubectl and never decides policy: the caller's Config says what to run.
package kube
