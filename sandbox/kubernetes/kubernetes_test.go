package kubernetes

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/internal/kubeproto"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/registry"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
)

// podAttestation is what a hardened Pod's init reports, parsed.
func podAttestation() *record.Attestation {
	full := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
	return &record.Attestation{UID: 2000, GID: 2000, Groups: []int{2000}, CapInh: "0000000000000000", CapPrm: "0000000000000000", CapEff: "0000000000000000", CapBnd: "0000000000000000", CapAmb: "0000000000000000",
		NoNewPrivs: 1, Seccomp: 2, PidsMax: "max", Interfaces: []string{"lo"}, UIDMap: full, GIDMap: full}
}

func podReport(reached bool) *kubeproto.Attest {
	a := &kubeproto.Attest{Files: map[string]string{"cgroup:/sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n"},
		Probes: []kubeproto.Probe{{Addr: "10.96.0.1:443", Err: "connection refused"}, {Addr: "10.254.1.2:10250", Err: "timeout"}}}
	if reached {
		a.Probes[1].Err = ""
	}
	return a
}

// A Pod that reached the API server or a kubelet before its agent started is refused: the
// cluster does not enforce the run's deny-all NetworkPolicy. Only the user's config accepts it.
func TestKubePodThatReachedTheClusterIsRefusedUnlessTheUserAccepts(t *testing.T) {
	lim := task.Limits{MemoryMB: 256}
	s := &kubeSandbox{k: &Options{}, att: podAttestation()}
	if err := s.checkAttestation(podReport(false), lim); err != nil {
		t.Fatalf("an isolated Pod: %v", err)
	}
	err := s.checkAttestation(podReport(true), lim)
	if err == nil || !strings.Contains(err.Error(), "10.254.1.2:10250") || !strings.Contains(err.Error(), "accept_unenforced_network_policy") {
		t.Fatalf("a Pod that reached a kubelet: %v", err)
	}
	s = &kubeSandbox{k: &Options{AcceptUnenforcedNetworkPolicy: true}, att: podAttestation()}
	if err := s.checkAttestation(podReport(true), lim); err != nil {
		t.Fatalf("accepted by the user's config: %v", err)
	}
	// Anything else that differs still fails: the memory limit, capabilities.
	s = &kubeSandbox{k: &Options{}, att: podAttestation()}
	if err := s.checkAttestation(podReport(false), task.Limits{MemoryMB: 512}); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("a memory limit other than asked: %v", err)
	}
	a := podAttestation()
	a.CapEff = "0000000000000400"
	s = &kubeSandbox{k: &Options{}, att: a}
	if err := s.checkAttestation(podReport(false), lim); err == nil || !strings.Contains(err.Error(), "CapEff") {
		t.Fatalf("a capability: %v", err)
	}
}

// fakePod is a kubePod whose loss and init the test decides.
type fakePod struct {
	lostErr         error
	initCode        int
	initEnded       bool
	agentID, initID string // the images the node reports
}

func (p fakePod) dial(context.Context) (net.Conn, error)               { return nil, errors.New("no") }
func (p fakePod) lost(context.Context) error                           { return p.lostErr }
func (p fakePod) imageDigests(context.Context) (string, string)        { return p.agentID, p.initID }
func (p fakePod) prepReport(context.Context) (*kube.PrepReport, error) { return nil, nil }
func (p fakePod) delete(context.Context) error                         { return nil }
func (p fakePod) initState(context.Context) (int, bool, error)         { return p.initCode, p.initEnded, nil }

// What breaks the Pod's side after the agent started is the agent's (a FAILURE with the
// reason), unless the cluster lost the Pod (a retry) or ceval was interrupted.
func TestKubeFailureAfterGoIsTheAgentsUnlessTheClusterLostThePod(t *testing.T) {
	defer func(d time.Duration) { initSettle = d }(initSettle)
	initSettle = 0
	broke := errors.New("control channel: EOF")
	var ac interface{ AgentCaused() string }

	// The init crashed or was killed (not by losing its connection): the agent's doing.
	for _, code := range []int{2, 137} {
		s := &kubeSandbox{pod: fakePod{initCode: code, initEnded: true}}
		if err := s.afterGo(context.Background(), broke); !errors.As(err, &ac) || !strings.Contains(ac.AgentCaused(), "EOF") {
			t.Errorf("the init ended %d: %v, want it counted against the agent", code, err)
		}
	}
	// The init runs on, or ended because its connection was lost: the transport broke,
	// which the agent cannot cause: a lost Pod (retried), never the agent's.
	for _, p := range []fakePod{{}, {initCode: kubeproto.ExitOrphaned, initEnded: true}} {
		s := &kubeSandbox{pod: p}
		var lost *kube.PodLostError
		if err := s.afterGo(context.Background(), broke); !errors.As(err, &lost) || lost.AgentCouldCause() || errors.As(err, &ac) {
			t.Errorf("init %+v: %v, want a lost Pod the agent could not cause", p, err)
		}
	}
	s := &kubeSandbox{pod: fakePod{lostErr: &kube.PodLostError{Reason: "Deleted"}}}
	var lost *kube.PodLostError
	if err := s.afterGo(context.Background(), broke); !errors.As(err, &lost) || errors.As(err, &ac) {
		t.Errorf("a deleted Pod: %v, want a *PodLostError (retried), not the agent's", err)
	}
	s = &kubeSandbox{pod: fakePod{lostErr: &kube.PodLimitError{Reason: "OOM-killed"}}}
	if err := s.afterGo(context.Background(), broke); !errors.As(err, &ac) || ac.AgentCaused() != "OOM-killed" {
		t.Errorf("a Pod its limits ended: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = &kubeSandbox{pod: fakePod{initCode: 2, initEnded: true}}
	if err := s.afterGo(ctx, broke); errors.As(err, &ac) {
		t.Errorf("Ctrl-C: %v, want the plain error (an interrupted run)", err)
	}
}

// On a cluster whose nodes pull (IfNotPresent, Always), a task's tag becomes REPO@DIGEST as
// its registry resolves it now, without a pull here; imported images (Never) keep their
// name; ceval's own are never pinned.
func TestKubeRunsNameRegistryImagesByTheirPinnedDigest(t *testing.T) {
	const dgst = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	var heads int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/manifests/") {
			heads++
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Docker-Content-Digest", dgst)
			w.Header().Set("Content-Length", "2")
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	pins := images.NewPinner(images.PullMissing, registry.Options{HostsDir: t.TempDir(), DockerConfig: filepath.Join(t.TempDir(), "none")})
	pull := Backend{pins: pins, k: &Options{PullPolicy: kube.PullIfNotPresent}}
	for range 2 {
		img, err := pull.ResolveImage(context.Background(), task.Sandbox{Image: host + "/a/b:v1"})
		if err != nil || img.Name != host+"/a/b@"+dgst || img.Digest != dgst || img.Reference != host+"/a/b:v1" {
			t.Fatalf("resolve on a pulling cluster: %+v, %v", img, err)
		}
	}
	if heads != 1 {
		t.Errorf("the registry was asked %d times for one tag, want once (then pinned)", heads)
	}
	never := Backend{pins: pins, k: &Options{PullPolicy: kube.PullNever}}
	for _, name := range []string{host + "/c/d:v1", images.DefaultName} {
		if img, err := never.ResolveImage(context.Background(), task.Sandbox{Image: name}); err != nil || img.Name != name || img.Digest != "" {
			t.Errorf("resolve %s with pull policy Never: %+v, %v; want the name as it is", name, img, err)
		}
	}
}

// A Pod whose node ran another image than the pinned digest is refused before its agent
// starts.
func TestKubeRefusesANodeThatRanAnotherDigest(t *testing.T) {
	const pinned = "reg.example/a/b@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	cases := []struct {
		image, id string
		ok        bool
	}{
		{pinned, pinned, true},
		{pinned, "reg.example/a/b@sha256:2222222222222222222222222222222222222222222222222222222222222222", false},
		{pinned, "sha256:1111111111111111111111111111111111111111111111111111111111111111", false},
		{pinned, "", false},
		{"reg.example/a/b:v1", "", true},
	}
	for _, c := range cases {
		if err := checkNodeDigest(c.image, c.id); (err == nil) != c.ok {
			t.Errorf("checkNodeDigest(%s, %q) = %v, want ok=%v", c.image, c.id, err, c.ok)
		}
	}
}

// fakeAPI starts fakePods, keeping the Pods' configs.
type fakeAPI struct {
	pod     fakePod
	started []kube.Config
}

func (a *fakeAPI) startPod(_ context.Context, cfg kube.Config) (kubePod, error) {
	a.started = append(a.started, cfg)
	return a.pod, nil
}
func (a *fakeAPI) probeTargets(context.Context) ([]string, error) { return nil, nil }

// With ceval's images mapped to the nodes' registry (kubernetes.registry), the task's
// ceval.local image and the init image are each resolved there once, pinned, and named
// REPO@DIGEST in the Pod; a node reporting another init image than that digest is refused
// before the session starts; with pull policy Never nothing is mapped.
func TestKubeMapsCevalsImagesToTheNodesRegistryByDigest(t *testing.T) {
	const dgst = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	asked := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/manifests/") {
			asked[r.URL.Path]++
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Docker-Content-Digest", dgst)
			w.Header().Set("Content-Length", "2")
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	pins := images.NewPinner(images.PullMissing, registry.Options{HostsDir: t.TempDir(), DockerConfig: filepath.Join(t.TempDir(), "none")})
	api := &fakeAPI{}
	k := Backend{pins: pins, k: &Options{PullPolicy: kube.PullIfNotPresent, InitImage: images.InitName(), Probes: []string{}, api: api,
		Registry: images.NodeRegistry{Prefix: host + "/ceval"}}}
	img, err := k.ResolveImage(context.Background(), task.Sandbox{Image: images.DefaultName})
	if err != nil || img.Name != host+"/ceval/default@"+dgst || img.Reference != host+"/ceval/default:latest" || img.Digest != dgst {
		t.Fatalf("the default image on a mapped cluster: %+v, %v", img, err)
	}
	initPinned := host + "/ceval/ceval-init@" + dgst
	for _, c := range []struct {
		initID string
		want   string
	}{
		{host + "/ceval/ceval-init@sha256:3333333333333333333333333333333333333333333333333333333333333333", "init image: the node ran image"},
		{initPinned, "the Pod's init"}, // past the check: the fake Pod's init cannot be dialled
	} {
		api.pod = fakePod{agentID: img.Name, initID: c.initID}
		_, err = k.NewSandbox(context.Background(), sandbox.Config{ID: "r", Dir: filepath.Join(t.TempDir(), "run"), Image: img.Name, Limits: task.Limits{MemoryMB: 256}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("node reports init %s: %v, want %q", c.initID, err, c.want)
		}
		if got := api.started[len(api.started)-1]; got.InitImage != initPinned || got.Image != img.Name {
			t.Errorf("the Pod's images %s and %s, want %s and %s", got.InitImage, got.Image, initPinned, img.Name)
		}
	}
	for p, n := range asked {
		if n != 1 {
			t.Errorf("the registry was asked %d times for %s, want once (then pinned)", n, p)
		}
	}
	if len(asked) != 2 {
		t.Errorf("the registry was asked for %v, want the default and the init image", asked)
	}
	never := Backend{pins: pins, k: &Options{PullPolicy: kube.PullNever, Registry: images.NodeRegistry{Prefix: host + "/ceval"}}}
	if img, err := never.ResolveImage(context.Background(), task.Sandbox{Image: images.DefaultName}); err != nil || img.Name != images.DefaultName {
		t.Errorf("pull policy Never: %+v, %v; want the name as it is", img, err)
	}
}

// Every image's Pod gets the prep container but ceval's default image's without outputs
// (its config is ceval's: nothing to copy, the standard PATH), which saves a container start.
func TestKubePrepContainerForEveryImageButTheDefault(t *testing.T) {
	api := &fakeAPI{}
	k := Backend{k: &Options{PullPolicy: kube.PullNever, InitImage: images.InitName(), Probes: []string{}, api: api, Controller: "c", Namespace: "ns"}}
	for _, c := range []struct {
		image   string
		outputs []string
		prep    bool
	}{
		{images.DefaultName, nil, false},
		{images.DefaultName, []string{"/out"}, true},
		{"ceval.test/other:1", nil, true},
	} {
		_, _ = k.NewSandbox(context.Background(), sandbox.Config{ID: "r", Dir: filepath.Join(t.TempDir(), "run"), Image: c.image, Outputs: c.outputs,
			ImageWorkdir: "auto", OutputsFromImage: true, Limits: task.Limits{MemoryMB: 256}})
		got := api.started[len(api.started)-1]
		if got.Prep != c.prep || got.CopyWorkdir != c.prep || got.OutputsFromImage != c.prep {
			t.Errorf("image %s outputs %v: prep %v copy %v outputs from image %v, want prep %v", c.image, c.outputs, got.Prep, got.CopyWorkdir, got.OutputsFromImage, c.prep)
		}
		if _, err := got.Pod(); err != nil {
			t.Errorf("image %s: %v", c.image, err)
		}
	}
}

// The node's imageID cannot show that a node ran other content under the init image's pinned
// name; the init's hash of its own executable can: anything but this ceval's ceval-init (an
// older init reporting no hash included) is refused, naming the image and both hashes.
func TestKubeRefusesAnInitThatIsNotThisCevals(t *testing.T) {
	const img = "reg.example/ceval-init@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	want := embedded.Init.SHA256()
	if err := checkInitExe(img, want, want); err != nil {
		t.Fatalf("this ceval's init refused: %v", err)
	}
	other := strings.Repeat("ab", 32)
	for _, got := range []string{other, ""} {
		err := checkInitExe(img, got, want)
		if err == nil {
			t.Fatalf("an init hashing %q was accepted", got)
		}
		for _, s := range []string{img, want, "ceval images push --kubernetes"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("the refusal lacks %q: %v", s, err)
			}
		}
	}
}
