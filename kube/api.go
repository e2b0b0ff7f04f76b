package kube

import (
	"encoding/json"
	"time"
)

// The Kubernetes objects ceval writes and reads, as JSON: only the fields it sets or reads
// (a field the server sends that is not here is ignored). Field and constant names are
// Kubernetes' own (k8s.io/api core/v1, networking/v1), so they read as the API reference
// does. They are written by hand, not imported: k8s.io/api's generated types (with their
// protobuf code and every field of every kind) add 7 MB to the binary and to every command's
// start-up, for a backend most runs never use (TestPackageRules holds that).

// ObjectMeta is metadata of every object.
type ObjectMeta struct {
	Name              string            `json:"name,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	DeletionTimestamp *time.Time        `json:"deletionTimestamp,omitempty"`
}

// TypeMeta names an object's kind in a request body.
type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// ListMeta is a list's metadata: the resource version a watch continues from.
type ListMeta struct {
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// LabelSelector selects objects by labels.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// Pod is a core/v1 Pod.
type Pod struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       PodSpec   `json:"spec"`
	Status     PodStatus `json:"status,omitempty"`
}

// PodList is a list of Pods.
type PodList struct {
	ListMeta `json:"metadata"`
	Items    []Pod `json:"items"`
}

type (
	PullPolicy               string
	RestartPolicy            string
	TerminationMessagePolicy string
	StorageMedium            string
	SeccompProfileType       string
	ProcMountType            string
	Capability               string
	ResourceName             string
	PodPhase                 string
	PodConditionType         string
	ConditionStatus          string
	NodeAddressType          string
	PolicyType               string
)

const (
	PullAlways       PullPolicy = "Always"
	PullNever        PullPolicy = "Never"
	PullIfNotPresent PullPolicy = "IfNotPresent"

	RestartPolicyNever RestartPolicy = "Never"

	TerminationMessageReadFile              TerminationMessagePolicy = "File"
	TerminationMessageFallbackToLogsOnError TerminationMessagePolicy = "FallbackToLogsOnError"

	StorageMediumMemory StorageMedium = "Memory"

	SeccompProfileTypeRuntimeDefault SeccompProfileType = "RuntimeDefault"

	DefaultProcMount ProcMountType = "Default"

	ResourceCPU              ResourceName = "cpu"
	ResourceMemory           ResourceName = "memory"
	ResourceEphemeralStorage ResourceName = "ephemeral-storage"

	PodPending   PodPhase = "Pending"
	PodRunning   PodPhase = "Running"
	PodSucceeded PodPhase = "Succeeded"
	PodFailed    PodPhase = "Failed"

	PodScheduled     PodConditionType = "PodScheduled"
	DisruptionTarget PodConditionType = "DisruptionTarget"

	PodReasonUnschedulable = "Unschedulable"

	ConditionTrue  ConditionStatus = "True"
	ConditionFalse ConditionStatus = "False"

	NodeInternalIP NodeAddressType = "InternalIP"
	NodeExternalIP NodeAddressType = "ExternalIP"

	PolicyTypeIngress PolicyType = "Ingress"
	PolicyTypeEgress  PolicyType = "Egress"

	EventTypeWarning = "Warning"
)

// Quantity is a resource quantity in Kubernetes' notation ("1500m", "512Mi").
type Quantity string

// ResourceList maps resources to quantities.
type ResourceList map[ResourceName]Quantity

// PodSpec is what ceval sets of a Pod's spec (and NodeName, which it reads).
type PodSpec struct {
	RestartPolicy                 RestartPolicy          `json:"restartPolicy,omitempty"`
	ActiveDeadlineSeconds         *int64                 `json:"activeDeadlineSeconds,omitempty"`
	TerminationGracePeriodSeconds *int64                 `json:"terminationGracePeriodSeconds,omitempty"`
	AutomountServiceAccountToken  *bool                  `json:"automountServiceAccountToken,omitempty"`
	EnableServiceLinks            *bool                  `json:"enableServiceLinks,omitempty"`
	NodeName                      string                 `json:"nodeName,omitempty"`
	HostNetwork                   bool                   `json:"hostNetwork,omitempty"`
	HostPID                       bool                   `json:"hostPID,omitempty"`
	HostIPC                       bool                   `json:"hostIPC,omitempty"`
	ShareProcessNamespace         *bool                  `json:"shareProcessNamespace,omitempty"`
	SecurityContext               *PodSecurityContext    `json:"securityContext,omitempty"`
	ImagePullSecrets              []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	InitContainers                []Container            `json:"initContainers,omitempty"`
	Containers                    []Container            `json:"containers"`
	Volumes                       []Volume               `json:"volumes,omitempty"`
	RuntimeClassName              *string                `json:"runtimeClassName,omitempty"`
	HostUsers                     *bool                  `json:"hostUsers,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	Name string `json:"name,omitempty"`
}

// PodSecurityContext is a Pod's security context.
type PodSecurityContext struct {
	RunAsUser      *int64          `json:"runAsUser,omitempty"`
	RunAsGroup     *int64          `json:"runAsGroup,omitempty"`
	RunAsNonRoot   *bool           `json:"runAsNonRoot,omitempty"`
	Sysctls        []Sysctl        `json:"sysctls,omitempty"`
	SeccompProfile *SeccompProfile `json:"seccompProfile,omitempty"`
}

// Sysctl is a namespaced sysctl of the Pod.
type Sysctl struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SeccompProfile selects a seccomp profile.
type SeccompProfile struct {
	Type SeccompProfileType `json:"type"`
}

// Container is a container of a Pod.
type Container struct {
	Name                     string                   `json:"name"`
	Image                    string                   `json:"image,omitempty"`
	Command                  []string                 `json:"command,omitempty"`
	Args                     []string                 `json:"args,omitempty"`
	WorkingDir               string                   `json:"workingDir,omitempty"`
	Env                      []EnvVar                 `json:"env,omitempty"`
	Resources                ResourceRequirements     `json:"resources,omitempty"`
	VolumeMounts             []VolumeMount            `json:"volumeMounts,omitempty"`
	TerminationMessagePolicy TerminationMessagePolicy `json:"terminationMessagePolicy,omitempty"`
	ImagePullPolicy          PullPolicy               `json:"imagePullPolicy,omitempty"`
	SecurityContext          *SecurityContext         `json:"securityContext,omitempty"`
}

// EnvVar is an environment variable of a container.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// ResourceRequirements are a container's limits and requests.
type ResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

// VolumeMount mounts a volume (or a file of it, SubPath) in a container.
type VolumeMount struct {
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	MountPath string `json:"mountPath"`
	SubPath   string `json:"subPath,omitempty"`
}

// SecurityContext is a container's security context.
type SecurityContext struct {
	Capabilities             *Capabilities   `json:"capabilities,omitempty"`
	Privileged               *bool           `json:"privileged,omitempty"`
	RunAsUser                *int64          `json:"runAsUser,omitempty"`
	RunAsGroup               *int64          `json:"runAsGroup,omitempty"`
	RunAsNonRoot             *bool           `json:"runAsNonRoot,omitempty"`
	ReadOnlyRootFilesystem   *bool           `json:"readOnlyRootFilesystem,omitempty"`
	AllowPrivilegeEscalation *bool           `json:"allowPrivilegeEscalation,omitempty"`
	ProcMount                *ProcMountType  `json:"procMount,omitempty"`
	SeccompProfile           *SeccompProfile `json:"seccompProfile,omitempty"`
}

// Capabilities are capabilities added to and dropped from a container.
type Capabilities struct {
	Add  []Capability `json:"add,omitempty"`
	Drop []Capability `json:"drop,omitempty"`
}

// Volume is a volume of a Pod (ceval uses emptyDirs only).
type Volume struct {
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource is a volume's source.
type VolumeSource struct {
	EmptyDir *EmptyDirVolumeSource `json:"emptyDir,omitempty"`
}

// EmptyDirVolumeSource is an emptyDir volume.
type EmptyDirVolumeSource struct {
	Medium    StorageMedium `json:"medium,omitempty"`
	SizeLimit *Quantity     `json:"sizeLimit,omitempty"`
}

// PodStatus is what ceval reads of a Pod's status.
type PodStatus struct {
	Phase                 PodPhase          `json:"phase,omitempty"`
	Conditions            []PodCondition    `json:"conditions,omitempty"`
	Message               string            `json:"message,omitempty"`
	Reason                string            `json:"reason,omitempty"`
	InitContainerStatuses []ContainerStatus `json:"initContainerStatuses,omitempty"`
	ContainerStatuses     []ContainerStatus `json:"containerStatuses,omitempty"`
}

// PodCondition is a condition of a Pod.
type PodCondition struct {
	Type    PodConditionType `json:"type"`
	Status  ConditionStatus  `json:"status"`
	Reason  string           `json:"reason,omitempty"`
	Message string           `json:"message,omitempty"`
}

// ContainerStatus is a container's status.
type ContainerStatus struct {
	Name         string         `json:"name"`
	State        ContainerState `json:"state,omitempty"`
	RestartCount int32          `json:"restartCount"`
	Image        string         `json:"image"`
	ImageID      string         `json:"imageID"`
}

// ContainerState is one of waiting, running, terminated.
type ContainerState struct {
	Waiting    *ContainerStateWaiting    `json:"waiting,omitempty"`
	Running    *ContainerStateRunning    `json:"running,omitempty"`
	Terminated *ContainerStateTerminated `json:"terminated,omitempty"`
}

// ContainerStateWaiting is a waiting container's reason.
type ContainerStateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ContainerStateRunning is a running container.
type ContainerStateRunning struct {
	StartedAt *time.Time `json:"startedAt,omitempty"`
}

// ContainerStateTerminated is an ended container.
type ContainerStateTerminated struct {
	ExitCode int32  `json:"exitCode"`
	Signal   int32  `json:"signal,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
}

// NetworkPolicy is a networking/v1 NetworkPolicy.
type NetworkPolicy struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       NetworkPolicySpec `json:"spec"`
}

// NetworkPolicySpec selects Pods and the directions it isolates; with no rules it allows
// nothing in those directions.
type NetworkPolicySpec struct {
	PodSelector LabelSelector    `json:"podSelector"`
	Ingress     []map[string]any `json:"ingress,omitempty"`
	Egress      []map[string]any `json:"egress,omitempty"`
	PolicyTypes []PolicyType     `json:"policyTypes,omitempty"`
}

// NetworkPolicyList is a list of NetworkPolicies.
type NetworkPolicyList struct {
	ListMeta `json:"metadata"`
	Items    []NetworkPolicy `json:"items"`
}

// Node is what ceval reads of a Node.
type Node struct {
	ObjectMeta `json:"metadata"`
	Status     NodeStatus `json:"status"`
}

// NodeList is a list of Nodes.
type NodeList struct {
	ListMeta `json:"metadata"`
	Items    []Node `json:"items"`
}

// NodeStatus is a node's addresses, kubelet port and runtime handlers.
type NodeStatus struct {
	DaemonEndpoints NodeDaemonEndpoints  `json:"daemonEndpoints,omitempty"`
	Addresses       []NodeAddress        `json:"addresses,omitempty"`
	RuntimeHandlers []NodeRuntimeHandler `json:"runtimeHandlers,omitempty"`
}

// NodeDaemonEndpoints is where the node's kubelet listens.
type NodeDaemonEndpoints struct {
	KubeletEndpoint DaemonEndpoint `json:"kubeletEndpoint,omitempty"`
}

// DaemonEndpoint is a port.
type DaemonEndpoint struct {
	Port int32 `json:"Port"`
}

// NodeAddress is an address of a node.
type NodeAddress struct {
	Type    NodeAddressType `json:"type"`
	Address string          `json:"address"`
}

// NodeRuntimeHandler is a runtime handler of the node ("" is the default).
type NodeRuntimeHandler struct {
	Name     string                      `json:"name"`
	Features *NodeRuntimeHandlerFeatures `json:"features,omitempty"`
}

// NodeRuntimeHandlerFeatures are a runtime handler's features.
type NodeRuntimeHandlerFeatures struct {
	RecursiveReadOnlyMounts *bool `json:"recursiveReadOnlyMounts,omitempty"`
	UserNamespaces          *bool `json:"userNamespaces,omitempty"`
}

// Service is what ceval reads of a Service.
type Service struct {
	ObjectMeta `json:"metadata"`
	Spec       ServiceSpec `json:"spec"`
}

// ServiceSpec is a service's cluster IP and ports.
type ServiceSpec struct {
	Ports     []ServicePort `json:"ports,omitempty"`
	ClusterIP string        `json:"clusterIP,omitempty"`
}

// ServicePort is a port of a service.
type ServicePort struct {
	Port int32 `json:"port"`
}

// Event is what ceval reads of an Event.
type Event struct {
	ObjectMeta    `json:"metadata"`
	Reason        string    `json:"reason,omitempty"`
	Message       string    `json:"message,omitempty"`
	LastTimestamp time.Time `json:"lastTimestamp,omitempty"`
	Type          string    `json:"type,omitempty"`
}

// EventList is a list of Events.
type EventList struct {
	ListMeta `json:"metadata"`
	Items    []Event `json:"items"`
}

// Status is the API server's answer for a failed request (and a watch's ERROR event).
type Status struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Code    int32  `json:"code,omitempty"`
}

// watchEvent is one event of a watch stream.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }
