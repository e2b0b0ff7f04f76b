package kube

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// decodeAPI is what ceval reads of an object the API server sent: k8s.io/api's JSON of it
// decoded into kube's own types.
func decodeAPI(t *testing.T, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

// Every field ceval reads of a Pod's status arrives under the API's JSON names.
func TestPodStatusReadsTheAPIsJSON(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	in := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ceval-r1", Namespace: "evals", ResourceVersion: "42", DeletionTimestamp: &now, Labels: map[string]string{LabelController: "c"}},
		Spec:       corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{
			Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory",
			Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler", Message: "m"}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: InstallContainerName, Image: "init:1", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "not there"}}}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: ContainerName, ImageID: "sha256:abc", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", Message: "bye"}}},
				{Name: "other", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}},
			},
		},
	}
	var p Pod
	decodeAPI(t, in, &p)
	want := Pod{
		ObjectMeta: ObjectMeta{Name: "ceval-r1", Namespace: "evals", ResourceVersion: "42", DeletionTimestamp: &now.Time, Labels: map[string]string{LabelController: "c"}},
		Spec:       PodSpec{NodeName: "node-1"},
		Status: PodStatus{
			Phase: PodFailed, Reason: "Evicted", Message: "low on memory",
			Conditions: []PodCondition{{Type: DisruptionTarget, Status: ConditionTrue, Reason: "PreemptionByScheduler", Message: "m"}},
			InitContainerStatuses: []ContainerStatus{{Name: InstallContainerName, Image: "init:1", State: ContainerState{
				Waiting: &ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "not there"}}}},
			ContainerStatuses: []ContainerStatus{
				{Name: ContainerName, ImageID: "sha256:abc", State: ContainerState{Terminated: &ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", Message: "bye"}}},
				{Name: "other", State: ContainerState{Running: &ContainerStateRunning{StartedAt: &now.Time}}},
			},
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", p, want)
	}
}

// The nodes, the API server's service and events: what ProbeTargets, UserNamespaces and a
// stuck Pod's warnings read.
func TestNodeServiceAndEventReadTheAPIsJSON(t *testing.T) {
	var n Node
	decodeAPI(t, corev1.Node{Status: corev1.NodeStatus{
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10251}},
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}, {Type: corev1.NodeHostName, Address: "n"}},
		RuntimeHandlers: []corev1.NodeRuntimeHandler{{Name: "", Features: &corev1.NodeRuntimeHandlerFeatures{UserNamespaces: ptr.To(true)}}},
	}}, &n)
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10251 || len(n.Status.Addresses) != 2 || n.Status.Addresses[0] != (NodeAddress{NodeInternalIP, "10.0.0.2"}) || !nodeSupportsUserNamespaces(n) {
		t.Errorf("node %+v", n.Status)
	}
	var s Service
	decodeAPI(t, corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Port: 443}}}}, &s)
	if s.Spec.ClusterIP != "10.96.0.1" || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 443 {
		t.Errorf("service %+v", s.Spec)
	}
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var e Event
	decodeAPI(t, corev1.Event{Reason: "FailedCreatePodSandBox", Message: "no", Type: corev1.EventTypeWarning, LastTimestamp: at}, &e)
	if e.Reason != "FailedCreatePodSandBox" || e.Message != "no" || e.Type != EventTypeWarning || !e.LastTimestamp.Equal(at.Time) {
		t.Errorf("event %+v", e)
	}
	// An event with no lastTimestamp (events.k8s.io's) sends null.
	if err := json.Unmarshal([]byte(`{"reason":"r","lastTimestamp":null}`), &e); err != nil {
		t.Errorf("null lastTimestamp: %v", err)
	}
}

// The quantities ceval writes are the canonical forms the API server would print.
func TestQuantitiesAreCanonical(t *testing.T) {
	for in, want := range map[int64]Quantity{0: "0", 1: "1Mi", 512: "512Mi", 1024: "1Gi", 1536: "1536Mi", 4096: "4Gi"} {
		if got := mb(in); got != want {
			t.Errorf("mb(%d) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[int64]Quantity{1: "1m", 375: "375m", 1000: "1", 1500: "1500m", 2000: "2"} {
		if got := milli(in); got != want {
			t.Errorf("milli(%d) = %s, want %s", in, got, want)
		}
	}
}
