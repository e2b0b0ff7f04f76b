package kube

import (
	"errors"
	"strings"
	"testing"
)

func statusPod(st PodStatus) *Pod {
	return &Pod{ObjectMeta: ObjectMeta{Namespace: "evals", Name: "ceval-r1"}, Status: st}
}

func waiting(name, reason string) ContainerStatus {
	return ContainerStatus{Name: name, Image: "img:1", State: ContainerState{Waiting: &ContainerStateWaiting{Reason: reason, Message: "msg"}}}
}

func terminated(name string, code int32, reason string) ContainerStatus {
	return ContainerStatus{Name: name, State: ContainerState{Terminated: &ContainerStateTerminated{ExitCode: code, Reason: reason}}}
}

func TestAgentStartedTellsLostPodsFromFailuresOfTheRun(t *testing.T) {
	running := ContainerStatus{Name: ContainerName, State: ContainerState{Running: &ContainerStateRunning{}}}
	for name, tc := range map[string]struct {
		status PodStatus
		done   bool
		lost   string // the PodLostError's reason, "" for none
		want   string // in the error's text
	}{
		"pending":    {status: PodStatus{Phase: PodPending}},
		"running":    {status: PodStatus{Phase: PodRunning, ContainerStatuses: []ContainerStatus{running}}, done: true},
		"installing": {status: PodStatus{Phase: PodPending, InitContainerStatuses: []ContainerStatus{{Name: InstallContainerName, State: ContainerState{Running: &ContainerStateRunning{}}}}}},
		// Not yet placed is not lost: the Pod waits for room (StartAgent gives up at
		// StartTimeout with a *PodLostError, TestUnschedulableSaysTheSchedulersMessage).
		"unschedulable": {status: PodStatus{Phase: PodPending, Conditions: []PodCondition{{Type: PodScheduled, Status: ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes: Insufficient cpu"}}}},
		"evicted while running": {status: PodStatus{Phase: PodFailed, Reason: "Evicted", Message: "low on memory", ContainerStatuses: []ContainerStatus{terminated(ContainerName, 137, "Error")}},
			lost: "Evicted"},
		"preempted": {status: PodStatus{Phase: PodRunning, Conditions: []PodCondition{{Type: DisruptionTarget, Status: ConditionTrue, Reason: "PreemptionByScheduler"}}, ContainerStatuses: []ContainerStatus{running}},
			lost: "PreemptionByScheduler"},
		"refused by the kubelet": {status: PodStatus{Phase: PodFailed, Reason: "OutOfmemory", Message: "Node didn't have enough resource"},
			lost: "OutOfmemory"},
		"init image not in the node": {status: PodStatus{Phase: PodPending, InitContainerStatuses: []ContainerStatus{waiting(InstallContainerName, "ErrImageNeverPull")}},
			want: "ceval images import --namespace k8s.io"},
		"agent image not pullable": {status: PodStatus{Phase: PodPending, ContainerStatuses: []ContainerStatus{waiting(ContainerName, "ImagePullBackOff")}},
			want: "ceval images import --namespace k8s.io"},
		"agent image refused by the registry": {status: PodStatus{Phase: PodPending, ContainerStatuses: []ContainerStatus{{Name: ContainerName,
			State: ContainerState{Waiting: &ContainerStateWaiting{Reason: "ErrImagePull", Message: "failed to resolve reference: 401 Unauthorized"}}}}},
			want: "kubernetes.image_pull_secrets"},
		"install failed": {status: PodStatus{Phase: PodFailed, InitContainerStatuses: []ContainerStatus{terminated(InstallContainerName, 1, "Error")}},
			want: "install container ceval-install failed (exit 1"},
		"agent ended first": {status: PodStatus{Phase: PodFailed, ContainerStatuses: []ContainerStatus{terminated(ContainerName, 2, "Error")}},
			want: "ended (exit 2"},
		"deadline exceeded is the run's timeout": {status: PodStatus{Phase: PodFailed, Reason: "DeadlineExceeded"},
			want: "DeadlineExceeded"},
	} {
		t.Run(name, func(t *testing.T) {
			done, err := agentStarted(statusPod(tc.status))
			if done != tc.done {
				t.Errorf("done %v, want %v", done, tc.done)
			}
			var lost *PodLostError
			switch {
			case tc.lost != "":
				if !errors.As(err, &lost) || lost.Reason != tc.lost {
					t.Errorf("err %v, want a *PodLostError with reason %s", err, tc.lost)
				}
			case errors.As(err, &lost):
				t.Errorf("err %v: a failure of the run must not look like a lost Pod (it would be retried)", err)
			case tc.want == "" && err != nil:
				t.Errorf("err %v, want none", err)
			case tc.want != "" && err == nil:
				t.Errorf("no error, want one about %q", tc.want)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestUnschedulableSaysTheSchedulersMessage(t *testing.T) {
	p := statusPod(PodStatus{Phase: PodPending, Conditions: []PodCondition{{Type: PodScheduled, Status: ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes: Insufficient cpu"}}})
	if got := unschedulable(p); got != "0/1 nodes: Insufficient cpu" {
		t.Errorf("unschedulable = %q", got)
	}
	if got := unschedulable(statusPod(PodStatus{Phase: PodRunning})); got != "" {
		t.Errorf("a running Pod: unschedulable = %q", got)
	}
}

// A Pod its own limits ended is the agent's doing, never a lost Pod (which is retried):
// evicted for its disk use, OOM-killed as a whole, past its deadline.
func TestPodLimitIsNotALostPod(t *testing.T) {
	for name, st := range map[string]PodStatus{
		"disk":     {Phase: PodFailed, Reason: "Evicted", Message: "Pod ephemeral local storage usage exceeds the total limit of containers 200Mi."},
		"emptyDir": {Phase: PodFailed, Reason: "Evicted", Message: "Usage of EmptyDir volume \"workspace\" exceeds the limit \"100Mi\"."},
		"oom":      {Phase: PodFailed, ContainerStatuses: []ContainerStatus{{Name: ContainerName, State: ContainerState{Terminated: &ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}},
		"deadline": {Phase: PodFailed, Reason: "DeadlineExceeded"},
	} {
		if podLimit(statusPod(st)) == nil {
			t.Errorf("%s: not a limit", name)
		}
	}
	if lim := podLimit(statusPod(PodStatus{Phase: PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."})); lim != nil {
		t.Errorf("node pressure taken for the Pod's own limit: %v", lim)
	}
}

// After the agent started, only a loss it could not have caused is retried: an eviction for
// the node's pressure (the agent can press on its node) is not.
func TestPodLostErrorSaysWhetherTheAgentCouldCauseIt(t *testing.T) {
	for reason, could := range map[string]bool{
		"Evicted": true, "TerminationByKubelet": true, "Terminated": true,
		"Deleted": false, "PreemptionByScheduler": false, "EvictionByEvictionAPI": false, "NodeLost": false, "Unschedulable": false,
	} {
		if got := (&PodLostError{Reason: reason}).AgentCouldCause(); got != could {
			t.Errorf("%s: AgentCouldCause %v, want %v", reason, got, could)
		}
	}
}
