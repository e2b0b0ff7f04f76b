package kube_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/kubeproto"
	"ceval.dev/ceval/internal/kubetest"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/snapshot"
)

// runPod runs script under busybox sh in a hardened Pod of its own namespace, waits until it
// ends, and returns the Pod and its output. The Pod and its policy are deleted at the end.
func runPod(t *testing.T, name, script string, edit func(*kube.Config)) (*kube.Pod, string) {
	t.Helper()
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	cfg := kube.Config{
		RunID:      name,
		Controller: "kube-test",
		Namespace:  ns,
		Image:      kubetest.Image,
		InitImage:  kubetest.InitImage(t),
		PullPolicy: kube.PullNever,
		Command:    []string{"/bin/sh", "-c", script},
		Timeout:    2 * time.Minute,
		Grace:      time.Second,
		MemoryMB:   128,
		CPUs:       0.25,
		DiskMB:     64,
		TmpMB:      16,
	}
	if edit != nil {
		edit(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := c.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := run.Delete(context.Background()); err != nil {
			t.Error(err)
		}
	})
	pod, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run.Logs(ctx, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return pod, string(out)
}

// fields parses "key=value" lines and "Key:\tvalue" lines (/proc/self/status).
func fields(out string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = strings.TrimSpace(v)
		} else if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

func TestPodIsHardenedAsAttestedFromInside(t *testing.T) {
	pod, out := runPod(t, "attest", `
echo uid=$(id -u)
echo gid=$(id -g)
echo groups=$(id -G)
grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
echo ifaces=$(ls /sys/class/net)
echo rootfs=$(awk '$2 == "/" { split($4, o, ","); m = o[1] } END { print m }' /proc/mounts)
if touch /workspace/w /home/agent/h /tmp/t; then echo volumes=writable; else echo volumes=read-only; fi
if [ -e /var/run/secrets/kubernetes.io ]; then echo token=present; else echo token=absent; fi
echo tmp=$(grep ' /tmp ' /proc/mounts | cut -d' ' -f3)
`, nil)
	if pod.Status.Phase != kube.PodSucceeded {
		t.Fatalf("pod phase %s; output:\n%s", pod.Status.Phase, out)
	}
	got := fields(out)
	want := map[string]string{
		"uid": "2000", "gid": "2000", "groups": "2000",
		"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000", "CapAmb": "0000000000000000",
		"NoNewPrivs": "1", "Seccomp": "2",
		"ifaces":  "lo",
		"rootfs":  "ro", // the mount itself: uid 2000 cannot write / on a writable rootfs either
		"volumes": "writable",
		"token":   "absent",
		"tmp":     "tmpfs",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

func TestAgentReachesNoNetworkAPIServerOrKubelet(t *testing.T) {
	c := kubetest.Connect(t)
	u, err := url.Parse(c.Host)
	if err != nil {
		t.Fatal(err)
	}
	nodeIP := u.Hostname()
	// Every target answers from the host: a refusal inside the Pod is the sandbox's doing.
	targets := []string{net.JoinHostPort(nodeIP, u.Port()), net.JoinHostPort(nodeIP, "10250")}
	for _, addr := range targets {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("%s does not answer from the host either: %v", addr, err)
		}
		conn.Close()
	}
	// The in-cluster API address and a public one need no answer from here to be forbidden.
	targets = append(targets, "10.96.0.1:443", "1.1.1.1:53")
	var script strings.Builder
	for _, addr := range targets {
		h, p, _ := net.SplitHostPort(addr)
		script.WriteString("if nc -w 3 " + h + " " + p + " </dev/null >/dev/null 2>&1; then echo " + strconv.Quote("REACHED "+addr) + "; else echo " + strconv.Quote("blocked "+addr) + "; fi\n")
	}
	script.WriteString("if [ -e /var/run/secrets/kubernetes.io/serviceaccount/token ]; then echo 'REACHED token'; else echo 'blocked token'; fi\n")
	pod, out := runPod(t, "network", script.String(), nil)
	if pod.Status.Phase != kube.PodSucceeded {
		t.Fatalf("pod phase %s; output:\n%s", pod.Status.Phase, out)
	}
	if strings.Contains(out, "REACHED") || strings.Count(out, "blocked") != len(targets)+1 {
		t.Errorf("want every target blocked:\n%s", out)
	}
}

func TestForkBombIsHeldByThePodPidsLimit(t *testing.T) {
	// Forks until fork fails (the subshell then dies with "can't fork"); 5000 is far above
	// the test cluster's podPidsLimit (256) and stops the loop if no limit holds.
	pod, out := runPod(t, "forkbomb", `
( n=0; while [ $n -lt 5000 ]; do sleep 1000 >/dev/null 2>&1 & n=$((n+1)); echo forked=$n; done ) 2>&1 | tail -n 3
echo shell=alive
`, nil)
	if pod.Status.Phase != kube.PodSucceeded {
		t.Fatalf("pod phase %s; output:\n%s", pod.Status.Phase, out)
	}
	got := fields(out)
	n, err := strconv.Atoi(got["forked"])
	t.Logf("forks before the pids limit held: %d", n)
	if err != nil || n >= 5000 || n < 10 || got["shell"] != "alive" || !strings.Contains(out, "can't fork") {
		t.Errorf("want the fork loop stopped by the pids limit (well under 5000, with \"can't fork\"):\n%s", out)
	}
}

func TestMemoryHogIsOOMKilled(t *testing.T) {
	pod, out := runPod(t, "memhog", `echo start; exec dd if=/dev/zero of=/dev/null bs=512M count=1`, func(c *kube.Config) { c.MemoryMB = 64 })
	if pod.Status.Phase != kube.PodFailed {
		t.Fatalf("pod phase %s, want Failed; output:\n%s", pod.Status.Phase, out)
	}
	var reason string
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			reason = s.State.Terminated.Reason
		}
	}
	if reason != "OOMKilled" {
		t.Errorf("container terminated with reason %q, want OOMKilled; output:\n%s", reason, out)
	}
}

// startPod starts a hardened Pod running script and waits until its container runs.
func startPod(t *testing.T, name, script string) *kube.Run {
	t.Helper()
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	created := time.Now()
	run, err := c.Start(ctx, kube.Config{
		RunID: name, Controller: "kube-test", Namespace: ns,
		Image: kubetest.Image, InitImage: kubetest.InitImage(t), PullPolicy: kube.PullNever,
		Command: []string{"/bin/sh", "-c", script},
		Timeout: 2 * time.Minute, Grace: time.Second, MemoryMB: 128, CPUs: 0.25, DiskMB: 64, TmpMB: 16,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := run.Delete(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if _, err := run.WaitRunning(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("policy + pod created -> agent running: %v", time.Since(created))
	return run
}

func TestWorkspaceStreamsInAndOutWithLinksRecordedNotFollowed(t *testing.T) {
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The real path: ceval's init in control mode, driven through the port-forward.
	run, err := c.StartAgent(ctx, kube.Config{
		RunID: "copy", Controller: "kube-test", Namespace: ns,
		Image: kubetest.Image, InitImage: kubetest.InitImage(t), PullPolicy: kube.PullNever,
		Timeout: 2 * time.Minute, Grace: time.Second, MemoryMB: 128, CPUs: 0.25, DiskMB: 64, TmpMB: 16,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := run.Delete(context.Background()); err != nil {
			t.Error(err)
		}
	})
	var sess *kube.Session
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		// The container runs a moment before its init listens.
		if sess, _, err = kube.NewSession(ctx, run.Dial, kubeproto.Start{
			// The agent's turn: a file, a link out to the node's files, a file it made unreadable.
			// Then the review's attack on negative checks (chmod 000 hides src/hack.py and
			// src/hidden from the copier) and a sparse 1 TiB file (4 GiB where the filesystem refuses it) to stall the copy-out.
			Argv: []string{"sh", "-c", "cd /workspace && echo out > result.txt && ln -s /etc/passwd leak && echo secret > hidden && chmod 000 hidden" +
				" && mkdir -p src/hidden && echo x > src/hack.py && chmod 000 src/hack.py src/hidden && (truncate -s 1099511627776 big || truncate -s 4294967296 big)"},
			Env: []string{"PATH=/bin"}, Dir: "/workspace", Timeout: time.Minute, Grace: time.Second,
		}); err == nil || !strings.Contains(err.Error(), "connection refused") || time.Now().After(end) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	tw.WriteHeader(&tar.Header{Name: "task.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5})
	tw.Write([]byte("hello"))
	tw.Close()
	if err := sess.CopyIn(ctx, "/workspace", &in); err != nil {
		t.Fatal(err)
	}
	if err := sess.Go(ctx, io.Discard, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if exit, err := sess.Wait(ctx); err != nil || exit.Code != 0 || exit.Remaining != 0 {
		t.Fatalf("exit %+v, %v", exit, err)
	}
	start := time.Now()
	s, err := sess.CopyOut(ctx, "/workspace", filepath.Join(t.TempDir(), "snap"), snapshot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("copy-out through the init: %v", time.Since(start))
	if e, ok := s.Lookup("big"); ok {
		t.Logf("sparse file of %d bytes", e.Size)
	}
	for name, want := range map[string]string{"task.txt": "hello", "result.txt": "out\n"} {
		if got, err := os.ReadFile(filepath.Join(s.Dir, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	var leak *snapshot.Entry
	for i := range s.Entries {
		if s.Entries[i].Path == "leak" {
			leak = &s.Entries[i]
		}
	}
	if leak == nil || leak.Kind != snapshot.KindSymlink || leak.Target != "/etc/passwd" {
		t.Errorf("leak: %+v, want the link recorded with its target", leak)
	}
	// The init (as the agent's UID) cannot read "hidden", src/hack.py or src/hidden: none
	// may look absent to a negative check; each is recorded as the local snapshot records it.
	for _, name := range []string{"hidden", "src/hack.py"} {
		if e, ok := s.Lookup(name); !ok || e.Kind != snapshot.KindFile || e.Omitted != "permission denied; left out" {
			t.Errorf("%s: %+v %v, want a visible file omitted as unreadable", name, e, ok)
		}
		if _, err := s.ReadFile(name); !errors.Is(err, snapshot.ErrOmitted) {
			t.Errorf("ReadFile(%s) = %v, want ErrOmitted", name, err)
		}
	}
	if e, ok := s.Lookup("src/hidden"); !ok || e.Omitted == "" {
		t.Errorf("src/hidden: %+v %v, want a directory with an omitted listing", e, ok)
	}
	if _, ok := s.Unvouched("src/hidden/hack.py"); !ok {
		t.Error("src/hidden/hack.py reads as absent below an unreadable directory")
	}
	// The sparse file costs a header, not its zeros, and is omitted with its size.
	if e, ok := s.Lookup("big"); !ok || (e.Size != 1<<40 && e.Size != 4<<30) || !strings.Contains(e.Omitted, "per-file cap") {
		t.Errorf("big: %+v %v, want omitted for the per-file cap with its size", e, ok)
	}
	if len(s.LimitsHit) != 1 || !strings.HasPrefix(s.LimitsHit[0], "snapshot per-file cap") {
		t.Errorf("limits hit %q, want the snapshot's per-file cap line", s.LimitsHit)
	}
}

func TestCollectRemovesOnlyTheDeadControllersRuns(t *testing.T) {
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(id, controller string) *kube.Run {
		run, err := c.Start(ctx, kube.Config{
			RunID: id, Controller: controller, Namespace: ns,
			Image: kubetest.Image, InitImage: kubetest.InitImage(t), PullPolicy: kube.PullNever, Command: []string{"sleep", "3600"},
			MemoryMB: 32, CPUs: 0.1, DiskMB: 8, TmpMB: 8,
		})
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	start("dead-1", "dead-controller")
	start("dead-2", "dead-controller")
	alive := start("alive-1", "live-controller")
	n, err := c.Collect(ctx, ns, "dead-controller")
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("collect deleted %d objects, want 2 Pods and 2 NetworkPolicies", n)
	}
	if _, err := alive.WaitRunning(ctx); err != nil {
		t.Errorf("the live controller's run: %v", err)
	}
	if err := alive.Delete(ctx); err != nil {
		t.Error(err)
	}
	// kubetest.Namespace's cleanup fails the test if anything of either controller is left.
}

func TestWaitOnADeletedPodFailsInsteadOfHanging(t *testing.T) {
	run := startPod(t, "deleted", "exec sleep 3600")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(ctx); err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "deleted") {
		t.Errorf("Wait on a deleted Pod: %v (context: %v), want a prompt error naming the deletion", err, ctx.Err())
	}
}

func TestDefaultImageRunsInAPodAfterExportAndImport(t *testing.T) {
	c, ctx := ctrtest.Connect(t) // the private containerd, where ceval builds images
	node, nodeCtx := kubetest.NodeContainerd(t)
	name := fmt.Sprintf("ceval.local/kube-test-default-%d:latest", os.Getpid())
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, name); ctrtest.RemoveImage(nodeCtx, node, name) })
	if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: name}); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if _, err := images.Export(ctx, c, name, &archive); err != nil {
		t.Fatal(err)
	}
	imported, err := images.Import(nodeCtx, node, &archive)
	if err != nil {
		t.Fatal(err)
	}
	// The CRI adds a reference named by the config digest: remove it too.
	t.Cleanup(func() { ctrtest.RemoveImage(nodeCtx, node, imported[0].ConfigDigest.String()) })
	pod, out := runPod(t, "default-image", "echo uid=$(id -u); echo home=$HOME; touch $HOME/x && echo home=writable", func(c *kube.Config) { c.Image = name })
	if pod.Status.Phase != kube.PodSucceeded {
		t.Fatalf("pod phase %s; output:\n%s", pod.Status.Phase, out)
	}
	if got := fields(out); got["uid"] != "2000" || got["home"] != "writable" {
		t.Errorf("output:\n%s", out)
	}
}

func TestUserNamespacePodOnlyWhereTheNodeSupportsIt(t *testing.T) {
	c := kubetest.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	supported, err := c.UserNamespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node runtime supports user namespaces: %v", supported)
	if supported {
		pod, out := runPod(t, "userns", "cat /proc/self/uid_map", func(c *kube.Config) { c.UserNamespace = true })
		if pod.Status.Phase != kube.PodSucceeded || strings.Fields(out)[1] == "0" {
			t.Errorf("phase %s, uid_map %q: want the Pod's 0 mapped to a non-root host ID", pod.Status.Phase, out)
		}
		return
	}
	// Where it is not supported the kubelet must refuse the Pod's sandbox, never run it with
	// host users: the Pod stays Pending with a FailedCreatePodSandBox event naming the reason.
	ns := kubetest.Namespace(t, c)
	run, err := c.Start(ctx, kube.Config{
		RunID: "userns", Controller: "kube-test", Namespace: ns, Image: kubetest.Image, InitImage: kubetest.InitImage(t), PullPolicy: kube.PullNever,
		Command: []string{"true"}, MemoryMB: 32, CPUs: 0.1, DiskMB: 8, TmpMB: 8, UserNamespace: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := run.Delete(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	var refusal string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		evs, err := kubetest.Clientset(t, c).CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + run.Name})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedCreatePodSandBox" {
				refusal = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no sandbox refusal for a hostUsers: false Pod on a node without user-namespace support: %v", err)
	}
	pod, err := kubetest.Clientset(t, c).CoreV1().Pods(ns).Get(ctx, run.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Running != nil || s.State.Terminated != nil {
			t.Errorf("the agent container ran: %+v", s.State)
		}
	}
	if !strings.Contains(refusal, "user namespaces") {
		t.Errorf("refusal %q does not name user namespaces", refusal)
	}
}
