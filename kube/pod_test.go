package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func testConfig() Config {
	return Config{
		RunID:      "r1",
		Controller: "host-123",
		Namespace:  "evals",
		Image:      "ceval.test/busybox:1.35",
		InitImage:  "ceval.dev/ceval-init:0123456789ab",
	}
}

// mustPod is cfg's Pod as the API server reads it: its JSON decoded into k8s.io/api's Pod,
// refusing a field the API does not have (a misspelt JSON name would be dropped there).
func mustPod(t *testing.T, cfg Config) *corev1.Pod {
	t.Helper()
	p, err := cfg.Pod()
	if err != nil {
		t.Fatal(err)
	}
	var out corev1.Pod
	asAPI(t, p, &out)
	return &out
}

// asAPI decodes v's JSON into out strictly (every field of v must be one of out's), and
// checks that out's JSON says all v's does under the same names (Go's decoding ignores the
// case of names; the API server does not).
func asAPI(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: not what the API reads: %v", b, err)
	}
	back, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var mine, theirs any
	if err := json.Unmarshal(b, &mine); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &theirs); err != nil {
		t.Fatal(err)
	}
	if path := notIn(mine, theirs, ""); path != "" {
		t.Fatalf("%s: the API's JSON of it differs at %s:\n%s", b, path, back)
	}
}

// notIn is the first path where a holds something b does not, or "".
func notIn(a, b any, path string) string {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return path
		}
		for k, v := range a {
			if p := notIn(v, bm[k], path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		bs, ok := b.([]any)
		if !ok || len(bs) != len(a) {
			return path
		}
		for i := range a {
			if p := notIn(a[i], bs[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	default:
		if a != b {
			return path
		}
	}
	return ""
}

func TestPodRunsAsAgentNonRootWithoutPrivilegeEscalation(t *testing.T) {
	p := mustPod(t, testConfig())
	psc := p.Spec.SecurityContext
	if *psc.RunAsUser != 2000 || *psc.RunAsGroup != 2000 || !*psc.RunAsNonRoot {
		t.Errorf("pod security context: user %d group %d nonroot %v, want 2000 2000 true", *psc.RunAsUser, *psc.RunAsGroup, *psc.RunAsNonRoot)
	}
	if len(p.Spec.Containers) != 1 || len(p.Spec.InitContainers) != 1 || len(p.Spec.EphemeralContainers) != 0 {
		t.Fatalf("want exactly one container and the install container, got %d (+%d init)", len(p.Spec.Containers), len(p.Spec.InitContainers))
	}
	for _, c := range allContainers(p) {
		sc := c.SecurityContext
		switch {
		case *sc.RunAsUser != 2000 || *sc.RunAsGroup != 2000 || !*sc.RunAsNonRoot:
			t.Errorf("%s identity: user %d group %d nonroot %v", c.Name, *sc.RunAsUser, *sc.RunAsGroup, *sc.RunAsNonRoot)
		case *sc.Privileged || *sc.AllowPrivilegeEscalation:
			t.Errorf("%s: privileged %v, allowPrivilegeEscalation %v: want both false", c.Name, *sc.Privileged, *sc.AllowPrivilegeEscalation)
		case !*sc.ReadOnlyRootFilesystem:
			t.Errorf("%s: root filesystem is writable", c.Name)
		case *sc.ProcMount != corev1.DefaultProcMount:
			t.Errorf("%s: procMount %s: want Default (masked /proc paths)", c.Name, *sc.ProcMount)
		}
	}
}

func allContainers(p *corev1.Pod) []corev1.Container {
	return append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...)
}

func TestPodDropsEveryCapabilityAndAddsNone(t *testing.T) {
	for _, c := range allContainers(mustPod(t, testConfig())) {
		caps := c.SecurityContext.Capabilities
		if len(caps.Drop) != 1 || caps.Drop[0] != "ALL" || len(caps.Add) != 0 {
			t.Errorf("%s capabilities: drop %v add %v, want drop [ALL] add none", c.Name, caps.Drop, caps.Add)
		}
	}
}

func TestPodUsesRuntimeDefaultSeccomp(t *testing.T) {
	p := mustPod(t, testConfig())
	for _, s := range []*corev1.SeccompProfile{p.Spec.SecurityContext.SeccompProfile, p.Spec.Containers[0].SecurityContext.SeccompProfile, p.Spec.InitContainers[0].SecurityContext.SeccompProfile} {
		if s == nil || s.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("seccomp %v: want RuntimeDefault at pod and container level", s)
		}
	}
}

func TestPodGetsNoServiceAccountTokenServiceLinksOrHostNamespaces(t *testing.T) {
	s := mustPod(t, testConfig()).Spec
	if *s.AutomountServiceAccountToken || *s.EnableServiceLinks {
		t.Errorf("automountServiceAccountToken %v, enableServiceLinks %v: want false", *s.AutomountServiceAccountToken, *s.EnableServiceLinks)
	}
	if s.HostNetwork || s.HostPID || s.HostIPC || *s.ShareProcessNamespace {
		t.Errorf("host network %v pid %v ipc %v, shared pid ns %v: want none", s.HostNetwork, s.HostPID, s.HostIPC, *s.ShareProcessNamespace)
	}
	for _, v := range s.Volumes {
		if v.EmptyDir == nil {
			t.Errorf("volume %s is not an emptyDir (host paths, secrets and projected tokens are never mounted)", v.Name)
		}
	}
	for _, c := range append(s.InitContainers, s.Containers...) {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				t.Errorf("host port %d", p.HostPort)
			}
		}
	}
}

func TestPodVolumesAreSizeLimited(t *testing.T) {
	cfg := testConfig()
	cfg.DiskMB, cfg.TmpMB = 100, 32
	p := mustPod(t, cfg)
	want := map[string]struct {
		path   string
		medium corev1.StorageMedium
		size   string
	}{
		"workspace": {"/workspace", corev1.StorageMediumMemory, "100Mi"},
		"home":      {"/home/agent", corev1.StorageMediumMemory, "512Mi"},
		"tmp":       {"/tmp", corev1.StorageMediumMemory, "32Mi"},
		"ceval":     {"/.ceval", corev1.StorageMediumMemory, "64Mi"},
		"run":       {"/run/ceval", corev1.StorageMediumMemory, "1Mi"},
	}
	mounts := map[string]string{}
	for _, m := range p.Spec.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
		if m.ReadOnly != (m.Name == "ceval") || m.SubPath != "" || m.MountPropagation != nil {
			t.Errorf("mount %s: readOnly %v subPath %q propagation %v", m.Name, m.ReadOnly, m.SubPath, m.MountPropagation)
		}
	}
	if len(p.Spec.Volumes) != len(want) || len(mounts) != len(want) {
		t.Fatalf("volumes %d, mounts %d: want %d", len(p.Spec.Volumes), len(mounts), len(want))
	}
	for _, v := range p.Spec.Volumes {
		w, ok := want[v.Name]
		if !ok {
			t.Errorf("unexpected volume %s", v.Name)
			continue
		}
		if mounts[v.Name] != w.path || v.EmptyDir.Medium != w.medium || v.EmptyDir.SizeLimit.Cmp(resource.MustParse(w.size)) != 0 {
			t.Errorf("volume %s at %s medium %q size %v: want %s %q %s", v.Name, mounts[v.Name], v.EmptyDir.Medium, v.EmptyDir.SizeLimit, w.path, w.medium, w.size)
		}
	}
}

// Memory and disk are requested as limited; CPU at a quarter of its limit (a quota, as
// locally, not a reservation).
func TestPodRequestsMemoryAndDiskAsLimitedAndAQuarterOfItsCPU(t *testing.T) {
	cfg := testConfig()
	cfg.MemoryMB, cfg.CPUs, cfg.DiskMB = 512, 1.5, 100
	r := mustPod(t, cfg).Spec.Containers[0].Resources
	want := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("1500m"),
		corev1.ResourceMemory:           resource.MustParse("512Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("64Mi"), // logs only: the volumes are memory-backed
	}
	for name, q := range want {
		if l, ok := r.Limits[name]; !ok || l.Cmp(q) != 0 {
			t.Errorf("limit %s = %v, want %v", name, r.Limits[name], q)
		}
		if name == corev1.ResourceCPU {
			q = resource.MustParse("375m")
		}
		if rq, ok := r.Requests[name]; !ok || rq.Cmp(q) != 0 {
			t.Errorf("request %s = %v, want %v", name, r.Requests[name], q)
		}
	}
}

func TestPodNeverRestartsAndHasADeadlineBackstop(t *testing.T) {
	cfg := testConfig()
	cfg.Timeout, cfg.Grace = 90*time.Second, 5*time.Second
	s := mustPod(t, cfg).Spec
	if s.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s", s.RestartPolicy)
	}
	if *s.ActiveDeadlineSeconds != 90+5+30 || *s.TerminationGracePeriodSeconds != 5 {
		t.Errorf("activeDeadlineSeconds %d, terminationGracePeriodSeconds %d: want 125, 5", *s.ActiveDeadlineSeconds, *s.TerminationGracePeriodSeconds)
	}
}

func TestPodUserNamespaceAndRuntimeClassOnlyWhenAsked(t *testing.T) {
	p := mustPod(t, testConfig())
	if p.Spec.HostUsers != nil || p.Spec.RuntimeClassName != nil {
		t.Errorf("hostUsers %v runtimeClassName %v: want both unset by default", p.Spec.HostUsers, p.Spec.RuntimeClassName)
	}
	cfg := testConfig()
	cfg.UserNamespace, cfg.RuntimeClassName = true, "gvisor"
	p = mustPod(t, cfg)
	if p.Spec.HostUsers == nil || *p.Spec.HostUsers || p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName != "gvisor" {
		t.Errorf("hostUsers %v runtimeClassName %v: want false, gvisor", p.Spec.HostUsers, p.Spec.RuntimeClassName)
	}
}

func TestPodLabelsNameTheRunAndController(t *testing.T) {
	p := mustPod(t, testConfig())
	want := map[string]string{LabelManagedBy: "ceval", LabelRunID: "r1", LabelController: "host-123"}
	for k, v := range want {
		if p.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, p.Labels[k], v)
		}
	}
	if p.Name != "ceval-r1" || p.Namespace != "evals" {
		t.Errorf("pod %s/%s", p.Namespace, p.Name)
	}
}

// Anyone who may read Pods reads the spec: the agent's argv and environment (the gateway's
// token) come over the control channel, never in it.
func TestPodRunsTheInitInControlModeWithNoAgentArgvOrEnvInTheSpec(t *testing.T) {
	c := mustPod(t, testConfig()).Spec.Containers[0]
	if strings.Join(c.Command, " ") != "/.ceval/ceval-init --control 127.0.0.1:7170" || len(c.Args) != 0 {
		t.Errorf("command %q args %q: want ceval's init in control mode", c.Command, c.Args)
	}
	got := map[string]string{}
	for _, e := range c.Env {
		got[e.Name] = e.Value
		if e.ValueFrom != nil {
			t.Errorf("env %s from %v", e.Name, e.ValueFrom)
		}
	}
	want := map[string]string{"HOME": "/home/agent", "USER": "agent", "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if len(got) != len(want) || len(c.EnvFrom) != 0 {
		t.Errorf("env %v envFrom %v: want only %v", got, c.EnvFrom, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("env %s = %q, want %q", k, got[k], v)
		}
	}
}

// The Pod names the operator's pull Secrets (both of its images are pulled with them), and
// none when none is configured.
func TestPodNamesTheImagePullSecrets(t *testing.T) {
	cfg := testConfig()
	if p := mustPod(t, cfg); p.Spec.ImagePullSecrets != nil {
		t.Errorf("pull secrets %v with none configured", p.Spec.ImagePullSecrets)
	}
	cfg.ImagePullSecrets = []string{"regcred", "mirror.example"}
	got := mustPod(t, cfg).Spec.ImagePullSecrets
	if len(got) != 2 || got[0].Name != "regcred" || got[1].Name != "mirror.example" {
		t.Errorf("pull secrets %v, want regcred and mirror.example", got)
	}
}

// The install container sees only the ceval volume (the agent's workspace and home are not
// there yet, and nothing else of the Pod is its business) and copies the two binaries and
// its busybox (the prep container's).
func TestPodInstallContainerWritesOnlyTheCevalVolume(t *testing.T) {
	cfg := testConfig()
	cfg.PullPolicy = PullNever
	c := mustPod(t, cfg).Spec.InitContainers[0]
	if c.Name != "ceval-install" || c.Image != cfg.InitImage || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("install container %s image %s pull %s", c.Name, c.Image, c.ImagePullPolicy)
	}
	if strings.Join(c.Command, " ") != "/bin/busybox cp /ceval-init /ceval-mock /bin/busybox /ceval/" {
		t.Errorf("install command %q", c.Command)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != "ceval" || c.VolumeMounts[0].MountPath != "/ceval" || c.VolumeMounts[0].SubPath != "" {
		t.Errorf("install mounts %+v: want only the ceval volume at /ceval", c.VolumeMounts)
	}
	r := c.Resources
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		l, ok := r.Limits[name]
		if !ok || l.Cmp(resource.MustParse("64Mi")) > 0 || r.Requests[name] != l {
			t.Errorf("install %s limit %v request %v: want a small limit equal to the request", name, r.Limits[name], r.Requests[name])
		}
	}
}

func TestPodMountsMockedToolsReadOnlyFromTheCevalVolume(t *testing.T) {
	cfg := testConfig()
	cfg.Mounts = []FileMount{{Path: "/usr/local/bin/uipath", File: "ceval-mock"}, {Path: "/opt/tools/gh", File: "ceval-mock"}}
	var got []string
	for _, m := range mustPod(t, cfg).Spec.Containers[0].VolumeMounts {
		if m.SubPath != "" {
			if m.Name != "ceval" || !m.ReadOnly {
				t.Errorf("mount %+v: want read-only from the ceval volume", m)
			}
			got = append(got, m.MountPath+"="+m.SubPath)
		}
	}
	if strings.Join(got, " ") != "/usr/local/bin/uipath=ceval-mock /opt/tools/gh=ceval-mock" {
		t.Errorf("file mounts %v", got)
	}
}

func TestPodRefusesBadConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"run id with a slash":      {func(c *Config) { c.RunID = "../x" }, "run id"},
		"run id too long":          {func(c *Config) { c.RunID = strings.Repeat("a", 51) }, "run id"},
		"uppercase namespace":      {func(c *Config) { c.Namespace = "Evals" }, "namespace"},
		"no controller":            {func(c *Config) { c.Controller = "" }, "controller"},
		"no image":                 {func(c *Config) { c.Image = "" }, "image"},
		"no init image":            {func(c *Config) { c.InitImage = "" }, "init image"},
		"empty command":            {func(c *Config) { c.Command = []string{} }, "command"},
		"mount of another file":    {func(c *Config) { c.Mounts = []FileMount{{Path: "/usr/bin/x", File: "../etc/passwd"}} }, "mounts[0]"},
		"relative mount":           {func(c *Config) { c.Mounts = []FileMount{{Path: "usr/bin/x", File: "ceval-mock"}} }, "mounts[0]"},
		"unclean mount":            {func(c *Config) { c.Mounts = []FileMount{{Path: "/usr/../workspace/x", File: "ceval-mock"}} }, "mounts[0]"},
		"mount over the workspace": {func(c *Config) { c.Mounts = []FileMount{{Path: "/workspace/bin/x", File: "ceval-mock"}} }, "inside /workspace"},
		"mount over the init":      {func(c *Config) { c.Mounts = []FileMount{{Path: "/.ceval/ceval-init", File: "ceval-mock"}} }, "inside /.ceval"},
		"mount over proc":          {func(c *Config) { c.Mounts = []FileMount{{Path: "/proc/self/exe", File: "ceval-mock"}} }, "inside /proc"},
		"mount twice":              {func(c *Config) { c.Mounts = []FileMount{{"/bin/x", "ceval-mock"}, {"/bin/x", "ceval-init"}} }, "twice"},
		"negative memory":          {func(c *Config) { c.MemoryMB = -1 }, "limits"},
		"bad pull policy":          {func(c *Config) { c.PullPolicy = "Sometimes" }, "pull policy"},
		"bad runtime class":        {func(c *Config) { c.RuntimeClassName = "Bad_Name" }, "runtime class"},
		"bad pull secret":          {func(c *Config) { c.ImagePullSecrets = []string{"regcred", "../x"} }, "image pull secret"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			tc.edit(&cfg)
			_, err := cfg.Pod()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Pod: %v, want an error about %s", err, tc.want)
			}
			if _, err := cfg.NetworkPolicy(); err == nil {
				t.Error("NetworkPolicy accepted it")
			}
		})
	}
}

func TestNetworkPolicyDeniesAllIngressAndEgressOfTheRun(t *testing.T) {
	own, err := testConfig().NetworkPolicy()
	if err != nil {
		t.Fatal(err)
	}
	var np networkingv1.NetworkPolicy
	asAPI(t, own, &np)
	s := np.Spec
	if len(s.Ingress) != 0 || len(s.Egress) != 0 {
		t.Errorf("ingress %v egress %v: want no allow rule", s.Ingress, s.Egress)
	}
	types := map[networkingv1.PolicyType]bool{}
	for _, pt := range s.PolicyTypes {
		types[pt] = true
	}
	if !types[networkingv1.PolicyTypeIngress] || !types[networkingv1.PolicyTypeEgress] {
		t.Errorf("policyTypes %v: want Ingress and Egress (an empty Egress list alone allows all egress)", s.PolicyTypes)
	}
	if len(s.PodSelector.MatchLabels) != 1 || s.PodSelector.MatchLabels[LabelRunID] != "r1" || len(s.PodSelector.MatchExpressions) != 0 {
		t.Errorf("podSelector %v: want exactly the run's Pod", s.PodSelector)
	}
	if np.Name != "ceval-r1" || np.Namespace != "evals" {
		t.Errorf("policy %s/%s", np.Namespace, np.Name)
	}
}
