package kube

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// PodLimitError says the Pod was ended by its own limits, which the agent's processes
// reached: the container OOM-killed as a whole, evicted for its disk use, or stopped by
// activeDeadlineSeconds. That is the agent's doing: never retried.
type PodLimitError struct{ Reason string }

func (e *PodLimitError) Error() string { return "the run's Pod was ended by its limits: " + e.Reason }

// AgentCaused says why the run is counted against the agent.
func (e *PodLimitError) AgentCaused() string { return e.Reason }

// podLimit returns how the Pod's own limits ended it, or nil: its container OOM-killed as a
// whole, evicted for exceeding its ephemeral-storage or emptyDir limits, or stopped by
// activeDeadlineSeconds. Checked before podLost, which would call an eviction a loss.
func podLimit(p *Pod) *PodLimitError {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
			return &PodLimitError{Reason: fmt.Sprintf("container %s was OOM-killed as a whole (its memory limit)", cs.Name)}
		}
	}
	if p.Status.Phase != PodFailed {
		return nil
	}
	switch p.Status.Reason {
	case "DeadlineExceeded":
		return &PodLimitError{Reason: "activeDeadlineSeconds (the agent's timeout, grace and a margin) passed"}
	case "Evicted":
		// The kubelet's words for a Pod over its own limits (pkg/kubelet/eviction): "Pod
		// ephemeral local storage usage exceeds the total limit of containers ...", "Usage of
		// EmptyDir volume ... exceeds the limit ...", "Container ... exceeded its local
		// ephemeral storage limit ...". Node pressure reads "The node was low on resource".
		m := p.Status.Message
		if strings.Contains(m, "exceeds the total limit") || strings.Contains(m, "exceeds the limit") || strings.Contains(m, "exceeded its local ephemeral storage limit") {
			return &PodLimitError{Reason: "evicted for its disk use: " + m}
		}
	}
	return nil
}

// ImageDigest is the agent container's image as the node resolved it (its status's
// imageID: "REPO@sha256:..." for an image with a repository digest, else "sha256:..." of its
// config), "" until the container runs.
func (r *Run) ImageDigest(ctx context.Context) string {
	agent, _ := r.ImageDigests(ctx)
	return agent
}

// ImageDigests are the agent container's and the install (init) container's images as the
// node resolved them (see ImageDigest), "" for one the status does not report yet.
func (r *Run) ImageDigests(ctx context.Context) (agent, init string) {
	p, err := r.get(ctx)
	if err != nil {
		return "", ""
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == ContainerName {
			agent = cs.ImageID
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name == InstallContainerName {
			init = cs.ImageID
		}
	}
	return agent, init
}

// AgentState is the agent container's state: running (ended false), or ended with its
// process's exit code (the init's). An error when the API server cannot tell.
func (r *Run) AgentState(ctx context.Context) (code int, ended bool, err error) {
	p, err := r.get(ctx)
	if err != nil {
		return 0, false, err
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != ContainerName {
			continue
		}
		if t := cs.State.Terminated; t != nil {
			return int(t.ExitCode), true, nil
		}
		if cs.State.Running != nil {
			return 0, false, nil
		}
	}
	return 0, false, fmt.Errorf("pod %s/%s: the agent container is neither running nor ended", r.Namespace, r.Name)
}

// ProbeTargets are the addresses a run's Pod must not reach before its agent starts: the
// API server (its in-cluster service and the address in the kubeconfig) and every node's
// kubelet. A list the controller may not read (RBAC) is left out; the kubeconfig's address
// is always probed.
func (c *Cluster) ProbeTargets(ctx context.Context) ([]string, error) {
	var out []string
	if u, err := url.Parse(c.Host); err == nil && u.Hostname() != "" {
		port := u.Port()
		if port == "" {
			port = "443"
		}
		out = append(out, net.JoinHostPort(u.Hostname(), port))
	}
	var svc Service
	if err := c.api.do(ctx, http.MethodGet, "/api/v1/namespaces/default/services/kubernetes", nil, nil, &svc); err == nil && svc.Spec.ClusterIP != "" && len(svc.Spec.Ports) > 0 {
		out = append(out, net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))))
	}
	var nodes NodeList
	if err := c.api.do(ctx, http.MethodGet, "/api/v1/nodes", nil, nil, &nodes); err == nil {
		for _, n := range nodes.Items {
			port := int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)
			if port == 0 {
				port = 10250
			}
			for _, a := range n.Status.Addresses {
				if a.Type == NodeInternalIP || a.Type == NodeExternalIP {
					out = append(out, net.JoinHostPort(a.Address, strconv.Itoa(port)))
				}
			}
		}
	}
	return dedupe(out), nil
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
