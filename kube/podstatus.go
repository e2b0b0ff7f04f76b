package kube

import (
	"fmt"
	"strings"
)

// PodLostError says the cluster did not place the run's Pod or took it away (unschedulable,
// refused by the node, evicted, preempted, deleted, its node lost): nothing the agent did.
// The caller may retry the run with a new Pod.
type PodLostError struct {
	Namespace, Name string
	// Reason is the cluster's word for it: "Unschedulable", "Evicted", "Deleted", a
	// DisruptionTarget reason such as "PreemptionByScheduler", or the kubelet's admission
	// reason such as "OutOfmemory".
	Reason  string
	Message string
}

func (e *PodLostError) Error() string {
	msg := fmt.Sprintf("pod %s/%s lost (%s)", e.Namespace, e.Name, e.Reason)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg + "; a new Pod may run it"
}

// podLost returns why the cluster took p away or could not place it, or nil. A Pod the
// scheduler cannot place yet is not lost: it waits for room (see unschedulable).
func podLost(p *Pod) *PodLostError {
	lost := func(reason, msg string) *PodLostError {
		return &PodLostError{Namespace: p.Namespace, Name: p.Name, Reason: reason, Message: msg}
	}
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == DisruptionTarget && c.Status == ConditionTrue:
			return lost(c.Reason, c.Message)
		}
	}
	if p.Status.Phase != PodFailed || p.Status.Reason == "" || p.Status.Reason == "DeadlineExceeded" {
		return nil
	}
	// The kubelet evicted it or the node went away, killing what ran; or the kubelet's
	// admission refused it (OutOfcpu, NodeAffinity, ...) before any container ran.
	if takenAway[p.Status.Reason] || !anyTerminated(p) {
		return lost(p.Status.Reason, p.Status.Message)
	}
	return nil
}

// takenAway are the reasons of a failed Pod that the node killed for its own sake.
var takenAway = map[string]bool{"Evicted": true, "NodeLost": true, "NodeShutdown": true, "Shutdown": true, "Terminated": true}

func anyTerminated(p *Pod) bool {
	for _, s := range append(append([]ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.State.Terminated != nil && s.State.Terminated.Reason != "ContainerStatusUnknown" {
			return true
		}
	}
	return false
}

// imageReasons are a container's waiting reasons that mean its image cannot be had.
var imageReasons = map[string]bool{"ErrImageNeverPull": true, "ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true}

// authHint is what to do when the registry refused the node (a pull needing credentials).
func authHint(msg string) string {
	for _, m := range []string{"401 Unauthorized", "403 Forbidden", "authorization failed", "no basic auth credentials"} {
		if strings.Contains(msg, m) {
			return "; the registry refused the node: create a docker-registry Secret in the runs' namespace (kubectl create secret docker-registry NAME --docker-server=HOST ...) and name it in the config file's kubernetes.image_pull_secrets"
		}
	}
	return ""
}

// agentImageError is the error of a container of the agent's image the node could not get.
func agentImageError(name string, s ContainerStatus) error {
	if w := s.State.Waiting; w != nil && imageReasons[w.Reason] {
		return fmt.Errorf("pod %s: agent image %s: %s: %s%s; put it in the node with `ceval images export %s -o image.tar` here and `ceval images import --namespace k8s.io image.tar` on the node, or push it to the registry the nodes pull from with `ceval images push --kubernetes TASK` (kubernetes.registry in ceval's config; it builds a package image first)", name, s.Image, w.Reason, w.Message, authHint(w.Message), s.Image)
	}
	return nil
}

// agentStarted is StartAgent's view of the Pod: done once the agent container runs; an error
// when it never will (lost: a *PodLostError; an image the node lacks; the install container
// failed; the Pod or the agent ended first).
func agentStarted(p *Pod) (bool, error) {
	if lost := podLost(p); lost != nil {
		return false, lost
	}
	name := p.Namespace + "/" + p.Name
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name == PrepContainerName {
			// The prep container runs the agent's image: its errors are the agent image's.
			s.Name = ContainerName
			if err := agentImageError(name, s); err != nil {
				return false, err
			}
			if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
				return false, fmt.Errorf("pod %s: prep container %s (in the agent's image %s) failed (exit %d, %s): %s", name, PrepContainerName, s.Image, t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
			}
			continue
		}
		if w := s.State.Waiting; w != nil && imageReasons[w.Reason] {
			return false, fmt.Errorf("pod %s: install container %s: init image %s: %s: %s%s; put it in the node with `CEVAL_CONTAINERD_ADDRESS=NODE_SOCKET ceval images build-init --namespace k8s.io`, or write it with `ceval images build-init -o init.tar` and run `ceval images import --namespace k8s.io init.tar` on the node, or push it to the registry the nodes pull from with `ceval images push --kubernetes` (kubernetes.registry in ceval's config)", name, s.Name, s.Image, w.Reason, w.Message, authHint(w.Message))
		}
		if w := s.State.Waiting; w != nil && strings.HasPrefix(w.Reason, "CreateContainer") {
			return false, fmt.Errorf("pod %s: install container %s: %s: %s", name, s.Name, w.Reason, w.Message)
		}
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			return false, fmt.Errorf("pod %s: install container %s failed (exit %d, %s): %s", name, s.Name, t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name != ContainerName {
			continue
		}
		if err := agentImageError(name, s); err != nil {
			return false, err
		}
		if w := s.State.Waiting; w != nil && (strings.HasPrefix(w.Reason, "CreateContainer") || w.Reason == "RunContainerError") {
			return false, fmt.Errorf("pod %s: agent container: %s: %s", name, w.Reason, w.Message)
		}
		if s.State.Running != nil {
			return true, nil
		}
		if t := s.State.Terminated; t != nil {
			return false, fmt.Errorf("pod %s: the agent container ended (exit %d, %s) before the control channel opened: %s", name, t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
		}
	}
	if p.Status.Phase == PodSucceeded || p.Status.Phase == PodFailed {
		return false, fmt.Errorf("pod %s ended (%s %s: %s) before the agent ran", name, p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	return false, nil
}

// describePod is one line about where a Pod is stuck, for an error when the wait ends.
func describePod(p *Pod) string {
	if p == nil {
		return "no status yet"
	}
	parts := []string{"phase " + string(p.Status.Phase)}
	for _, c := range p.Status.Conditions {
		if c.Status != ConditionTrue && c.Reason != "" {
			parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	for _, s := range append(append([]ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := s.State.Waiting; w != nil {
			parts = append(parts, fmt.Sprintf("%s waiting (%s: %s)", s.Name, w.Reason, w.Message))
		}
	}
	return strings.Join(parts, "; ")
}

// unschedulable is the scheduler's message when it cannot place p (yet), or "".
func unschedulable(p *Pod) string {
	if p == nil {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == PodScheduled && c.Status == ConditionFalse && c.Reason == PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

// AgentCouldCause says whether the agent's own processes could have brought this loss
// about once they ran: the kubelet's evictions for the node's pressure (an agent can press
// on a node's memory, disk or pids) and its terminations. A deleted Pod, a preemption, an
// eviction through the API, a lost or shut-down node are not the agent's.
func (e *PodLostError) AgentCouldCause() bool {
	switch e.Reason {
	case "Evicted", "TerminationByKubelet", "Terminated":
		return true
	}
	// ControlChannelLost (the port-forward broke while the init ran) is not: the agent can
	// neither reach the API nor close the init's socket.
	return false
}
