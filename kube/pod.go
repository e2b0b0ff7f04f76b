package kube

import (
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"
	"time"

	"maps"
	"strconv"

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

// ContainerName is the agent's container in the Pod; InstallContainerName is the init
// container that copies ceval's binaries from the init image into the ceval volume.
const (
	ContainerName        = "agent"
	InstallContainerName = "ceval-install"
)

// The agent container's view of ceval's volumes.
const (
	// CevalDir is where the agent container sees the ceval volume (read-only): the init
	// image's /ceval-init and /ceval-mock, copied there by the install container.
	CevalDir = "/.ceval"
	// RunDir is the agent container's small memory-backed /run/ceval (the mocks' socket).
	RunDir = "/run/ceval"
	// ControlPort is the port the init listens on at 127.0.0.1 in the Pod (kubeproto.ControlPort).
	ControlPort = 7170
	// InitFile and MockFile are the files of the ceval volume.
	InitFile = "ceval-init"
	MockFile = "ceval-mock"
)

// InitCommand is the agent container's command: ceval's init in control mode. The agent's
// argv and environment come over the control channel, never in the Pod spec (which anyone
// who may read Pods can read; the environment may hold the gateway's token).
var InitCommand = []string{CevalDir + "/" + InitFile, "--control", fmt.Sprintf("127.0.0.1:%d", ControlPort)}

// DefaultStartTimeout is Config.StartTimeout's default.
const DefaultStartTimeout = 10 * time.Minute

// cpuRequestDivisor: a Pod requests its CPU limit divided by this (see Pod).
const cpuRequestDivisor = 4

// Defaults for zero fields of Config (the rest default as in the local sandbox, package policy).
const (
	DefaultTmpMB = oci.DefaultTmpMB
	// logsMB is the container's ephemeral storage: its logs (the agent's output goes through
	// the control channel; the init writes little) and the termination message.
	logsMB = 64
	// HomeMB is the size of /home/agent, as the local sandbox's.
	HomeMB = 512
	// cevalMB and runMB size the memory-backed ceval and run volumes.
	cevalMB = 64
	runMB   = 1
)

// Config is one run's Pod. Zero numeric and duration fields take policy's defaults.
type Config struct {
	RunID      string // required; DNS label, at most 50 characters; names the Pod "ceval-RUNID"
	Controller string // required; label value naming the controller process that owns the run
	Namespace  string // required

	Image      string     // required: the agent's image
	InitImage  string     // required: ceval's init image (images.InitName, images build-init)
	PullPolicy PullPolicy // of both images; "" means IfNotPresent; Never for images imported into the node

	// Command replaces the agent container's command, InitCommand, when set: only tests that
	// run a script without ceval's init set it. A run never does (see InitCommand).
	Command []string
	// Mounts expose files of the ceval volume at paths of the agent container, read-only:
	// a mocked tool is {Path: "/usr/local/bin/uipath", File: MockFile}.
	Mounts []FileMount

	Timeout time.Duration // the agent's deadline; activeDeadlineSeconds adds Grace and a margin
	Grace   time.Duration // terminationGracePeriodSeconds
	// StartTimeout bounds StartAgent's wait for the agent container to run: scheduling
	// (a full cluster queues the Pod), pulling images, installing the init.
	StartTimeout time.Duration

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
	// ImagePullSecrets name dockerconfigjson Secrets of Namespace the kubelet pulls both
	// images with (a private registry). The Secrets are the cluster operator's: ceval never
	// reads or writes them, and a task never names them.
	ImagePullSecrets []string

	// Prep runs PrepContainerName before the agent (it reports the image's working directory
	// and environment: PrepReport); CopyWorkdir has it copy the image's working directory
	// into /workspace, OutputsFromImage each output's path of the image into its volume.
	Prep, CopyWorkdir, OutputsFromImage bool
	// Outputs are container paths each given a memory-backed volume of DiskMB, read-write
	// (sandbox.outputs); /tmp replaces the Pod's own /tmp.
	Outputs []string
}

// FileMount is one file of the ceval volume (InitFile or MockFile) mounted read-only at Path,
// an absolute path outside the Pod's volumes and the kernel's file systems.
type FileMount struct {
	Path string
	File string
}

var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// IsSecretName reports whether s can name a Secret: a DNS subdomain of at most 253 characters.
func IsSecretName(s string) bool { return len(s) <= 253 && dnsSubdomain.MatchString(s) }

// PodName is the name of the run's Pod and NetworkPolicy.
func PodName(runID string) string { return "ceval-" + runID }

var (
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelValue = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
)

func (cfg Config) withDefaults() Config {
	if cfg.Timeout == 0 {
		cfg.Timeout = policy.DefaultTimeout
	}
	if cfg.Grace == 0 {
		cfg.Grace = policy.DefaultGrace
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
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
		cfg.PullPolicy = PullIfNotPresent
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
	case PullAlways, PullIfNotPresent, PullNever:
	default:
		bad("pull policy %q: want Always, IfNotPresent or Never", cfg.PullPolicy)
	}
	if cfg.InitImage == "" {
		bad("init image: want an image reference (ceval images build-init prints it)")
	}
	if cfg.Command != nil && (len(cfg.Command) == 0 || cfg.Command[0] == "") {
		bad("command: want a program, or none for ceval's init")
	}
	seen := map[string]bool{}
	for i, m := range cfg.Mounts {
		if err := m.validate(); err != nil {
			bad("mounts[%d]: %w", i, err)
		}
		if seen[m.Path] {
			bad("mounts[%d]: %s mounted twice", i, m.Path)
		}
		seen[m.Path] = true
	}
	if err := cfg.validateOutputs(); err != nil {
		bad("%w", err)
	}
	if (cfg.CopyWorkdir || cfg.OutputsFromImage) && !cfg.Prep {
		bad("copying the image's files needs the prep container (Prep)")
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
	for _, s := range cfg.ImagePullSecrets {
		if !IsSecretName(s) {
			bad("image pull secret %q: want a Secret's name (a DNS subdomain)", s)
		}
	}
	return errors.Join(errs...)
}

// reserved are the agent container's mount points and the kernel's file systems: a file
// mounted there would hide or replace what ceval put there.
var reserved = []string{oci.WorkspacePath, oci.HomePath, oci.TmpPath, CevalDir, RunDir, "/proc", "/sys", "/dev", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}

func (m FileMount) validate() error {
	if m.File != InitFile && m.File != MockFile {
		return fmt.Errorf("file %q: want %s or %s", m.File, InitFile, MockFile)
	}
	if !path.IsAbs(m.Path) || path.Clean(m.Path) != m.Path || m.Path == "/" || strings.ContainsAny(m.Path, "\x00:") {
		return fmt.Errorf("path %q: want a clean absolute file path", m.Path)
	}
	for _, r := range reserved {
		if m.Path == r || strings.HasPrefix(m.Path, r+"/") {
			return fmt.Errorf("path %s: inside %s, which the Pod mounts itself", m.Path, r)
		}
	}
	return nil
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

// mb is n MiB as a quantity in Kubernetes' canonical notation (the largest binary suffix
// that divides it: 512Mi, 1Gi).
func mb(n int64) Quantity {
	v := n << 20
	if v == 0 {
		return "0"
	}
	suffix := ""
	for _, s := range []string{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"} {
		if v%1024 != 0 {
			break
		}
		v, suffix = v/1024, s
	}
	return Quantity(strconv.FormatInt(v, 10) + suffix)
}

// milli is n thousandths (of a CPU) in canonical notation: "2", "1500m".
func milli(n int64) Quantity {
	if n%1000 == 0 {
		return Quantity(strconv.FormatInt(n/1000, 10))
	}
	return Quantity(strconv.FormatInt(n, 10) + "m")
}

// Pod returns the run's hardened Pod: UID/GID 2000 and non-root enforced by the kubelet, no
// privilege escalation, every capability dropped, seccomp RuntimeDefault, a read-only root
// filesystem, no service-account token, no service environment, no host namespace or path,
// CPU, memory and ephemeral-storage limits, size-limited emptyDirs for /workspace,
// /home/agent and /tmp, restartPolicy Never and an activeDeadlineSeconds backstop. The
// number of processes is bounded by the node's podPidsLimit (a Pod spec has no field for it).
//
// Before the agent container, the init container InstallContainerName (as hardened, with
// small limits) copies ceval-init, ceval-mock and its static busybox from InitImage into the
// memory-backed ceval volume, which the agent container mounts read-only at CevalDir and runs
// InitCommand from; with Prep, PrepContainerName follows it (see there).
func (cfg Config) Pod() (*Pod, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("pod for run %q: %w", cfg.RunID, err)
	}
	uid, gid := int64(policy.AgentUID), int64(policy.AgentGID)
	limits := ResourceList{
		ResourceCPU:              milli(int64(math.Ceil(cfg.CPUs * 1000))),
		ResourceMemory:           mb(cfg.MemoryMB),
		ResourceEphemeralStorage: mb(logsMB),
	}
	// Memory and disk are requested as limited (not compressible: a node overcommitted on
	// them evicts or OOM-kills); CPU is requested at a quarter of its limit, as the local
	// sandbox's CPU limit is a quota and not a reservation: -j 4 runs of 2 CPUs fit a 2-core node.
	requests := maps.Clone(limits)
	requests[ResourceCPU] = milli(max(int64(math.Ceil(cfg.CPUs*1000/cpuRequestDivisor)), 1))
	seccomp := &SeccompProfile{Type: SeccompProfileTypeRuntimeDefault}
	command := InitCommand
	if cfg.Command != nil {
		command = cfg.Command
	}
	mounts := []VolumeMount{
		{Name: "workspace", MountPath: oci.WorkspacePath},
		{Name: "home", MountPath: oci.HomePath},
		{Name: "ceval", MountPath: CevalDir, ReadOnly: true},
		{Name: "run", MountPath: RunDir},
	}
	ownTmp := true
	for i, p := range cfg.Outputs {
		mounts = append(mounts, VolumeMount{Name: outputVolume(i), MountPath: p})
		ownTmp = ownTmp && p != oci.TmpPath
	}
	if ownTmp {
		mounts = append(mounts, VolumeMount{Name: "tmp", MountPath: oci.TmpPath})
	}
	for _, m := range cfg.Mounts {
		mounts = append(mounts, VolumeMount{Name: "ceval", MountPath: m.Path, SubPath: m.File, ReadOnly: true})
	}
	pod := &Pod{
		ObjectMeta: ObjectMeta{Name: PodName(cfg.RunID), Namespace: cfg.Namespace, Labels: cfg.Labels()},
		Spec: PodSpec{
			RestartPolicy:                 RestartPolicyNever,
			ActiveDeadlineSeconds:         ptrTo(cfg.ActiveDeadline()),
			TerminationGracePeriodSeconds: ptrTo(int64(math.Ceil(cfg.Grace.Seconds()))),
			AutomountServiceAccountToken:  ptrTo(false),
			EnableServiceLinks:            ptrTo(false),
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			ShareProcessNamespace:         ptrTo(false),
			SecurityContext: &PodSecurityContext{
				// The init, as UID 2000 with no capability, relays the model gateway on the
				// agent's 127.0.0.1:80: ports from 80 up are unprivileged in the Pod's own
				// network namespace (a safe sysctl; the node's stays as it is).
				Sysctls:        []Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "80"}},
				RunAsUser:      ptrTo(uid),
				RunAsGroup:     ptrTo(gid),
				RunAsNonRoot:   ptrTo(true),
				SeccompProfile: seccomp,
			},
			InitContainers: []Container{{
				Name:            InstallContainerName,
				Image:           cfg.InitImage,
				ImagePullPolicy: cfg.PullPolicy,
				// The init image's static busybox; the binaries are 0555 there and cp keeps them so.
				Command:                  []string{"/bin/busybox", "cp", "/" + InitFile, "/" + MockFile, "/bin/busybox", "/ceval/"},
				WorkingDir:               "/",
				Env:                      env(),
				Resources:                ResourceRequirements{Limits: installLimits, Requests: installLimits},
				SecurityContext:          containerSecurity(uid, gid, seccomp),
				VolumeMounts:             []VolumeMount{{Name: "ceval", MountPath: "/ceval"}},
				TerminationMessagePolicy: TerminationMessageFallbackToLogsOnError,
			}},
			Containers: []Container{{
				Name:                     ContainerName,
				Image:                    cfg.Image,
				ImagePullPolicy:          cfg.PullPolicy,
				Command:                  command,
				WorkingDir:               oci.WorkspacePath,
				Env:                      env(),
				Resources:                ResourceRequirements{Limits: limits, Requests: requests},
				SecurityContext:          containerSecurity(uid, gid, seccomp),
				VolumeMounts:             mounts,
				TerminationMessagePolicy: TerminationMessageReadFile,
			}},
			Volumes: []Volume{
				// Memory-backed, as the local sandbox's capped tmpfs: the kernel holds the
				// size at every write (a disk-backed emptyDir's limit is only the kubelet's
				// periodic eviction, long after an agent wrote past it), and what the agent
				// writes is charged to its memory limit, as locally.
				emptyDir("workspace", StorageMediumMemory, cfg.DiskMB),
				emptyDir("home", StorageMediumMemory, HomeMB),
				emptyDir("tmp", StorageMediumMemory, cfg.TmpMB),
				emptyDir("ceval", StorageMediumMemory, cevalMB),
				emptyDir("run", StorageMediumMemory, runMB),
			},
		},
	}
	for i := range cfg.Outputs {
		pod.Spec.Volumes = append(pod.Spec.Volumes, emptyDir(outputVolume(i), StorageMediumMemory, cfg.DiskMB))
	}
	if cfg.Prep {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, cfg.prepContainer(containerSecurity(uid, gid, seccomp), limits))
	}
	if cfg.UserNamespace {
		pod.Spec.HostUsers = ptrTo(false)
	}
	for _, s := range cfg.ImagePullSecrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, LocalObjectReference{Name: s})
	}
	if cfg.RuntimeClassName != "" {
		pod.Spec.RuntimeClassName = ptrTo(cfg.RuntimeClassName)
	}
	return pod, nil
}

// installLimits bound the install container: busybox copying two static binaries (~4 MB,
// charged to its memory as they land in the memory-backed volume).
var installLimits = ResourceList{
	ResourceCPU:              "100m",
	ResourceMemory:           "32Mi",
	ResourceEphemeralStorage: "8Mi",
}

// containerSecurity is every container's security context: the agent's UID and GID,
// non-root, unprivileged, no privilege escalation, every capability dropped, a read-only root
// filesystem, seccomp and the default (masked) /proc.
func containerSecurity(uid, gid int64, seccomp *SeccompProfile) *SecurityContext {
	return &SecurityContext{
		RunAsUser:                ptrTo(uid),
		RunAsGroup:               ptrTo(gid),
		RunAsNonRoot:             ptrTo(true),
		Privileged:               ptrTo(false),
		AllowPrivilegeEscalation: ptrTo(false),
		ReadOnlyRootFilesystem:   ptrTo(true),
		Capabilities:             &Capabilities{Drop: []Capability{"ALL"}},
		SeccompProfile:           seccomp,
		ProcMount:                ptrTo(DefaultProcMount),
	}
}

func emptyDir(name string, medium StorageMedium, sizeMB int64) Volume {
	size := mb(sizeMB)
	return Volume{Name: name, VolumeSource: VolumeSource{
		EmptyDir: &EmptyDirVolumeSource{Medium: medium, SizeLimit: &size},
	}}
}

// env is the containers' whole environment in the spec: HOME, USER and PATH. The agent's own
// environment comes over the control channel.
func env() []EnvVar {
	return []EnvVar{
		{Name: "HOME", Value: oci.HomePath},
		{Name: "USER", Value: "agent"},
		{Name: "PATH", Value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	}
}

// NetworkPolicy returns the run's deny-all policy: it selects the run's Pod and allows no
// ingress and no egress. It binds only where the cluster's network plugin enforces policies.
func (cfg Config) NetworkPolicy() (*NetworkPolicy, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("network policy for run %q: %w", cfg.RunID, err)
	}
	return &NetworkPolicy{
		ObjectMeta: ObjectMeta{Name: PodName(cfg.RunID), Namespace: cfg.Namespace, Labels: cfg.Labels()},
		Spec: NetworkPolicySpec{
			PodSelector: LabelSelector{MatchLabels: map[string]string{LabelRunID: cfg.RunID}},
			PolicyTypes: []PolicyType{PolicyTypeIngress, PolicyTypeEgress},
		},
	}, nil
}
