package kubernetes

import (
	"archive/tar"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/runtime-spec/specs-go"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/internal/kubeproto"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/mockd"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// Options select the Kubernetes backend (ceval run --backend kubernetes): each run's
// agent is a Pod of Cluster with the local sandbox's hardening, driven through ceval's init
// in the Pod over a port-forward (package kube). The workspace goes in and out through that
// channel; the model gateway and the mocks stay here and are relayed to the Pod's loopback.
type Options struct {
	Cluster    *kube.Cluster
	Namespace  string
	Controller string // labels what this process creates, so ceval gc finds what it left
	InitImage  string // the image holding ceval's init (ceval images build-init)
	PullPolicy kube.PullPolicy
	// ImagePullSecrets name dockerconfigjson Secrets of Namespace the nodes pull the agent's
	// and the init's images with (kubernetes.image_pull_secrets; never a task's).
	ImagePullSecrets []string
	// RuntimeClassName is a sandboxed runtime (gVisor, Kata) the cluster offers; "" is its default.
	RuntimeClassName string
	// UserNamespaces sets hostUsers: false (only where every node supports it).
	UserNamespaces bool
	// AcceptUnenforcedNetworkPolicy runs the agent even when its Pod reached the API server or
	// the kubelet before the agent started (the cluster does not enforce the run's deny-all
	// NetworkPolicy); only the user's config says so, never a task.
	AcceptUnenforcedNetworkPolicy bool
	// Probes are addresses the init must fail to reach before the agent starts (the API
	// server's service and the nodes' kubelets); nil: found from the cluster.
	Probes []string
	// Registry maps ceval's own images (the init image, ceval.local agent and package
	// images) to where ceval images push --kubernetes put them (kubernetes.registry and
	// kubernetes.images); a mapped image is pinned at that registry and named REPO@DIGEST,
	// unless PullPolicy is Never.
	Registry images.NodeRegistry

	api kubeAPI // nil: Cluster; tests give a fake
}

// kubeAPI is what a run needs of the cluster.
type kubeAPI interface {
	// startPod creates the run's NetworkPolicy and Pod and waits until the init listens.
	startPod(ctx context.Context, cfg kube.Config) (kubePod, error)
	// probeTargets are the addresses a Pod must not reach.
	probeTargets(ctx context.Context) ([]string, error)
}

// kubePod is a run's Pod as the run uses it.
type kubePod interface {
	// dial opens a new connection to the init's control port.
	dial(ctx context.Context) (net.Conn, error)
	// lost says why the Pod went away, if it did (a *kube.PodLostError), else nil.
	lost(ctx context.Context) error
	// imageDigests are the agent's and the init's images as the node resolved them, "" if unknown.
	imageDigests(ctx context.Context) (agent, init string)
	// prepReport is what the prep container found in the agent's image (nil: it did not run).
	prepReport(ctx context.Context) (*kube.PrepReport, error)
	// initState is the agent container's state: running, or ended with the init's exit code.
	initState(ctx context.Context) (code int, ended bool, err error)
	// delete removes the Pod and its NetworkPolicy.
	delete(ctx context.Context) error
}

// Backend is the sandbox.Backend of --backend kubernetes.
type Backend struct {
	pins *images.Pinner
	k    *Options
}

// New is the backend running each sandbox as a Pod as o says; pins (nil: none) pins the
// images tasks name to digests.
func New(pins *images.Pinner, o Options) Backend {
	if o.api == nil {
		o.api = clusterAPI{o.Cluster}
	}
	return Backend{pins, &o}
}

// Check refuses what a Pod cannot run (Check), as an *sandbox.InputError.
func (b Backend) Check(t *task.Task) error {
	if err := Check(t); err != nil {
		return &sandbox.InputError{Err: err}
	}
	return nil
}

// InitPath is ceval's init in the Pod: its ceval volume's (kube.CevalDir), where the init
// container installed it.
func (b Backend) InitPath() string { return kube.CevalDir + "/" + kube.InitFile }

// Options are the options the backend was made with (New's o).
func (b Backend) Options() Options { return *b.k }

// ServicesRefusal is why a task's services do not run as containers of the run's Pod:
// every guarantee but the network's would hold (a UID of their own, the agent's hardening,
// a kubelet startup probe before the agent, their logs, stopped after it), but a Pod has one
// network namespace, which the local backend's per-service namespaces and relay of declared
// ports keep apart (supervisor/services.go).
const ServicesRefusal = "services (a Pod's containers share one network namespace, so the agent would reach every port a service listens on, " +
	"not only the declared ones, and a service would reach the agent's own ports, its relay to the model gateway " +
	"and ceval-init's control port, which takes its first connection as the controller's; " +
	"the local backend gives each service a network namespace of its own and relays only the declared ports)"

// CodexJudgeRefusal is why Check refuses an agent_judge whose judge is Codex: its
// commands are confined through shells bound over the agent image's (InitBinds), which a
// Pod does not get.
const CodexJudgeRefusal = "agent_judge with judge_agent: codex (the judge's commands are confined through shells bound into its container, which a Pod does not get)"

// Check refuses, before anything starts, what the Kubernetes backend cannot run
// with the local backend's guarantees yet; each message says what to do instead.
func Check(t *task.Task) error {
	var why []string
	if len(t.Setup) > 0 || len(t.AfterAgent) > 0 {
		why = append(why, "setup and after_agent steps (each runs in a container of its own)")
	}
	if t.MultiStep() {
		why = append(why, "multi-step tasks (steps:, the agent going again over the same workspace)")
	} else if t.MaxRuns() > 1 {
		why = append(why, "iterations (the agent going again over the same workspace)")
	}
	if t.NeedsVerifier() {
		why = append(why, "sandbox: container criteria (verifier containers)")
	}
	if len(t.Plugins) > 0 {
		why = append(why, "plugins (bundles mounted from this machine)")
	}
	if t.Sandbox.Network == policy.NetworkHost {
		why = append(why, "sandbox.network: host")
	}
	if len(t.Services) > 0 {
		why = append(why, ServicesRefusal)
	}
	for _, c := range t.Criteria {
		if s, ok := c.Spec.(*task.AgentJudgeSpec); ok && s.JudgeAgent == task.AgentCodex {
			why = append(why, CodexJudgeRefusal)
			break
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("task %s: the kubernetes backend does not run %s yet: run this task with the local backend (ceval run --backend local, on a machine with containerd; an experiment's other tasks can still go to the cluster in a run of their own)", t.ID, strings.Join(why, "; "))
}

// Prepare has nothing to start ahead of the Pod.
func (k Backend) Prepare() sandbox.Reservation { return nil }

func (k Backend) ResolveImage(ctx context.Context, sb task.Sandbox) (images.Image, error) {
	// Nodes that pull from a registry get the image by the digest its tag resolves to now
	// (pinned: every run of an experiment the same); imported images (pull policy Never) are
	// named as they are. The node's resolution is recorded, and checked against a pin, once
	// the Pod runs (imageDigest).
	// ceval's own images (ceval.local/...) are pinned where the config's registry mapping
	// says ceval images push --kubernetes put them.
	name, err := k.nodeImage(ctx, sb.Image)
	if err != nil {
		return images.Image{Name: sb.Image}, err
	}
	if k.pins != nil && k.k.PullPolicy != kube.PullNever && images.Pinnable(name) {
		pin, err := k.pins.Remote(ctx, name)
		if err != nil {
			return images.Image{Name: sb.Image}, err
		}
		return images.Image{Name: images.PinnedName(pin), Reference: pin.Reference, Digest: pin.Digest}, nil
	}
	return images.Image{Name: name}, nil
}

// nodeImage is the name the nodes pull image by: its registry reference when the config
// maps it (a ceval.local image, pull policy not Never), else image itself.
func (k Backend) nodeImage(ctx context.Context, image string) (string, error) {
	if k.k.PullPolicy == kube.PullNever {
		return image, nil
	}
	ref, ok := k.k.Registry.Ref(image)
	if !ok {
		return image, nil
	}
	if k.pins == nil {
		return "", fmt.Errorf("image %s maps to %s, but this run has no registry resolver to pin it with", image, ref)
	}
	if _, err := k.pins.Remote(ctx, ref); err != nil {
		return "", fmt.Errorf("image %s (kubernetes.registry maps it to %s): %w; push it with ceval images push --kubernetes", image, ref, err)
	}
	return ref, nil
}

// initImage is the Pod's init image: REPO@DIGEST when the config maps it to a registry
// (pinned like the agent's image: every run of an experiment the same), else as configured.
func (k Backend) initImage(ctx context.Context) (string, error) {
	name, err := k.nodeImage(ctx, k.k.InitImage)
	if err != nil || name == k.k.InitImage {
		return name, err
	}
	pin, err := k.pins.Remote(ctx, name)
	if err != nil {
		return "", err
	}
	return images.PinnedName(pin), nil
}

// checkNodeDigest refuses a Pod whose node ran another image than the digest image names
// (REPO@DIGEST); an image named otherwise is not checked. id is the container's imageID as
// the node reports it (REPO@DIGEST for a pulled image).
func checkNodeDigest(image, id string) error {
	i := strings.LastIndex(image, "@sha256:")
	if i < 0 {
		return nil
	}
	want := image[i+1:]
	j := strings.LastIndex(id, "@")
	if j < 0 || id[j+1:] != want {
		return fmt.Errorf("the node ran image %q for %s, not its pinned digest %s; refused", id, image, want)
	}
	return nil
}

// checkInitExe refuses a Pod whose init is not this ceval's ceval-init (sha256 want): the
// kubelet's imageID cannot tell, since a node whose containerd holds other content under the
// init image's pinned name REPO@DIGEST reports that name's digest whatever it ran. got is
// the hash the init reported of its own executable ("" from an init too old to report it).
// The init's Attest is what the Pod's own binary says, so this catches a node's mistake (a
// stale or other build under the name), not a node that lies.
func checkInitExe(initImage, got, want string) error {
	if got == want {
		return nil
	}
	if got == "" {
		got = "no hash (an init older than this ceval)"
	}
	return fmt.Errorf("the Pod's init from image %s is not this ceval's ceval-init: its executable's sha256 is %s, want %s; refused (the node holds other content under that name, or kubernetes.init_image names another ceval's init: run ceval images push --kubernetes with this ceval, or ceval images build-init and import it into the nodes)", initImage, got, want)
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// podRunID names a run's Pod: the start of the run's ID as a DNS label and a random suffix,
// so a retry never meets the Pod of an earlier attempt that is still being deleted.
func podRunID(id string) string {
	s := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(id), "-"), "-")
	if len(s) > 36 {
		s = strings.TrimRight(s[:36], "-")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	if s == "" {
		return hex.EncodeToString(b[:])
	}
	return s + "-" + hex.EncodeToString(b[:])
}

func (k Backend) NewSandbox(ctx context.Context, cfg sandbox.Config) (_ sandbox.Sandbox, err error) {
	s := &kubeSandbox{cfg: cfg, k: k.k}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close(context.WithoutCancel(ctx)))
		}
	}()
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	s.ws, s.home = filepath.Join(cfg.Dir, "workspace"), filepath.Join(cfg.Dir, "home")
	for _, d := range []string{s.ws, s.home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	if cfg.Prepare != nil {
		if err := cfg.Prepare(s.ws, s.home); err != nil {
			return nil, err
		}
	}
	if len(cfg.InitBinds) > 0 {
		return nil, &sandbox.InputError{Err: errors.New("the kubernetes backend does not run " + CodexJudgeRefusal + ": use judge_agent: claude-code there")}
	}
	mounts, relays, err := kubeMounts(cfg.Mounts, cfg.InitDir)
	if err != nil {
		return nil, &sandbox.InputError{Err: err}
	}
	probes := k.k.Probes
	if probes == nil {
		if probes, err = k.k.api.probeTargets(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Gateway != nil {
		relays = append(relays, kubeproto.Relay{Name: relayGateway, Network: "tcp", Address: strings.TrimPrefix(sandbox.GatewayURL, "http://")})
	}
	initImage, err := k.initImage(ctx)
	if err != nil {
		return nil, &sandbox.InputError{Err: err}
	}
	lim := cfg.Limits
	pod, err := k.k.api.startPod(ctx, kube.Config{
		RunID: podRunID(cfg.ID), Controller: k.k.Controller, Namespace: k.k.Namespace,
		Image: cfg.Image, PullPolicy: k.k.PullPolicy, InitImage: initImage, Mounts: mounts,
		Timeout: lim.Timeout, Grace: cfg.Grace, MemoryMB: lim.MemoryMB, CPUs: lim.CPUs, DiskMB: lim.DiskMB,
		UserNamespace: k.k.UserNamespaces, RuntimeClassName: k.k.RuntimeClassName, ImagePullSecrets: k.k.ImagePullSecrets,
		// The prep container, in the agent's image, reports the image's ENV and working
		// directory and copies what the run takes from the image (see kube.PrepContainerName).
		Prep:        needsPrep(cfg),
		CopyWorkdir: needsPrep(cfg) && cfg.ImageWorkdir != "" && cfg.ImageWorkdir != task.ImageWorkdirIgnore,
		Outputs:     cfg.Outputs, OutputsFromImage: needsPrep(cfg) && cfg.OutputsFromImage,
	})
	if err != nil {
		return nil, err
	}
	s.pod = pod
	var initID string
	s.imageID, initID = pod.imageDigests(ctx)
	if err := checkNodeDigest(cfg.Image, s.imageID); err != nil {
		return nil, err
	}
	if err := checkNodeDigest(initImage, initID); err != nil {
		return nil, fmt.Errorf("init image: %w", err)
	}
	imageEnv, err := s.fromImage(ctx, cfg)
	if err != nil {
		return nil, err
	}
	sess, att, err := newSession(ctx, pod.dial, kubeproto.Start{
		Argv: cfg.Argv, Env: kubeEnv(sandbox.MergeImageEnv(sandbox.PrependImageEnv(imageEnv, cfg.PrependEnv), cfg.Env)), Dir: cmp.Or(cfg.Cwd, oci.WorkspacePath), // a judge agent's is its own (sandbox.Config.Cwd)
		Timeout: lim.Timeout, Grace: cfg.Grace, Relays: relays, Probes: probes,
		FileSizeLimit: uint64(max(lim.DiskMB, 1)) << 20,
	})
	if err != nil {
		return nil, s.podError(ctx, fmt.Errorf("the Pod's init: %w", err))
	}
	s.sess = sess
	if s.att, err = kube.ParseAttest(att); err != nil {
		return nil, err
	}
	if err := s.checkAttestation(att, lim); err != nil {
		return nil, err
	}
	if err := checkInitExe(initImage, att.Exe, embedded.Init.SHA256()); err != nil {
		return nil, err
	}
	for _, d := range []struct{ local, in string }{{s.ws, oci.WorkspacePath}, {s.home, oci.HomePath}} {
		if err := s.copyIn(ctx, d.local, d.in); err != nil {
			return nil, s.podError(ctx, fmt.Errorf("copy %s into the Pod: %w", d.in, err))
		}
	}
	return s, nil
}

// needsPrep says whether the run's Pod needs the prep container: every image but ceval's
// default, whose config ceval wrote (WORKDIR /workspace holding nothing, ENV the standard
// PATH: what the Pod has without it), when the run has no outputs. It costs a container start
// (0.85 s a run on the 2-core test node).
func needsPrep(cfg sandbox.Config) bool {
	return cfg.Image != images.DefaultName || len(cfg.Outputs) > 0
}

// fromImage reads the prep container's report: a copy that failed is the task's input
// error (the image is its author's), the image's ENV is returned as ceval applies it
// (sandbox.ImageEnv, the working directory's paths moved to /workspace when it was copied),
// and the run's events say what was taken from the image, as a local run's do.
func (s *kubeSandbox) fromImage(ctx context.Context, cfg sandbox.Config) ([]string, error) {
	rep, err := s.pod.prepReport(ctx)
	if err != nil || rep == nil {
		return nil, err
	}
	copyWD := cfg.ImageWorkdir != "" && cfg.ImageWorkdir != task.ImageWorkdirIgnore
	if cfg.ImageWorkdir == task.ImageWorkdirCopy && rep.Workdir == "/" {
		return nil, &sandbox.InputError{Err: fmt.Errorf("sandbox.image_workdir is copy but image %s names no working directory: set WORKDIR in the image or drop sandbox.image_workdir", cfg.Image)}
	}
	if rep.Errors != "" {
		return nil, &sandbox.InputError{Err: fmt.Errorf("image %s: copying its files into the Pod's volumes (as the agent's UID %d, within sandbox.limits.disk_mb %d) failed:%s fix: make those files readable by any user in the image (chmod -R a+rX), raise sandbox.limits.disk_mb, or set sandbox.image_workdir: ignore", cfg.Image, policy.AgentUID, cfg.Limits.DiskMB, " "+rep.Errors)}
	}
	wd := ""
	if copyWD && rep.Workdir != "/" {
		wd = rep.Workdir
		if cfg.Emit != nil {
			cfg.Emit("image_workdir", map[string]any{"image": cfg.Image, "dir": wd})
		}
	}
	env, dropped := sandbox.ImageEnv(rep.Env, wd)
	if (len(env) > 0 || len(dropped) > 0) && cfg.Emit != nil {
		cfg.Emit("image_env", map[string]any{"image": cfg.Image, "env": env, "dropped": dropped})
	}
	if cfg.ImageWorkdirEnv != "" && wd != "" {
		env = append(env, cfg.ImageWorkdirEnv+"="+wd) // as the local backend: under cfg.Env
	}
	return env, nil
}

// newSession opens the control channel to the Pod's init. The agent container counts as
// running from its process's start, a moment before the init listens: a connection the
// Pod's loopback refused (the port-forward says so on the stream, after the dial) is tried
// again for up to initListenTimeout. Nothing reached the init then, so it still takes the
// next connection as its control connection.
func newSession(ctx context.Context, dial func(context.Context) (net.Conn, error), start kubeproto.Start) (*kube.Session, *kubeproto.Attest, error) {
	deadline := time.Now().Add(initListenTimeout)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		sess, att, err := kube.NewSession(ctx, dial, start)
		if err == nil || !strings.Contains(err.Error(), "connection refused") || time.Now().After(deadline) {
			return sess, att, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// initListenTimeout bounds how long a run waits for its Pod's init to listen.
const initListenTimeout = 15 * time.Second

// Names of the connections the init relays from the agent's loopback to this process.
const (
	relayGateway = "gateway"
	relayMocks   = "mocks"
)

// kubeMounts turns the run's mounts into the Pod's: the mock client at each mocked tool's
// path (the init image carries it) and the mock socket relayed; anything else (a plugin
// bundle) cannot come from this machine's disk and is refused.
func kubeMounts(ms []oci.Mount, initDir string) ([]kube.FileMount, []kubeproto.Relay, error) {
	var out []kube.FileMount
	var relays []kubeproto.Relay
	for _, m := range ms {
		switch {
		case m.Destination == oci.CevalRunPath:
			relays = append(relays, kubeproto.Relay{Name: relayMocks, Network: "unix", Address: oci.CevalRunPath + "/" + mockd.SocketName})
		case m.Source == filepath.Join(initDir, embedded.Mock.FileName()):
			// The init image carries the same client (images.InitName is named by it).
			out = append(out, kube.FileMount{Path: m.Destination, File: kube.MockFile})
		default:
			return nil, nil, fmt.Errorf("mount of %s at %s: the kubernetes backend cannot mount this machine's files into a Pod", m.Source, m.Destination)
		}
	}
	return out, relays, nil
}

// kubeEnv is the agent's whole environment: the Pod spec's HOME, USER and PATH, then the run's.
func kubeEnv(env []string) []string {
	base := []string{"HOME=" + oci.HomePath, "USER=agent", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	out := make([]string, 0, len(base)+len(env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !hasKey(env, k) {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

func hasKey(env []string, k string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

// kubeSandbox is a run's Pod, its init's session and the local directories the workspace
// and home are prepared in (and the home collected into).
type kubeSandbox struct {
	cfg      sandbox.Config
	k        *Options
	pod      kubePod
	sess     *kube.Session
	att      *record.Attestation
	imageID  string                       // the agent image's ID as the node resolved it (kube.Run.ImageDigest)
	emit     func(string, map[string]any) // the run's events, while the agent runs
	ws, home string
	closed   bool
}

func (s *kubeSandbox) Dirs() (workspace, home string) { return s.ws, s.home }

// image fills in what the node resolved the agent's image to: a repository digest names the
// manifest, a bare image ID (an image imported without one) is its config's digest.
func (s *kubeSandbox) ResolvedImage(img images.Image) images.Image {
	id := s.imageID
	switch {
	case id == "":
	case strings.Contains(id, "@sha256:"):
		img.ManifestDigest = digest.Digest(id[strings.LastIndex(id, "@")+1:])
	case strings.HasPrefix(id, "sha256:"):
		img.ConfigDigest = digest.Digest(id)
	}
	return img
}

// checkAttestation fails the run when the init's report differs from the policy: identity,
// capabilities, no_new_privs, seccomp, the memory limit, interfaces, and the probes, each
// of which must have failed to connect.
func (s *kubeSandbox) checkAttestation(att *kubeproto.Attest, lim task.Limits) error {
	a := s.att
	a.Network = policy.NetworkNone
	// Without a user namespace the Pod's IDs are the node's (the initial namespace's map).
	ids := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	if s.k.UserNamespaces {
		ids = a.UIDMap // the node picks the Pod's host range; the IDs inside are checked below
	}
	// pids: the node's podPidsLimit bounds the Pod's cgroup, which the container cannot see
	// (its own pids.max is unlimited); recorded as such.
	p := sandbox.Policy{UID: int(policy.AgentUID), GID: int(policy.AgentGID), PidsByRlimit: true, IDMap: ids, Network: policy.NetworkNone}
	err := sandbox.CheckAttestation(a, p)
	var bad []string
	if err != nil {
		bad = append(bad, err.Error())
	}
	if mem, ok := kube.MemoryLimit(att); !ok || mem != lim.MemoryMB<<20 {
		bad = append(bad, fmt.Sprintf("memory limit %d bytes, want %d", mem, lim.MemoryMB<<20))
	}
	var reached []string
	for _, pr := range att.Probes {
		if pr.Err == "" {
			reached = append(reached, pr.Addr)
		}
	}
	if len(reached) > 0 && !s.k.AcceptUnenforcedNetworkPolicy {
		bad = append(bad, fmt.Sprintf("before the agent started, the Pod reached %s: the cluster does not enforce the run's deny-all NetworkPolicy (use a network plugin that does, or accept_unenforced_network_policy: true in ceval's config)", strings.Join(reached, ", ")))
	}
	a.LimitsEnforcedBy = policy.LimitsEnforcedBy{Pids: "kubelet podPidsLimit (the Pod's cgroup)", Memory: "cgroup (the container's)", CPU: "cgroup (the container's)", Disk: "emptyDir sizeLimit (kubelet eviction)"}
	if len(bad) > 0 {
		return fmt.Errorf("the Pod's isolation does not match policy: %s", strings.Join(bad, "; "))
	}
	return nil
}

// copyIn streams a local directory into the Pod as tar, links as links, owned by the agent.
func (s *kubeSandbox) copyIn(ctx context.Context, local, in string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTree(pw, local)) }()
	err := s.sess.CopyIn(ctx, in, pr)
	pr.CloseWithError(errors.New("copy ended"))
	return err
}

// writeTree writes dir as a tar stream: directories, regular files and symlinks (recorded,
// never followed), every entry owned by the agent's UID and GID.
func writeTree(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = root.Readlink(name); err != nil {
				return err
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return fmt.Errorf("%s: not a file, directory or link", name)
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = name, int(policy.AgentUID), int(policy.AgentGID), "", ""
		if info.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// Run lets the agent go, relays its output and connections, stops it at its timeout, a
// budget's stop or Ctrl-C, and waits until the init has killed and reaped everything.
func (s *kubeSandbox) Run(ctx context.Context, emit func(string, map[string]any)) (*sandbox.Outcome, error) {
	if emit == nil {
		emit = func(string, map[string]any) {}
	}
	out := &sandbox.Outcome{Isolation: s.att}
	s.emit = emit
	emit("attested", map[string]any{"isolation": s.att})
	stdout, err := launcher.CreateCappedFile(s.cfg.StdoutPath, 0)
	if err != nil {
		return out, err
	}
	defer stdout.Close()
	stderr, err := launcher.CreateCappedFile(s.cfg.StderrPath, 0)
	if err != nil {
		return out, err
	}
	defer stderr.Close()
	if err := s.sess.Go(ctx, stdout, stderr, s.relay); err != nil {
		return out, s.podError(ctx, fmt.Errorf("start agent: %w", err))
	}
	emit("agent_started", map[string]any{"argv0": s.cfg.Argv[0]})
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := time.NewTimer(s.cfg.Limits.Timeout)
	defer timer.Stop()
	go func() {
		select {
		case <-timer.C:
			_ = s.sess.Kill(kubeproto.KillTimeout)
		case <-s.cfg.Stop:
			_ = s.sess.Kill(kubeproto.KillStop)
		case <-waitCtx.Done():
		}
	}()
	exit, err := s.sess.Wait(waitCtx)
	cancel()
	if err != nil {
		return out, s.afterGo(ctx, fmt.Errorf("wait for the agent: %w", err))
	}
	// A Pod deleted or evicted under the agent has its processes signalled by the kubelet:
	// the init then reports an ordinary exit. What the cluster did is not the agent's
	// result: ask it before trusting the exit (deletion and eviction are in the Pod's
	// status before the kubelet acts on them).
	if err := s.stillOurs(ctx); err != nil {
		return out, err
	}
	out.Exit = launcher.Exit{Code: exit.Code, TimedOut: exit.TimedOut, Interrupted: exit.Killed == kubeproto.KillInterrupt,
		Duration: exit.Duration, Reap: exit.Reap, CgroupEmpty: exit.Remaining == 0, OutputCut: stdout.Cut() || stderr.Cut()}
	out.Resources = launcher.Resources{OOMKills: uint64(max(exit.OOMKills, 0)), MemoryPeakBytes: uint64(max(exit.MemoryPeak, 0))}
	out.Stopped = exit.Killed == kubeproto.KillStop // a run budget's stop (sandbox.Config.Stop)
	if exit.Remaining > 0 {
		out.Exit.CgroupError = fmt.Sprintf("%d process(es) left in the Pod after the kill", exit.Remaining)
		return out, s.afterGo(ctx, errors.New("processes remained in the Pod after the kill: "+out.Exit.CgroupError))
	}
	if out.Exit.Interrupted {
		return out, nil // Ctrl-C: nothing is collected or graded
	}
	if err := s.collectHome(ctx); err != nil {
		return out, s.afterGo(ctx, err)
	}
	return out, nil
}

// relay connects one of the agent's relayed connections to the gateway or the mock server;
// a failure is an event of the run (the agent only sees its connection closed).
func (s *kubeSandbox) relay(name string) (net.Conn, error) {
	c, err := s.dialService(name)
	if err != nil && s.emit != nil {
		s.emit("relay_failed", map[string]any{"relay": name, "error": err.Error()})
	}
	return c, err
}

func (s *kubeSandbox) dialService(name string) (net.Conn, error) {
	switch name {
	case relayGateway:
		if s.cfg.Gateway != nil {
			return s.cfg.Gateway.Dial()
		}
	case relayMocks:
		if s.cfg.MockSocket != "" {
			return mockd.Dial(s.cfg.MockSocket)
		}
	}
	return nil, fmt.Errorf("no relay %q in this run", name)
}

// collectHome replaces the local home with the Pod's, after the agent: the agent CLI's
// session files are read from it (with the snapshot's rules: nothing is followed).
func (s *kubeSandbox) collectHome(ctx context.Context) error {
	dst := filepath.Join(s.cfg.Dir, "home-after")
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if _, err := s.sess.CopyOut(ctx, oci.HomePath, dst, snapshot.DefaultLimits()); err != nil {
		return fmt.Errorf("copy the agent's home out of the Pod: %w", err)
	}
	s.home = dst
	return nil
}

// OutputDirs is nil: the outputs stay in the Pod until TakeOutput streams each out.
func (s *kubeSandbox) OutputDirs() []string { return nil }

// TakeOutput streams output i (sandbox.outputs) out of the Pod into dst with the snapshot's
// rules, as TakeSnapshot the workspace.
func (s *kubeSandbox) TakeOutput(ctx context.Context, i int, dst string, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	if i < 0 || i >= len(s.cfg.Outputs) {
		return nil, fmt.Errorf("output %d: the run has %d", i, len(s.cfg.Outputs))
	}
	snap, err := s.sess.CopyOut(ctx, s.cfg.Outputs[i], dst, lim)
	if err != nil {
		return nil, s.afterGo(ctx, fmt.Errorf("copy output %s out of the Pod: %w", s.cfg.Outputs[i], err))
	}
	if err := s.stillOurs(ctx); err != nil {
		return nil, err
	}
	return snap, nil
}

// TakeSnapshot streams the workspace out of the Pod into dst with the snapshot's rules.

func (s *kubeSandbox) TakeSnapshot(ctx context.Context, dst string, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	snap, err := s.sess.CopyOut(ctx, oci.WorkspacePath, dst, lim)
	if err != nil {
		return nil, s.afterGo(ctx, fmt.Errorf("copy the workspace out of the Pod: %w", err))
	}
	// A Pod torn down during the copy gives a short stream: not the agent's workspace.
	if err := s.stillOurs(ctx); err != nil {
		return nil, err
	}
	return snap, nil
}

// stillOurs fails when the cluster took the Pod away or its own limits ended it (what
// podError reports), else nil.
func (s *kubeSandbox) stillOurs(ctx context.Context) error {
	if s.pod == nil {
		return nil
	}
	return s.pod.lost(context.WithoutCancel(ctx))
}

// afterGo is what a failure of the channel, the exit or the copy-out once the agent has
// started means: the cluster's loss of the Pod, or its own limits (podError), Ctrl-C, or
// else the agent's doing. The init shares the agent's UID, so the agent can signal it,
// lower its rlimits or starve it: whatever breaks the Pod's side then is counted against the
// agent (a FAILURE with the reason), never an ERROR the agent could pick to escape its grade.
func (s *kubeSandbox) afterGo(ctx context.Context, err error) error {
	if lost := s.stillOurs(ctx); lost != nil {
		return fmt.Errorf("%w (%v)", lost, err)
	}
	if ctx.Err() != nil {
		return err
	}
	// The init still runs, or ended because it lost its control connection: the transport
	// between here and the Pod (the API server, the kubelet's port-forward) broke, which the
	// agent cannot cause (it can neither reach the API nor close the init's socket). The run
	// is lost, not failed: an experiment tries it again.
	if code, ended, serr := s.settledInit(context.WithoutCancel(ctx)); serr == nil && (!ended || code == kubeproto.ExitOrphaned) {
		return &kube.PodLostError{Reason: "ControlChannelLost", Message: err.Error()}
	}
	// The status may only now say how the Pod ended (OOM-killed as a whole, say).
	if lost := s.stillOurs(ctx); lost != nil {
		return fmt.Errorf("%w (%v)", lost, err)
	}
	return &sandboxBrokenError{err}
}

// initSettle bounds how long afterGo waits for the API server to report the init's end:
// the kubelet reports a container's state some time after it changed, and an init whose
// control connection broke kills everything and exits within its grace.
var initSettle = 30 * time.Second

// settledInit is the init's state once it ended, or "running" if it still runs after
// initSettle (a transport that broke while the init lives on).
func (s *kubeSandbox) settledInit(ctx context.Context) (code int, ended bool, err error) {
	deadline := time.Now().Add(initSettle)
	for {
		code, ended, err = s.pod.initState(ctx)
		if err != nil || ended || time.Now().After(deadline) {
			return code, ended, err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sandboxBrokenError is a Pod's side that failed under the agent (see afterGo).
type sandboxBrokenError struct{ err error }

func (e *sandboxBrokenError) Error() string {
	return "the agent's Pod stopped working while or after the agent ran: " + e.err.Error()
}

func (e *sandboxBrokenError) Unwrap() error { return e.err }

// AgentCaused says why the run is counted against the agent.
func (e *sandboxBrokenError) AgentCaused() string {
	return "the agent's sandbox failed under it (" + e.err.Error() + "); counted against the agent, whose processes share the init's UID"
}

// podError says why the Pod went away when it did (a *kube.PodLostError, which an
// experiment may retry), else err.
func (s *kubeSandbox) podError(ctx context.Context, err error) error {
	if s.pod == nil {
		return err
	}
	if lost := s.pod.lost(context.WithoutCancel(ctx)); lost != nil {
		return fmt.Errorf("%w (%v)", lost, err)
	}
	return err
}

func (s *kubeSandbox) RunStep(context.Context, string, []string, time.Duration, string) (launcher.Exit, error) {
	return launcher.Exit{}, errors.New("steps do not run on the kubernetes backend (CheckKubernetes refuses them)")
}

func (s *kubeSandbox) Again(context.Context, sandbox.AgainConfig) error {
	return errors.New("iterations do not run on the kubernetes backend (CheckKubernetes refuses them)")
}

func (s *kubeSandbox) DeleteContainer(ctx context.Context) error { return s.Close(ctx) }

// Close ends the init, deletes the Pod and its NetworkPolicy and removes the local copies.
func (s *kubeSandbox) Close(ctx context.Context) error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if s.sess != nil {
		_ = s.sess.Close() // the Pod is deleted next whatever the init says
	}
	if s.pod != nil {
		if err := s.pod.delete(context.WithoutCancel(ctx)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(s.cfg.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// clusterAPI is kubeAPI over a real cluster.
type clusterAPI struct{ c *kube.Cluster }

func (a clusterAPI) startPod(ctx context.Context, cfg kube.Config) (kubePod, error) {
	run, err := a.c.StartAgent(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return clusterPod{run}, nil
}

func (a clusterAPI) probeTargets(ctx context.Context) ([]string, error) {
	return a.c.ProbeTargets(ctx)
}

// clusterPod is kubePod over a real cluster.
type clusterPod struct{ run *kube.Run }

func (p clusterPod) dial(ctx context.Context) (net.Conn, error) { return p.run.Dial(ctx) }

func (p clusterPod) lost(ctx context.Context) error { return p.run.Lost(ctx) }

func (p clusterPod) imageDigests(ctx context.Context) (string, string) {
	return p.run.ImageDigests(ctx)
}

func (p clusterPod) prepReport(ctx context.Context) (*kube.PrepReport, error) {
	return p.run.PrepReport(ctx)
}

func (p clusterPod) delete(ctx context.Context) error { return p.run.Delete(ctx) }

func (p clusterPod) initState(ctx context.Context) (int, bool, error) { return p.run.AgentState(ctx) }
