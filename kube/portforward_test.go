package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/streaming/pkg/httpstream"
)

// fakeKubelet plays the far end of port-forward connections: port 1 echoes, port 2 refuses
// (as the kubelet does: a message on the error stream, then both streams end), port 3 keeps
// what arrives until our side ends and hands it to sunk, port 4 takes one write and then
// ends its forward with an error, reading nothing more.
type fakeKubelet struct {
	dials   atomic.Int32
	failing atomic.Int32  // dials left to fail
	block   chan struct{} // if set, a dial waits for it

	createFail  atomic.Int32  // stream creations left to fail (the server never answered)
	createEnter chan struct{} // if set, told when a stream creation starts...
	createBlock chan struct{} // ...which then waits for this

	mu      sync.Mutex
	ids     map[string][]string // request ID -> stream types seen
	conns   []*fakeConn
	removed chan httpstream.Stream
	sunk    chan []byte
}

func newFakeKubelet() *fakeKubelet {
	return &fakeKubelet{ids: map[string][]string{}, removed: make(chan httpstream.Stream, 1024), sunk: make(chan []byte, 1)}
}

func (k *fakeKubelet) cluster() *Cluster {
	c := &Cluster{}
	c.fwd.dial = k.dial
	return c
}

func (k *fakeKubelet) dial(namespace, pod string) (httpstream.Connection, error) {
	k.dials.Add(1)
	if k.block != nil {
		<-k.block
	}
	if k.failing.Add(-1) >= 0 {
		return nil, errors.New("upgrade refused")
	}
	fc := &fakeConn{k: k, closed: make(chan bool)}
	k.mu.Lock()
	k.conns = append(k.conns, fc)
	k.mu.Unlock()
	return fc, nil
}

type fakeConn struct {
	k         *fakeKubelet
	closed    chan bool
	closeOnce sync.Once
	pending   sync.Map // request ID -> *fakeStream (the error stream, until its data stream comes)
}

func (c *fakeConn) CreateStream(h http.Header) (httpstream.Stream, error) {
	select {
	case <-c.closed:
		return nil, errors.New("connection closed")
	default:
	}
	if c.k.createEnter != nil {
		c.k.createEnter <- struct{}{}
		<-c.k.createBlock
	}
	if c.k.createFail.Add(-1) >= 0 {
		return nil, errors.New("Timeout occurred")
	}
	id, typ := h.Get(corev1.PortForwardRequestIDHeader), h.Get(corev1.StreamType)
	c.k.mu.Lock()
	c.k.ids[fmt.Sprintf("%p/%s", c, id)] = append(c.k.ids[fmt.Sprintf("%p/%s", c, id)], typ)
	c.k.mu.Unlock()
	s := newFakeStream(h)
	if typ == corev1.StreamTypeError {
		c.pending.Store(id, s)
		return s, nil
	}
	v, _ := c.pending.LoadAndDelete(id)
	errStream := v.(*fakeStream)
	go func() {
		if h.Get(corev1.PortHeader) == "2" {
			io.WriteString(errStream.fromW, "failed to dial 2: connection refused")
			errStream.fromW.Close()
			s.fromW.Close()
			return
		}
		if h.Get(corev1.PortHeader) == "4" {
			s.toR.Read(make([]byte, 64))
			io.WriteString(errStream.fromW, "error forwarding port 4: connection reset by peer")
			errStream.fromW.Close()
			s.fromW.Close()
			return
		}
		if h.Get(corev1.PortHeader) == "3" {
			b, _ := io.ReadAll(s.toR)
			c.k.sunk <- b
		} else {
			io.Copy(s.fromW, s.toR) // echo until our side ends
		}
		errStream.fromW.Close()
		s.fromW.Close()
	}()
	return s, nil
}

func (c *fakeConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}
func (c *fakeConn) CloseChan() <-chan bool       { return c.closed }
func (c *fakeConn) SetIdleTimeout(time.Duration) {}
func (c *fakeConn) RemoveStreams(ss ...httpstream.Stream) {
	for _, s := range ss {
		c.k.removed <- s
	}
}

// fakeStream: what we write goes to toR (the Pod's side reads it); what the Pod's side
// writes to fromW we read.
type fakeStream struct {
	h          http.Header
	toR        *io.PipeReader
	toW        *io.PipeWriter
	fromR      *io.PipeReader
	fromW      *io.PipeWriter
	resetCount atomic.Int32
}

func newFakeStream(h http.Header) *fakeStream {
	s := &fakeStream{h: h.Clone()}
	s.toR, s.toW = io.Pipe()
	s.fromR, s.fromW = io.Pipe()
	return s
}

func (s *fakeStream) Read(p []byte) (int, error)  { return s.fromR.Read(p) }
func (s *fakeStream) Write(p []byte) (int, error) { return s.toW.Write(p) }
func (s *fakeStream) Close() error                { return s.toW.Close() }
func (s *fakeStream) Reset() error {
	s.resetCount.Add(1)
	s.toW.CloseWithError(errors.New("reset"))
	s.fromR.CloseWithError(errors.New("reset"))
	return nil
}
func (s *fakeStream) Headers() http.Header { return s.h }
func (s *fakeStream) Identifier() uint32   { return 0 }

func echo(t *testing.T, c *Cluster, ctx context.Context, pod, msg string) error {
	conn, err := c.PortForward(ctx, "ns", pod, 1)
	if err != nil {
		return err
	}
	defer conn.Close()
	go conn.Write([]byte(msg))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil {
		return err
	}
	if string(got) != msg {
		return fmt.Errorf("got %q, want %q", got, msg)
	}
	return nil
}

func TestPortForwardSharesOneConnectionPerPodUnderConcurrentCalls(t *testing.T) {
	k := newFakeKubelet()
	k.block = make(chan struct{}) // every caller arrives while the first dial is under way
	c := k.cluster()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- echo(t, c, ctx, "pod-"+strconv.Itoa(i%2), fmt.Sprintf("stream %d", i))
		}()
	}
	for k.dials.Load() < 2 {
		// the two dials (one per Pod) start as the first callers arrive
		runtime.Gosched()
	}
	close(k.block)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := k.dials.Load(); n != 2 {
		t.Errorf("%d dials for 64 streams to 2 Pods, want 2", n)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.ids) != 64 {
		t.Errorf("%d distinct request IDs, want 64", len(k.ids))
	}
	for id, types := range k.ids {
		if len(types) != 2 || types[0] != corev1.StreamTypeError || types[1] != corev1.StreamTypeData {
			t.Errorf("request %s: streams %v, want an error stream then a data stream", id, types)
		}
	}
}

func TestPortForwardDialsAgainAfterAFailedDialOrAClosedConnection(t *testing.T) {
	k := newFakeKubelet()
	k.failing.Store(1)
	c := k.cluster()
	ctx := context.Background()
	if err := echo(t, c, ctx, "p", "a"); err == nil {
		t.Fatal("the first dial fails, the stream did not")
	}
	if err := echo(t, c, ctx, "p", "b"); err != nil {
		t.Fatalf("after a failed dial: %v", err)
	}
	k.mu.Lock()
	k.conns[0].Close() // the API server or the kubelet ended the connection
	k.mu.Unlock()
	if err := echo(t, c, ctx, "p", "c"); err != nil {
		t.Fatalf("after the connection closed: %v", err)
	}
	if n := k.dials.Load(); n != 3 {
		t.Errorf("%d dials, want 3 (failed, first, after the close)", n)
	}
}

func TestPortForwardWaitIsBoundedByTheCallersContext(t *testing.T) {
	k := newFakeKubelet()
	k.block = make(chan struct{})
	defer close(k.block)
	c := k.cluster()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.PortForward(ctx, "ns", "p", 1); !errors.Is(err, context.Canceled) {
		t.Errorf("PortForward with a dial that hangs and a cancelled ctx: %v", err)
	}
}

func TestPortForwardReadReturnsTheKubeletsErrorNotEOF(t *testing.T) {
	k := newFakeKubelet()
	conn, err := k.cluster().PortForward(context.Background(), "ns", "p", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.Read(make([]byte, 1))
	var fe *ForwardError
	if !errors.As(err, &fe) || fe.Message != "failed to dial 2: connection refused" || fe.Port != 2 || fe.Pod != "p" {
		t.Errorf("read: %v, want the kubelet's message as a *ForwardError", err)
	}
}

// Close must not drop what was written before it (the init's Quit frame is the last thing
// on the control connection): our side ends after it, then the streams are released.
func TestPortForwardCloseDeliversWhatWasWrittenThenReleasesTheStreams(t *testing.T) {
	k := newFakeKubelet()
	conn, err := k.cluster().PortForward(context.Background(), "ns", "p", 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("last words")); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if got := <-k.sunk; string(got) != "last words" {
		t.Errorf("the Pod's side got %q before the end, want all of it", got)
	}
	for range 2 { // the data and error streams
		<-k.removed
	}
	// On a real connection a reset drops what is still in flight: only a Pod side that
	// never ends is reset.
	if n := conn.(*forwardStream).data.(*fakeStream).resetCount.Load(); n != 0 {
		t.Errorf("the data stream was reset %d times although the Pod's side ended by itself", n)
	}
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after close: %v", err)
	}
}

// The caller's ctx bounds a stream creation the server does not answer; the streams made
// after it ended are released, not leaked.
func TestPortForwardStreamCreationIsBoundedByTheCallersContext(t *testing.T) {
	k := newFakeKubelet()
	k.createEnter, k.createBlock = make(chan struct{}), make(chan struct{})
	c := k.cluster()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.PortForward(ctx, "ns", "p", 1)
		errc <- err
	}()
	<-k.createEnter
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("PortForward: %v, want the cancellation", err)
	}
	close(k.createBlock) // the server answers late
	go func() {
		for range k.createEnter { // the data stream's creation
		}
	}()
	for range 2 { // both streams are released
		<-k.removed
	}
}

// A stream the connection could not create (the server never answered: "Timeout occurred")
// drops that connection; the call tries once more on a new one.
func TestPortForwardRetriesOnceOnANewConnectionWhenStreamCreationFails(t *testing.T) {
	k := newFakeKubelet()
	k.createFail.Store(1)
	if err := echo(t, k.cluster(), context.Background(), "p", "hi"); err != nil {
		t.Fatal(err)
	}
	if n := k.dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2", n)
	}
	k.mu.Lock()
	closed := k.conns[0].closed
	k.mu.Unlock()
	select {
	case <-closed:
	default:
		t.Error("the connection that failed to create a stream is still open")
	}
	k.createFail.Store(2)
	if err := echo(t, k.cluster(), context.Background(), "p", "hi"); err == nil || !strings.Contains(err.Error(), "Timeout occurred") {
		t.Errorf("two failures in a row: %v, want the second's error", err)
	}
}

// TestPortForwardRelaysShareAConnectionApartFromTheControlStream: a relay whose service
// stops reading holds up its connection's frame workers; the control stream (the agent's
// output, its Exit) must not be on that connection. Closing the relays' connection leaves
// the control stream working.
func TestPortForwardRelaysShareAConnectionApartFromTheControlStream(t *testing.T) {
	k := newFakeKubelet()
	c := k.cluster()
	ctx := context.Background()
	control, err := c.PortForward(ctx, "ns", "pod", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close()
	relayCtx := WithRelayLane(ctx)
	for i := range 3 {
		if err := echo(t, c, relayCtx, "pod", fmt.Sprintf("relay %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := k.dials.Load(); n != 2 {
		t.Fatalf("%d dials for a control stream and 3 relays, want 2 (one per lane)", n)
	}
	c.fwd.mu.Lock()
	relays := c.fwd.conns[forwardKey("ns", "pod", true)]
	c.fwd.mu.Unlock()
	c.dropForward("ns", "pod", relays) // as if the relays' connection were wedged and dropped
	go control.Write([]byte("still here"))
	got := make([]byte, len("still here"))
	if _, err := io.ReadFull(control, got); err != nil || string(got) != "still here" {
		t.Errorf("the control stream after the relays' connection closed: %q %v", got, err)
	}
}

// taintedPod opens an echo stream (keep) and then a stream (bad) whose forward ends after
// our write, which taints their connection, k.conns[0].
func taintedPod(t *testing.T) (k *fakeKubelet, c *Cluster, keep, bad net.Conn) {
	t.Helper()
	w := forwardUnreadWindow
	forwardUnreadWindow = time.Hour // a loaded host must not age the write out
	t.Cleanup(func() { forwardUnreadWindow = w })
	k = newFakeKubelet()
	c = k.cluster()
	var err error
	if keep, err = c.PortForward(context.Background(), "ns", "p", 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keep.Close() })
	if bad, err = c.PortForward(context.Background(), "ns", "p", 4); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bad.Close() })
	if _, err := bad.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	var fe *ForwardError
	if _, err := io.ReadAll(bad); !errors.As(err, &fe) { // its end taints the connection
		t.Fatalf("read: %v, want the kubelet's error", err)
	}
	return k, c, keep, bad
}

// A stream whose forward ended while what we wrote may lie unread on the kubelet's side
// taints its connection (see forwardConn): later streams go to a new connection, the old
// one stays for the streams it has and closes with the last, and nothing more is written
// to the ended stream.
func TestPortForwardStreamEndedUnderOurWritesMovesLaterStreamsToANewConnection(t *testing.T) {
	k, c, keep, bad := taintedPod(t)
	// The fake would block this write for good, as the kubelet's frame worker would.
	wrote := make(chan error, 1)
	go func() { _, err := bad.Write([]byte("more")); wrote <- err }()
	var fe *ForwardError
	select {
	case err := <-wrote:
		if !errors.As(err, &fe) {
			t.Errorf("a write after the forward ended: %v, want the kubelet's error and nothing sent", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write after the forward ended was sent (and blocked)")
	}
	if err := echo(t, c, context.Background(), "p", "next"); err != nil {
		t.Fatal(err)
	}
	if n := k.dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2: the stream after the tainting one went to the same connection", n)
	}
	old := k.conns[0]
	go keep.Write([]byte("still"))
	got := make([]byte, 5)
	if _, err := io.ReadFull(keep, got); err != nil || string(got) != "still" {
		t.Fatalf("a stream of the tainted connection: %q, %v", got, err)
	}
	select {
	case <-old.closed:
		t.Fatal("the tainted connection was closed under a live stream")
	default:
	}
	bad.Close()
	keep.Close()
	select {
	case <-old.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the tainted connection outlived its last stream")
	}
}

// Deleting a run closes every port-forward connection of its Pod, tainted ones included
// (they are no longer the Pod's shared connection, but still carry streams).
func TestCloseForwardsReachesTaintedConnections(t *testing.T) {
	k, c, _, _ := taintedPod(t)
	c.closeForwards("ns", "p")
	select {
	case <-k.conns[0].closed:
	case <-time.After(10 * time.Second):
		t.Fatal("closeForwards left the tainted connection (and the stream on it) open")
	}
}
