package kube

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/policy"
)

// Labels on everything a run creates: ManagedBy finds all of ceval's objects, LabelRunID one
// run's, LabelController those of one controller process (what gc removes after it died).
const (
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	ManagedBy       = "ceval"
	LabelRunID      = "ceval.dev/run-id"
	LabelController = "ceval.dev/controller"
)

// ContainerName is the agent's container in the Pod.
const ContainerName = "agent"

// Defaults for zero fields of Config (the rest default as in the local sandbox, package policy).
const (
	DefaultTmpMB = oci.DefaultTmpMB
	// logsMB is ephemeral storage left for the container's logs beyond its two disk volumes.
	logsMB = 64
)

// Config is one run's Pod. Zero numeric and duration fields take policy's defaults.
type Config struct {
	RunID      string // required; DNS label, at most 50 characters; names the Pod "ceval-RUNID"
	Controller string // required; label value naming the controller process that owns the run
	Namespace  string // required

	Image      string            // required
	PullPolicy corev1.PullPolicy // "" means IfNotPresent; Never for images imported into the node
	Args       []string          // the agent command; required
	Env        []string          // KEY=VALUE added to HOME, USER and PATH (a same-named key replaces those)

	Timeout time.Duration // the agent's deadline; activeDeadlineSeconds adds Grace and a margin
	Grace   time.Duration // terminationGracePeriodSeconds

	MemoryMB int64   // memory limit (and request)
	CPUs     float64 // CPU limit (and request)
	DiskMB   int64   // size limit of each of /workspace and /home/agent
	TmpMB    int64   // size of the memory-backed /tmp

	// UserNamespace sets hostUsers: false, so the Pod's UIDs map to unprivileged host IDs.
	// Only where the node's runtime supports it (Cluster.UserNamespaces): elsewhere the
	// kubelet refuses the Pod.
	UserNamespace bool
	// RuntimeClassName selects a sandboxed runtime (gVisor, Kata) the cluster offers; "" is
	// the cluster's default.
	RuntimeClassName string
}

// PodName is the name of the run's Pod and NetworkPolicy.
func PodName(runID string) string { return "ceval-" + runID }

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelValue = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	envKey     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (cfg Config) withDefaults() Config {
	if cfg.Timeout == 0 {
		cfg.Timeout = policy.DefaultTimeout
	}
	if cfg.Grace == 0 {
		cfg.Grace = policy.DefaultGrace
	}
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = policy.DefaultMemoryMB
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = policy.DefaultCPUs
	}
	if cfg.DiskMB == 0 {
		cfg.DiskMB = policy.DefaultDiskMB
	}
	if cfg.TmpMB == 0 {
		cfg.TmpMB = DefaultTmpMB
	}
	if cfg.PullPolicy == "" {
		cfg.PullPolicy = corev1.PullIfNotPresent
	}
	return cfg
}

func (cfg Config) validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if len(cfg.RunID) > 50 || !dnsLabel.MatchString(cfg.RunID) {
		bad("run id %q: want 1-50 of [a-z0-9-], starting and ending alphanumeric (it names the Pod)", cfg.RunID)
	}
	if len(cfg.Controller) > 63 || !labelValue.MatchString(cfg.Controller) {
		bad("controller %q: want a label value (1-63 of [A-Za-z0-9_.-], alphanumeric at both ends)", cfg.Controller)
	}
	if len(cfg.Namespace) > 63 || !dnsLabel.MatchString(cfg.Namespace) {
		bad("namespace %q: want a DNS label", cfg.Namespace)
	}
	if cfg.Image == "" {
		bad("image: want an image reference")
	}
	switch cfg.PullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		bad("pull policy %q: want Always, IfNotPresent or Never", cfg.PullPolicy)
	}
	if len(cfg.Args) == 0 || cfg.Args[0] == "" {
		bad("args: want a command")
	}
	for i, kv := range cfg.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || !envKey.MatchString(k) {
			bad("env[%d] %q: want KEY=VALUE with KEY of [A-Za-z0-9_], not starting with a digit", i, kv)
		}
	}
	if cfg.Timeout < 0 || cfg.Grace < 0 {
		bad("timeout %s, grace %s: want positive durations", cfg.Timeout, cfg.Grace)
	}
	if cfg.MemoryMB < 0 || cfg.DiskMB < 0 || cfg.TmpMB < 0 || cfg.CPUs < 0 || math.IsNaN(cfg.CPUs) || math.IsInf(cfg.CPUs, 0) {
		bad("limits (memory %d MB, cpus %v, disk %d MB, tmp %d MB): want positive numbers", cfg.MemoryMB, cfg.CPUs, cfg.DiskMB, cfg.TmpMB)
	}
	if cfg.RuntimeClassName != "" && (len(cfg.RuntimeClassName) > 63 || !dnsLabel.MatchString(cfg.RuntimeClassName)) {
		bad("runtime class %q: want a DNS label", cfg.RuntimeClassName)
	}
	return errors.Join(errs...)
}

// Labels returns the labels of the run's objects.
func (cfg Config) Labels() map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelRunID: cfg.RunID, LabelController: cfg.Controller}
}

// ActiveDeadline is the Pod's activeDeadlineSeconds: Timeout + Grace + oci.BackstopMargin
// (after defaults), so the controller acts first and the cluster only if the controller could not.
func (cfg Config) ActiveDeadline() int64 {
	cfg = cfg.withDefaults()
	return int64(math.Ceil((cfg.Timeout + cfg.Grace + oci.BackstopMargin).Seconds()))
}

func mb(n int64) resource.Quantity { return *resource.NewQuantity(n<<20, resource.BinarySI) }

// Pod returns the run's hardened Pod: UID/GID 2000 and non-root enforced by the kubelet, no
// privilege escalation, every capability dropped, seccomp RuntimeDefault, a read-only root
// filesystem, no service-account token, no service environment, no host namespace or path,
// CPU, memory and ephemeral-storage limits, size-limited emptyDirs for /workspace,
// /home/agent and /tmp, restartPolicy Never and an activeDeadlineSeconds backstop. The
// number of processes is bounded by the node's podPidsLimit (a Pod spec has no field for it).
func Pod(cfg Config) (*corev1.Pod, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("pod for run %q: %w", cfg.RunID, err)
	}
	uid, gid := int64(policy.AgentUID), int64(policy.AgentGID)
	limits := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(math.Ceil(cfg.CPUs*1000)), resource.DecimalSI),
		corev1.ResourceMemory:           mb(cfg.MemoryMB),
		corev1.ResourceEphemeralStorage: mb(2*cfg.DiskMB + logsMB),
	}
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(cfg.RunID), Namespace: cfg.Namespace, Labels: cfg.Labels()},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         ptr.To(cfg.ActiveDeadline()),
			TerminationGracePeriodSeconds: ptr.To(int64(math.Ceil(cfg.Grace.Seconds()))),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			ShareProcessNamespace:         ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      ptr.To(uid),
				RunAsGroup:     ptr.To(gid),
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: seccomp,
			},
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           cfg.Image,
				ImagePullPolicy: cfg.PullPolicy,
				Command:         cfg.Args,
				WorkingDir:      oci.WorkspacePath,
				Env:             env(cfg.Env),
				Resources:       corev1.ResourceRequirements{Limits: limits, Requests: limits},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser:                ptr.To(uid),
					RunAsGroup:               ptr.To(gid),
					RunAsNonRoot:             ptr.To(true),
					Privileged:               ptr.To(false),
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           seccomp,
					ProcMount:                ptr.To(corev1.DefaultProcMount),
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "workspace", MountPath: oci.WorkspacePath},
					{Name: "home", MountPath: oci.HomePath},
					{Name: "tmp", MountPath: oci.TmpPath},
				},
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Volumes: []corev1.Volume{
				emptyDir("workspace", corev1.StorageMediumDefault, cfg.DiskMB),
				emptyDir("home", corev1.StorageMediumDefault, cfg.DiskMB),
				emptyDir("tmp", corev1.StorageMediumMemory, cfg.TmpMB),
			},
		},
	}
	if cfg.UserNamespace {
		pod.Spec.HostUsers = ptr.To(false)
	}
	if cfg.RuntimeClassName != "" {
		pod.Spec.RuntimeClassName = ptr.To(cfg.RuntimeClassName)
	}
	return pod, nil
}

func emptyDir(name string, medium corev1.StorageMedium, sizeMB int64) corev1.Volume {
	size := mb(sizeMB)
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium, SizeLimit: &size},
	}}
}

// env is HOME, USER and PATH, then extra (a same-named key in extra replaces the default).
func env(extra []string) []corev1.EnvVar {
	vars := []corev1.EnvVar{
		{Name: "HOME", Value: oci.HomePath},
		{Name: "USER", Value: "agent"},
		{Name: "PATH", Value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		replaced := false
		for i := range vars {
			if vars[i].Name == k {
				vars[i].Value, replaced = v, true
			}
		}
		if !replaced {
			vars = append(vars, corev1.EnvVar{Name: k, Value: v})
		}
	}
	return vars
}

// NetworkPolicy returns the run's deny-all policy: it selects the run's Pod and allows no
// ingress and no egress. It binds only where the cluster's network plugin enforces policies.
func NetworkPolicy(cfg Config) (*networkingv1.NetworkPolicy, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("network policy for run %q: %w", cfg.RunID, err)
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(cfg.RunID), Namespace: cfg.Namespace, Labels: cfg.Labels()},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelRunID: cfg.RunID}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}, nil
}
