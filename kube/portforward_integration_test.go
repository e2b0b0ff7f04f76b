package kube_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/internal/kubetest"
	"ceval.dev/ceval/kube"
)

// agentConfig is a small hardened run in namespace ns whose agent container runs script
// instead of ceval's init.
func agentConfig(t *testing.T, ns, name, script string) kube.Config {
	return kube.Config{
		RunID: name, Controller: "kube-test", Namespace: ns,
		Image: kubetest.Image, InitImage: kubetest.InitImage(t), PullPolicy: kube.PullNever,
		Command: []string{"/bin/sh", "-c", script},
		Timeout: 2 * time.Minute, Grace: time.Second, MemoryMB: 64, CPUs: 0.25, DiskMB: 16, TmpMB: 8,
	}
}

// startAgent runs StartAgent and deletes the run at the end of the test.
func startAgent(t *testing.T, c *kube.Cluster, cfg kube.Config) *kube.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	run, err := c.StartAgent(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("StartAgent (policy + pod created, install container ran, agent running): %v", time.Since(start))
	t.Cleanup(func() {
		if err := run.Delete(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return run
}

// echoServer listens on the control port in the Pod, a cat per connection. busybox nc
// listens with a backlog of 2: more concurrent connections to one port get reset.
const echoServer = "exec nc -ll -p 7170 -e cat"

// echoPorts are 8 ports with an echo server each (port 7170 and the 7 after it), for 16
// concurrent streams within nc's backlog.
const echoPorts = "for p in 7171 7172 7173 7174 7175 7176 7177; do nc -ll -p $p -e cat & done; " + echoServer

// dialEcho dials with dial until the echo server answers (it starts listening right after
// the container does; a refusal before that is the kubelet's *ForwardError) and returns the
// connection with hello read back.
func dialEcho(t *testing.T, ctx context.Context, dial func(context.Context) (net.Conn, error)) net.Conn {
	t.Helper()
	for refused := 0; ; refused++ {
		conn, err := dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 6)
		_, err = conn.Write([]byte("hello\n"))
		if err == nil {
			_, err = io.ReadFull(conn, got)
		}
		var fe *kube.ForwardError
		if errors.As(err, &fe) && strings.Contains(fe.Message, "refused") && ctx.Err() == nil {
			conn.Close()
			continue
		}
		if err != nil || string(got) != "hello\n" {
			t.Fatalf("echo: %q, %v", got, err)
		}
		if refused > 0 {
			t.Logf("the echo server refused %d streams before it listened", refused)
		}
		return conn
	}
}

func TestPortForwardOpensOneStreamPerCallConcurrently(t *testing.T) {
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	run := startAgent(t, c, agentConfig(t, ns, "echo", echoPorts))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first := dialEcho(t, ctx, run.Dial)
	defer first.Close()
	for p := kube.ControlPort + 1; p < kube.ControlPort+8; p++ {
		dialEcho(t, ctx, func(ctx context.Context) (net.Conn, error) { return c.PortForward(ctx, ns, run.Name, p) }).Close()
	}

	const streams = 16
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	start := time.Now()
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := c.PortForward(ctx, ns, run.Name, kube.ControlPort+i%8)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			// Enough to span many frames, different on every stream.
			msg := bytes.Repeat([]byte(fmt.Sprintf("stream %02d;", i)), 20000)
			go conn.Write(msg)
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(conn, got); err != nil {
				errs <- fmt.Errorf("stream %d: %w", i, err)
				return
			}
			if !bytes.Equal(got, msg) {
				errs <- fmt.Errorf("stream %d: got another stream's bytes", i)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d concurrent streams echoing %d KB each: %v", streams, 11*20000/1000, time.Since(start))

	// The first stream still works after the others closed.
	if _, err := first.Write([]byte("again\n")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if _, err := io.ReadFull(first, got); err != nil || string(got) != "again\n" {
		t.Errorf("first stream after the others: %q, %v", got, err)
	}
	start = time.Now()
	conn, err := run.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte("x"))
	io.ReadFull(conn, got[:1])
	conn.Close()
	t.Logf("one more stream on the shared connection, round trip: %v", time.Since(start))
}

// Data written to a stream the kubelet then refuses is never read there, and held up the
// kubelet's frame worker for that stream's partition: the next stream created in it got no
// reply for 30 s, and dropping the connection then ended the established streams too
// (measured: 30.0 s, and the first stream read EOF). Such a stream now moves later
// streams to a new connection.
func TestStreamsRefusedAfterWeWroteHoldUpNoLaterStream(t *testing.T) {
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	run := startAgent(t, c, agentConfig(t, ns, "refusedwrite", echoServer))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first := dialEcho(t, ctx, run.Dial)
	defer first.Close()
	for range 6 { // more than the kubelet's five frame workers
		s, err := c.PortForward(ctx, ns, run.Name, kube.ControlPort+1) // nothing listens there
		if err != nil {
			t.Fatal(err)
		}
		s.Write([]byte("hello\n"))
		var fe *kube.ForwardError
		if _, err := io.ReadAll(s); !errors.As(err, &fe) {
			t.Fatalf("a stream to a port nothing listens on: %v, want the kubelet's refusal", err)
		}
		s.Close()
	}
	for i := range 6 {
		start := time.Now()
		s, err := c.PortForward(ctx, ns, run.Name, kube.ControlPort)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("stream %d after the refused ones took %v to open", i, d)
		}
	}
	if _, err := first.Write([]byte("again\n")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if _, err := io.ReadFull(first, got); err != nil || string(got) != "again\n" {
		t.Errorf("the first stream after the refused ones: %q, %v", got, err)
	}
}

// API servers before 1.30 offer no WebSocket port-forward: the SPDY path carries streams
// and the kubelet's refusals the same way.
func TestPortForwardOverSPDYWhereTheServerHasNoWebSocket(t *testing.T) {
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	run := startAgent(t, c, agentConfig(t, ns, "spdy", echoServer))
	kube.ForceSPDY(true)
	defer kube.ForceSPDY(false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dialEcho(t, ctx, run.Dial).Close()
	conn, err := c.PortForward(ctx, ns, run.Name, 7171)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var fe *kube.ForwardError
	if _, err := conn.Read(make([]byte, 1)); !errors.As(err, &fe) {
		t.Errorf("read from a port nobody listens on: %v, want a *ForwardError", err)
	}
}

func TestPortForwardToAPortNobodyListensOnFailsTheReadWithTheKubeletsMessage(t *testing.T) {
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	run := startAgent(t, c, agentConfig(t, ns, "refused", echoServer))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dialEcho(t, ctx, run.Dial).Close() // the Pod is up and serving 7170
	conn, err := c.PortForward(ctx, ns, run.Name, 7171)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.Read(make([]byte, 1))
	var fe *kube.ForwardError
	if !errors.As(err, &fe) || fe.Port != 7171 || !strings.Contains(fe.Message, "refused") {
		t.Fatalf("read: %v, want a *ForwardError saying the connection was refused", err)
	}
	t.Logf("refusal: %v", err)
	// The shared connection survives one stream's failure.
	dialEcho(t, ctx, run.Dial).Close()
}

func TestPortForwardStreamEndsWhenThePodIsDeleted(t *testing.T) {
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	run := startAgent(t, c, agentConfig(t, ns, "gone", echoServer))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := dialEcho(t, ctx, run.Dial)
	defer conn.Close()
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(make([]byte, 1))
		read <- err
	}()
	if err := run.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if err == nil {
			t.Error("read returned data from a deleted Pod")
		}
		t.Logf("read after delete: %v", err)
	case <-ctx.Done():
		t.Fatal("a read on a deleted Pod's stream hangs")
	}
	if err := run.Lost(ctx); err == nil {
		t.Error("Lost: nil for a deleted Pod")
	}
}

// What the install container leaves the agent: both binaries, byte for byte, executable and
// read-only (the mount and the files), and a mocked tool at its path, read-only too.
func TestInstalledBinariesAreExecutableAndReadOnlyToTheAgent(t *testing.T) {
	pod, out := runPod(t, "install", `
for f in /.ceval/ceval-init /.ceval/ceval-mock /usr/local/bin/uipath; do
  echo "$f sha256=$(sha256sum $f | cut -d' ' -f1)"
  if [ -x $f ]; then echo "$f exec=yes"; else echo "$f exec=no"; fi
  if echo x >> $f; then echo "$f write=yes"; else echo "$f write=no"; fi
  if chmod 777 $f; then echo "$f chmod=yes"; else echo "$f chmod=no"; fi
done
if touch /.ceval/planted; then echo "dir write=yes"; else echo "dir write=no"; fi
if rm /.ceval/ceval-init; then echo "dir rm=yes"; else echo "dir rm=no"; fi
echo mount=$(awk '$2 == "/.ceval" { split($4, o, ","); print o[1] }' /proc/mounts)
echo run=$(awk '$2 == "/run/ceval" { print $3 }' /proc/mounts)
if touch /run/ceval/sock; then echo run write=yes; fi
`, func(c *kube.Config) {
		c.Mounts = []kube.FileMount{{Path: "/usr/local/bin/uipath", File: kube.MockFile}}
	})
	if pod.Status.Phase != kube.PodSucceeded {
		t.Fatalf("pod phase %s; output:\n%s", pod.Status.Phase, out)
	}
	want := []string{
		"/.ceval/ceval-init sha256=" + embedded.Init.SHA256(),
		"/.ceval/ceval-mock sha256=" + embedded.Mock.SHA256(),
		"/usr/local/bin/uipath sha256=" + embedded.Mock.SHA256(),
		"dir write=no", "dir rm=no", "mount=ro", "run=tmpfs", "run write=yes",
	}
	for _, f := range []string{"/.ceval/ceval-init", "/.ceval/ceval-mock", "/usr/local/bin/uipath"} {
		want = append(want, f+" exec=yes", f+" write=no", f+" chmod=no")
	}
	for _, w := range want {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("output lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

func TestStartAgentNamesTheImportWhenTheNodeLacksTheInitImage(t *testing.T) {
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	cfg := agentConfig(t, ns, "noinit", echoServer)
	cfg.InitImage = "ceval.dev/ceval-init:000000000000"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := c.StartAgent(ctx, cfg)
	var lost *kube.PodLostError
	if err == nil || errors.As(err, &lost) || !strings.Contains(err.Error(), "ErrImageNeverPull") || !strings.Contains(err.Error(), "ceval images import --namespace k8s.io") {
		t.Fatalf("StartAgent: %v, want an error naming ErrImageNeverPull and the import", err)
	}
	// kubetest.Namespace's cleanup fails the test if the Pod or its policy is left.
}

// The scheduler places a Pod once room frees, so StartAgent waits; a caller that stops
// waiting while the Pod is still unschedulable gets a *PodLostError it may retry.
func TestStartAgentStillUnschedulableWhenTheCallerGivesUpIsLost(t *testing.T) {
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	cfg := agentConfig(t, ns, "huge", echoServer)
	cfg.CPUs = 4096
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	done := make(chan error, 1)
	go func() {
		_, err := c.StartAgent(startCtx, cfg)
		done <- err
	}()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := kubetest.Clientset(t, c).CoreV1().Pods(ns).Get(ctx, kube.PodName("huge"), metav1.GetOptions{})
		if err != nil {
			return false, nil // not created yet
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the Pod never became unschedulable: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("StartAgent returned while the Pod waits for room: %v", err)
	default:
	}
	giveUp()
	err = <-done
	var lost *kube.PodLostError
	if !errors.As(err, &lost) || lost.Reason != "Unschedulable" || !errors.Is(err, context.Canceled) {
		t.Fatalf("StartAgent: %v, want a *PodLostError (Unschedulable) and the cancellation", err)
	}
	t.Logf("%v", err)
	// kubetest.Namespace's cleanup fails the test if StartAgent left the Pod or its policy.
}

// A Pod the kubelet cannot make a sandbox for stays Pending, with the reason only in an
// event: when the caller gives up, StartAgent's error carries it.
func TestStartAgentThatGivesUpSaysWhyThePodIsStuck(t *testing.T) {
	c := kubetest.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if ok, err := c.UserNamespaces(ctx); err != nil || ok {
		t.Skipf("the node supports user namespaces (%v): no sandbox refusal to provoke", err)
	}
	ns := kubetest.Namespace(t, c)
	cfg := agentConfig(t, ns, "stuck", echoServer)
	cfg.UserNamespace = true
	startCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	done := make(chan error, 1)
	go func() {
		_, err := c.StartAgent(startCtx, cfg)
		done <- err
	}()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		evs, err := kubetest.Clientset(t, c).CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + kube.PodName("stuck")})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedCreatePodSandBox" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no FailedCreatePodSandBox event: %v", err)
	}
	giveUp()
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "FailedCreatePodSandBox: ") || !strings.Contains(err.Error(), "phase Pending") {
		t.Errorf("StartAgent: %v, want it to say the Pod is pending and why", err)
	}
	// kubetest.Namespace's cleanup fails the test if StartAgent left the Pod or its policy.
}

// TestARelayLeftUnreadDoesNotStallTheControlStream: a relay's Pod side floods it while the
// controller side stops reading; the unread stream holds up its connection's frame workers.
// The control stream, on a connection of its own, still answers.
func TestARelayLeftUnreadDoesNotStallTheControlStream(t *testing.T) {
	c := kubetest.Connect(t)
	ns := kubetest.Namespace(t, c)
	run := startAgent(t, c, agentConfig(t, ns, "lanes", "nc -ll -p 7171 -e yes & "+echoServer))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	control := dialEcho(t, ctx, run.Dial)
	defer control.Close()
	for {
		relay, err := c.PortForward(kube.WithRelayLane(ctx), ns, run.Name, kube.ControlPort+1)
		if err != nil {
			t.Fatal(err)
		}
		defer relay.Close()
		var fe *kube.ForwardError
		if _, err = relay.Read(make([]byte, 1)); errors.As(err, &fe) && ctx.Err() == nil {
			continue // not listening yet
		} else if err != nil {
			t.Fatal(err)
		}
		break // flooding, and never read again
	}
	answered := make(chan error, 1)
	go func() {
		for i := range 500 { // round trips while the relay's flood piles up
			msg := fmt.Sprintf("control %03d\n", i)
			got := make([]byte, len(msg))
			if _, err := control.Write([]byte(msg)); err != nil {
				answered <- err
				return
			}
			if _, err := io.ReadFull(control, got); err != nil || string(got) != msg {
				answered <- fmt.Errorf("read %q, %v", got, err)
				return
			}
		}
		answered <- nil
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // bounds a failure; a working channel answers in ms
		t.Fatal("the control stream stalled behind an unread relay")
	}
}
