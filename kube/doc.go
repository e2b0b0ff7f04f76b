// Package kube runs an agent's sandbox as a Kubernetes Pod: it builds the Pod spec with the
// same hardening as the local containerd sandbox plus a deny-all NetworkPolicy per run
// (pod.go, pure and unit-tested; an init container installs ceval-init from the init image
// and the agent container runs it in control mode); creates, watches, collects and deletes
// them through a small REST client of its own, not client-go, so that the ceval binary stays
// within its size and start-up budget (client.go: the kubeconfig, requests, typed API errors;
// watch.go; api.go: the objects' JSON, only the fields ceval uses; cluster.go, podstatus.go,
// lost.go, controller.go); opens port-forward streams to the init's control port
// (portforward.go: the WebSocket or SPDY upgrade here, the SPDY streams k8s.io/streaming's);
// drives the init over that channel (session.go, protocol in internal/kubeproto); and
// snapshots a workspace streamed out as tar with the snapshot package's rules
// (tarsnapshot.go). It never shells out to kubectl and never decides policy: the caller's
// Config says what to run.
package kube
