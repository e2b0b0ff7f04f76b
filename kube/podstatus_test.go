package kube

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func statusPod(st corev1.PodStatus) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "evals", Name: "ceval-r1"}, Status: st}
}

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Image: "img:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "msg"}}}
}

func terminated(name string, code int32, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}
}

func TestAgentStartedTellsLostPodsFromFailuresOfTheRun(t *testing.T) {
	running := corev1.ContainerStatus{Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	for name, tc := range map[string]struct {
		status corev1.PodStatus
		done   bool
		lost   string // the PodLostError's reason, "" for none
		want   string // in the error's text
	}{
		"pending":    {status: corev1.PodStatus{Phase: corev1.PodPending}},
		"running":    {status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running}}, done: true},
		"installing": {status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{Name: InstallContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}},
		// Not yet placed is not lost: the Pod waits for room (StartAgent gives up at
		// StartTimeout with a *PodLostError, TestUnschedulableSaysTheSchedulersMessage).
		"unschedulable": {status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes: Insufficient cpu"}}}},
		"evicted while running": {status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory", ContainerStatuses: []corev1.ContainerStatus{terminated(ContainerName, 137, "Error")}},
			lost: "Evicted"},
		"preempted": {status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"}}, ContainerStatuses: []corev1.ContainerStatus{running}},
			lost: "PreemptionByScheduler"},
		"refused by the kubelet": {status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfmemory", Message: "Node didn't have enough resource"},
			lost: "OutOfmemory"},
		"init image not in the node": {status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{waiting(InstallContainerName, "ErrImageNeverPull")}},
			want: "ceval images import --namespace k8s.io"},
		"agent image not pullable": {status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting(ContainerName, "ImagePullBackOff")}},
			want: "ceval images import --namespace k8s.io"},
		"agent image refused by the registry": {status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "failed to resolve reference: 401 Unauthorized"}}}}},
			want: "kubernetes.image_pull_secrets"},
		"install failed": {status: corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: []corev1.ContainerStatus{terminated(InstallContainerName, 1, "Error")}},
			want: "install container ceval-install failed (exit 1"},
		"agent ended first": {status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{terminated(ContainerName, 2, "Error")}},
			want: "ended (exit 2"},
		"deadline exceeded is the run's timeout": {status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded"},
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
	p := statusPod(corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes: Insufficient cpu"}}})
	if got := unschedulable(p); got != "0/1 nodes: Insufficient cpu" {
		t.Errorf("unschedulable = %q", got)
	}
	if got := unschedulable(statusPod(corev1.PodStatus{Phase: corev1.PodRunning})); got != "" {
		t.Errorf("a running Pod: unschedulable = %q", got)
	}
}

// A Pod its own limits ended is the agent's doing, never a lost Pod (which is retried):
// evicted for its disk use, OOM-killed as a whole, past its deadline.
func TestPodLimitIsNotALostPod(t *testing.T) {
	for name, st := range map[string]corev1.PodStatus{
		"disk":     {Phase: corev1.PodFailed, Reason: "Evicted", Message: "Pod ephemeral local storage usage exceeds the total limit of containers 200Mi."},
		"emptyDir": {Phase: corev1.PodFailed, Reason: "Evicted", Message: "Usage of EmptyDir volume \"workspace\" exceeds the limit \"100Mi\"."},
		"oom":      {Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}},
		"deadline": {Phase: corev1.PodFailed, Reason: "DeadlineExceeded"},
	} {
		if podLimit(statusPod(st)) == nil {
			t.Errorf("%s: not a limit", name)
		}
	}
	if lim := podLimit(statusPod(corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."})); lim != nil {
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
