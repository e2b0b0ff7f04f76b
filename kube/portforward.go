package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"strings"

	"github.com/gorilla/websocket"
	"k8s.io/streaming/pkg/httpstream"
	httpstreamspdy "k8s.io/streaming/pkg/httpstream/spdy"
)

// The port-forward protocol's names (k8s.io/api/core/v1 and client-go's tools/portforward;
// the SPDY connection itself is k8s.io/streaming's, which the kubelet's side uses too).
const (
	// portForwardProtocol is the SPDY subprotocol of port-forward.
	portForwardProtocol = "portforward.k8s.io"
	// tunnelingPrefix prefixes it for the WebSocket that tunnels SPDY (API servers since 1.30).
	tunnelingPrefix = "SPDY/3.1+"
	// forwardPingPeriod is how often the connection is pinged (client-go's PingPeriod).
	forwardPingPeriod = 10 * time.Second
	// Headers of a port-forward stream.
	headerStreamType = "streamType"
	headerPort       = "port"
	headerRequestID  = "requestID"
	streamTypeError  = "error"
	streamTypeData   = "data"
)

// Bounds of the port-forward plumbing (not of what flows through it).
const (
	// forwardDialTimeout bounds upgrading one connection to the API server.
	forwardDialTimeout = 30 * time.Second
	// forwardLinger is how long a closed stream waits for the Pod's side to end after our
	// FIN (containerd 1.6 ends it 1 s after one direction ends) before it is reset.
	forwardLinger = 5 * time.Second
	// maxForwardError bounds the error stream's message.
	maxForwardError = 4 << 10
)

// forwardUnreadWindow: data we wrote this long before the Pod's side ended a stream may
// never have been read there (containerd stops reading up to 1 s after the Pod's end of
// the connection closed), so the stream taints its connection (see forwardConn.tainted).
// A variable for tests.
var forwardUnreadWindow = 2 * time.Second

// ForwardError is the message the kubelet sent on a port-forward stream's error stream: it
// could not connect to the port in the Pod (nothing listens there yet or any more) or the
// connection failed. A Read of the stream returns it instead of io.EOF.
type ForwardError struct {
	Namespace, Pod string
	Port           int
	Message        string
}

func (e *ForwardError) Error() string {
	return fmt.Sprintf("port-forward to %s/%s:%d: %s", e.Namespace, e.Pod, e.Port, e.Message)
}

// forwards shares one upgraded connection to the API server per Pod and lane among the
// streams PortForward opens to it.
type forwards struct {
	mu    sync.Mutex
	conns map[string]*forwardConn
	// tainted holds each Pod's tainted connections, both lanes under the control lane's
	// key, until they close, so that closeForwards reaches their streams too.
	tainted map[string]map[*forwardConn]bool
	dial    func(namespace, pod string) (httpstream.Connection, error) // tests: replaces the API server
}

// forwardConn is one Pod's connection in one lane, or the dial that will make it.
//
// A connection is tainted, and takes no new stream, once data we wrote may sit unread on
// the server's side of a stream that ended there: the kubelet's side of the connection
// (spdystream) hands each data frame to its stream through an unbuffered channel, in one
// of five frame workers chosen by stream ID, and nothing reads a stream whose forward
// ended (a refused port, the Pod's end closed), so that worker blocks for good, and every
// later frame of its partition with it: a new stream there gets no reply (30 s, then the
// connection is dropped with every stream on it, measured). The tainted connection is
// forgotten at once (the next PortForward dials a new one) and closed when its last
// stream is released.
type forwardConn struct {
	key    string        // its key in forwards.conns
	ready  chan struct{} // closed once conn or err is set
	conn   httpstream.Connection
	err    error
	nextID atomic.Int64 // request IDs pair a data stream with its error stream

	mu      sync.Mutex
	live    int // streams opened on it and not released yet
	tainted bool
}

// hold counts a stream opened on fc.
func (fc *forwardConn) hold() {
	fc.mu.Lock()
	fc.live++
	fc.mu.Unlock()
}

// isTainted reports whether fc takes no new stream.
func (fc *forwardConn) isTainted() bool {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.tainted
}

// release counts a stream of fc released, closing a tainted fc with its last stream.
func (fc *forwardConn) release() {
	fc.mu.Lock()
	fc.live--
	done := fc.tainted && fc.live == 0
	fc.mu.Unlock()
	if done {
		fc.conn.Close()
	}
}

// relayLane marks a context whose PortForward streams are relays (see WithRelayLane).
type relayLane struct{}

// WithRelayLane returns ctx for a PortForward of a relayed connection: relays share a
// connection of their own, apart from the control stream's, so a relay whose controller-side
// service stops reading (which holds up the connection's frame workers) can stall other
// relays but never the control stream (its output, its Exit).
func WithRelayLane(ctx context.Context) context.Context {
	return context.WithValue(ctx, relayLane{}, true)
}

// PortForward opens one new stream to port on the loopback of pod (in namespace) through
// the API server's port-forward (WebSocket, or SPDY where the server does not offer it): no
// local listener, no kubectl. Streams to the same Pod share one connection per lane (the
// relays', under a ctx from WithRelayLane, and everything else's); an idle or lost
// connection is replaced on the next call, and one that cannot create a stream is dropped
// and the call tries once more on a new one. ctx bounds opening the stream, not its use.
//
// The returned net.Conn's Close ends the stream (our side first, so what was written arrives,
// then the whole stream); CloseWrite ends only our side. If the kubelet cannot connect to
// the port, or the connection fails, a Read returns a *ForwardError with its message. Read
// every stream promptly until it ends: streams of one connection share its frame workers,
// and one left unread holds up the others. Deadlines are not supported (SetDeadline says
// so): close the stream to stop a Read.
func (c *Cluster) PortForward(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("port-forward to %s/%s: port %d out of range", namespace, pod, port)
	}
	for attempt := 1; ; attempt++ {
		fc, err := c.forwardConn(ctx, namespace, pod, ctx.Value(relayLane{}) != nil)
		if err != nil {
			return nil, err
		}
		s, err := c.openStreams(ctx, fc, namespace, pod, port)
		var broken *brokenConnError
		if errors.As(err, &broken) && attempt == 1 && ctx.Err() == nil {
			continue // the connection was dropped: once more on a new one
		}
		return s, err
	}
}

// brokenConnError is a stream the connection could not create (the server never answered,
// or the connection closed): the connection is dropped.
type brokenConnError struct{ err error }

func (e *brokenConnError) Error() string { return e.err.Error() }
func (e *brokenConnError) Unwrap() error { return e.err }

// openStreams creates a request's error and data streams on fc. ctx bounds the wait; streams
// created after it ended are released.
func (c *Cluster) openStreams(ctx context.Context, fc *forwardConn, namespace, pod string, port int) (*forwardStream, error) {
	id := strconv.FormatInt(fc.nextID.Add(1), 10)
	type result struct {
		s   *forwardStream
		err error
	}
	done := make(chan result, 1)
	// Held from before the first stream is created, so that a tainted fc is not closed
	// under a stream being made; released again if none is made.
	fc.hold()
	go func() {
		broken := func(what string, err error) {
			// A tainted connection is not dropped for a failed creation: it still carries
			// the streams it has, and closes with the last of them.
			if !fc.isTainted() {
				c.dropForward(namespace, pod, fc)
			}
			fc.release()
			done <- result{err: &brokenConnError{fmt.Errorf("port-forward to %s/%s:%d: %s: %w", namespace, pod, port, what, err)}}
		}
		if fc.isTainted() { // made in the moment the caller took fc
			broken("connection", errTaintedConn)
			return
		}
		h := http.Header{}
		h.Set(headerStreamType, streamTypeError)
		h.Set(headerPort, strconv.Itoa(port))
		h.Set(headerRequestID, id)
		errStream, err := fc.conn.CreateStream(h)
		if err != nil {
			broken("error stream", err)
			return
		}
		errStream.Close() // we never write to it
		h.Set(headerStreamType, streamTypeData)
		data, err := fc.conn.CreateStream(h)
		if err != nil {
			fc.conn.RemoveStreams(errStream)
			broken("data stream", err)
			return
		}
		s := &forwardStream{
			conn: fc.conn, data: data, errStream: errStream,
			taint: func() { c.taintForward(namespace, pod, fc) }, release: fc.release,
			errDone: make(chan struct{}), closed: make(chan struct{}),
			addr:   forwardAddr(fmt.Sprintf("%s/%s:%d#%s", namespace, pod, port, id)),
			remote: ForwardError{Namespace: namespace, Pod: pod, Port: port},
		}
		go s.readErrors()
		done <- result{s: s}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		go func() { // a stream made after all is closed (and released) as soon as it is
			if r := <-done; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, fmt.Errorf("port-forward to %s/%s:%d: %w", namespace, pod, port, ctx.Err())
	}
}

// errTaintedConn: the connection was tainted as the stream was to be made on it.
var errTaintedConn = errors.New("tainted: taking no new stream")

// forwardConn returns the Pod's shared connection, dialing it if there is none or the one
// there has closed.
func (c *Cluster) forwardConn(ctx context.Context, namespace, pod string, relay bool) (*forwardConn, error) {
	key := namespace + "/" + pod
	for attempt := 1; ; attempt++ {
		fc := c.sharedForward(namespace, pod, relay)
		select {
		case <-fc.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("port-forward to %s: %w", key, ctx.Err())
		}
		if fc.err != nil {
			return nil, fc.err
		}
		select {
		case <-fc.conn.CloseChan():
			// closed since: forget it and dial again
			c.dropForward(namespace, pod, fc)
			if attempt == 3 {
				return nil, fmt.Errorf("port-forward to %s: the API server closed %d new connections at once", key, attempt)
			}
		default:
			return fc, nil
		}
	}
}

// forwardKey is the key of a Pod's connection in a lane.
func forwardKey(namespace, pod string, relay bool) string {
	if relay {
		return namespace + "/" + pod + "#relays"
	}
	return namespace + "/" + pod
}

// sharedForward returns the Pod's connection in its lane, starting its dial if there is none.
func (c *Cluster) sharedForward(namespace, pod string, relay bool) *forwardConn {
	key := forwardKey(namespace, pod, relay)
	c.fwd.mu.Lock()
	defer c.fwd.mu.Unlock()
	if c.fwd.conns == nil {
		c.fwd.conns = map[string]*forwardConn{}
	}
	if fc := c.fwd.conns[key]; fc != nil {
		return fc
	}
	fc := &forwardConn{key: key, ready: make(chan struct{})}
	c.fwd.conns[key] = fc
	// The dial has a bound of its own and is not tied to one caller's ctx: others may
	// wait for it. A failed dial is forgotten at once, so the next call dials again.
	go func() {
		fc.conn, fc.err = c.dialForward(namespace, pod)
		close(fc.ready)
		if fc.err != nil {
			c.dropForward(namespace, pod, fc)
			return
		}
		<-fc.conn.CloseChan()
		c.dropForward(namespace, pod, fc)
	}()
	return fc
}

// dropForward forgets fc (if it is still the Pod's connection in its lane) and closes it.
func (c *Cluster) dropForward(namespace, pod string, fc *forwardConn) {
	c.fwd.mu.Lock()
	if c.fwd.conns[fc.key] == fc {
		delete(c.fwd.conns, fc.key)
	}
	podKey := forwardKey(namespace, pod, false)
	if delete(c.fwd.tainted[podKey], fc); len(c.fwd.tainted[podKey]) == 0 {
		delete(c.fwd.tainted, podKey)
	}
	c.fwd.mu.Unlock()
	if fc.conn != nil {
		fc.conn.Close()
	}
}

// taintForward forgets fc (new streams go to a new connection) and closes it once its last
// stream is released.
func (c *Cluster) taintForward(namespace, pod string, fc *forwardConn) {
	c.fwd.mu.Lock()
	if c.fwd.conns[fc.key] == fc {
		delete(c.fwd.conns, fc.key)
	}
	select {
	case <-fc.conn.CloseChan(): // closed already: nothing to keep
	default:
		podKey := forwardKey(namespace, pod, false)
		if c.fwd.tainted == nil {
			c.fwd.tainted = map[string]map[*forwardConn]bool{}
		}
		if c.fwd.tainted[podKey] == nil {
			c.fwd.tainted[podKey] = map[*forwardConn]bool{}
		}
		c.fwd.tainted[podKey][fc] = true
	}
	c.fwd.mu.Unlock()
	fc.mu.Lock()
	fc.tainted = true
	idle := fc.live == 0
	fc.mu.Unlock()
	if idle {
		fc.conn.Close()
	}
}

// closeForwards closes the Pod's shared connections and with them every stream on them.
func (c *Cluster) closeForwards(namespace, pod string) {
	c.fwd.mu.Lock()
	var tainted []*forwardConn
	for fc := range c.fwd.tainted[forwardKey(namespace, pod, false)] {
		tainted = append(tainted, fc)
	}
	c.fwd.mu.Unlock()
	for _, fc := range tainted {
		c.dropForward(namespace, pod, fc)
	}
	for _, relay := range []bool{false, true} {
		c.fwd.mu.Lock()
		fc := c.fwd.conns[forwardKey(namespace, pod, relay)]
		c.fwd.mu.Unlock()
		if fc == nil {
			continue
		}
		go func() { // the dial may still be under way
			<-fc.ready
			c.dropForward(namespace, pod, fc)
		}()
	}
}

// forceSPDY makes dialForward skip the WebSocket tunnel (tests of the SPDY fallback).
var forceSPDY bool

// dialForward upgrades one connection to the Pod's portforward subresource: WebSocket
// tunneling SPDY (API servers since 1.30), else SPDY itself. The upgrades are written here
// (client-go's transport/websocket and transport/spdy do them for a rest.Config, which
// links client-go's REST stack); the SPDY connection is k8s.io/streaming's.
func (c *Cluster) dialForward(namespace, pod string) (httpstream.Connection, error) {
	if c.fwd.dial != nil {
		return c.fwd.dial(namespace, pod)
	}
	ctx, cancel := context.WithTimeout(context.Background(), forwardDialTimeout)
	defer cancel()
	u := c.api.url(podPath(namespace, pod)+"/portforward", nil)
	wrap := func(err error) error { return fmt.Errorf("port-forward to %s/%s: %w", namespace, pod, err) }
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err := c.api.authorize(hreq); err != nil {
		return nil, wrap(err)
	}
	header := hreq.Header
	if !forceSPDY {
		conn, err := c.dialTunnel(ctx, *u, header)
		if err == nil {
			return conn, nil
		}
		if !httpstream.IsUpgradeFailure(err) {
			return nil, wrap(err)
		}
	}
	rt, err := httpstreamspdy.NewRoundTripperWithConfig(httpstreamspdy.RoundTripperConfig{TLS: c.api.tls, Proxier: c.api.proxy, PingPeriod: forwardPingPeriod})
	if err != nil {
		return nil, wrap(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, wrap(err)
	}
	req.Header = header
	req.Header.Set(httpstream.HeaderProtocolVersion, portForwardProtocol)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, wrap(err)
	}
	conn, err := rt.NewConnection(resp)
	if err != nil {
		resp.Body.Close()
		return nil, wrap(err)
	}
	if proto := resp.Header.Get(httpstream.HeaderProtocolVersion); proto != portForwardProtocol {
		conn.Close()
		return nil, wrap(fmt.Errorf("the API server speaks %q, not %q", proto, portForwardProtocol))
	}
	return conn, nil
}

// dialTunnel opens the WebSocket that tunnels SPDY and the SPDY connection over it. A
// handshake the server refuses is an httpstream.UpgradeFailureError (then SPDY is tried).
func (c *Cluster) dialTunnel(ctx context.Context, u url.URL, header http.Header) (httpstream.Connection, error) {
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	}
	d := websocket.Dialer{
		Proxy:           c.api.proxy,
		TLSClientConfig: c.api.tls,
		Subprotocols:    []string{tunnelingPrefix + portForwardProtocol},
		ReadBufferSize:  32<<10 + 1024,
		WriteBufferSize: 32<<10 + 1024,
	}
	ws, resp, err := d.DialContext(ctx, u.String(), header)
	if err != nil {
		if errors.Is(err, websocket.ErrBadHandshake) {
			cause := err
			if resp != nil {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				cause = fmt.Errorf("%w (%s): %s", err, resp.Status, strings.TrimSpace(string(b)))
			}
			return nil, &httpstream.UpgradeFailureError{Cause: cause}
		}
		return nil, err
	}
	if ws.Subprotocol() != tunnelingPrefix+portForwardProtocol {
		ws.Close()
		return nil, &httpstream.UpgradeFailureError{Cause: fmt.Errorf("invalid protocol, expected %q, got %q", tunnelingPrefix+portForwardProtocol, ws.Subprotocol())}
	}
	conn, err := httpstreamspdy.NewClientConnectionWithPings(&tunnelConn{ws: ws}, forwardPingPeriod)
	if err != nil {
		ws.Close()
		return nil, err
	}
	return conn, nil
}

// tunnelConn is a WebSocket as the byte stream SPDY runs over: each write one binary
// message, reads across messages (client-go's portforward.TunnelingConnection).
type tunnelConn struct {
	ws        *websocket.Conn
	msg       io.Reader // the message being read
	closeOnce sync.Once
}

func (t *tunnelConn) Read(p []byte) (int, error) {
	for {
		if t.msg == nil {
			typ, r, err := t.ws.NextReader()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure {
					return 0, io.EOF
				}
				return 0, err
			}
			if typ != websocket.BinaryMessage {
				return 0, errors.New("port-forward tunnel: a message that is not binary")
			}
			t.msg = r
		}
		n, err := t.msg.Read(p)
		if n == 0 && err == io.EOF {
			t.msg = nil
			continue
		}
		return n, err
	}
}

func (t *tunnelConn) Write(p []byte) (n int, err error) {
	w, err := t.ws.NextWriter(websocket.BinaryMessage)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := w.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return w.Write(p)
}

func (t *tunnelConn) Close() error {
	var err error
	t.closeOnce.Do(func() {
		werr := t.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		if err = t.ws.Close(); err == nil {
			err = werr
		}
	})
	return err
}

func (t *tunnelConn) LocalAddr() net.Addr  { return t.ws.LocalAddr() }
func (t *tunnelConn) RemoteAddr() net.Addr { return t.ws.RemoteAddr() }
func (t *tunnelConn) SetDeadline(d time.Time) error {
	return errors.Join(t.ws.SetReadDeadline(d), t.ws.SetWriteDeadline(d))
}
func (t *tunnelConn) SetReadDeadline(d time.Time) error  { return t.ws.SetReadDeadline(d) }
func (t *tunnelConn) SetWriteDeadline(d time.Time) error { return t.ws.SetWriteDeadline(d) }

// forwardStream is one port-forward stream as a net.Conn.
type forwardStream struct {
	conn      httpstream.Connection
	data      httpstream.Stream
	errStream httpstream.Stream
	addr      forwardAddr

	errDone chan struct{} // closed when the error stream has ended
	remote  ForwardError  // Message set (before errDone) when the kubelet sent one

	// The kubelet ends the error stream when its forward ended: from then on nothing reads
	// what we write (see forwardConn). ended and lastWrite (time since forwardEpoch of the
	// last Write, 0: none) order a Write against that end: either the Write sees ended and
	// sends nothing, or readErrors sees its time and taints the connection.
	// A stream whose end (FIN) we sent before the Pod's side ended it taints nothing: the
	// forward then ended because it read our end, so it read everything before it. An end
	// we sent after theirs (remoteEOF, seen by a Read) excuses nothing.
	ended     atomic.Bool
	lastWrite atomic.Int64
	wroteEnd  atomic.Bool
	remoteEOF atomic.Bool
	taint     func() // taints the stream's connection
	release   func() // counts the stream released on its connection

	closeOnce sync.Once
	closed    chan struct{}
}

// forwardEpoch is the origin of forwardStream.lastWrite's monotonic times.
var forwardEpoch = time.Now()

func (s *forwardStream) readErrors() {
	defer close(s.errDone)
	msg, err := io.ReadAll(io.LimitReader(s.errStream, maxForwardError))
	switch {
	case len(msg) > 0:
		s.remote.Message = string(msg)
	case err != nil:
		s.remote.Message = "reading the error stream: " + err.Error()
	}
	s.ended.Store(true)
	if w := s.lastWrite.Load(); w != 0 && !s.wroteEnd.Load() && time.Since(forwardEpoch)-time.Duration(w) < forwardUnreadWindow {
		s.taint()
	}
}

// endWrites records our end of the stream (before it is sent): an excuse only while the
// Pod's side has not ended it first.
func (s *forwardStream) endWrites() {
	if !s.remoteEOF.Load() {
		s.wroteEnd.Store(true)
	}
}

// remoteError is the kubelet's message for the stream, once its error stream has ended (or
// the connection or the stream closed first), or nil.
func (s *forwardStream) remoteError() error {
	select {
	case <-s.errDone:
	case <-s.conn.CloseChan():
	case <-s.closed:
	}
	select {
	case <-s.errDone:
		if s.remote.Message != "" {
			e := s.remote
			return &e
		}
	default:
	}
	return nil
}

func (s *forwardStream) Read(p []byte) (int, error) {
	select {
	case <-s.closed:
		return 0, net.ErrClosed
	default:
	}
	n, err := s.data.Read(p)
	if err != nil {
		if err == io.EOF {
			s.remoteEOF.Store(true)
		}
		if rerr := s.remoteError(); rerr != nil {
			return n, rerr
		}
		select {
		case <-s.closed:
			return n, net.ErrClosed
		default:
		}
	}
	return n, err
}

func (s *forwardStream) Write(p []byte) (int, error) {
	select {
	case <-s.closed:
		return 0, net.ErrClosed
	default:
	}
	if len(p) == 0 {
		return 0, nil
	}
	s.lastWrite.Store(int64(time.Since(forwardEpoch)))
	if s.ended.Load() {
		// Nothing reads it there any more, and it would hold up the connection.
		if rerr := s.remoteError(); rerr != nil {
			return 0, rerr
		}
		return 0, io.ErrClosedPipe
	}
	n, err := s.data.Write(p)
	if s.ended.Load() && !s.wroteEnd.Load() {
		// The forward ended while this write was under way (a long one escapes
		// readErrors' window): what it sent may lie unread.
		s.taint()
	}
	if err != nil {
		if rerr := s.remoteError(); rerr != nil {
			return n, rerr
		}
	}
	return n, err
}

// CloseWrite ends our side of the stream; the Pod's side can still send, but on nodes with
// containerd 1.6's CRI not for long: it ends the whole stream 1 s after one direction ended
// (measured), so what the Pod sends later is lost.
func (s *forwardStream) CloseWrite() error {
	s.endWrites()
	return s.data.Close()
}

// Close ends our side (what was written still arrives), then waits in the background for
// the Pod's side to end, reading and dropping what it still sends, and resets the stream
// if that takes longer than forwardLinger.
func (s *forwardStream) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.endWrites()
		s.data.Close()
		go func() {
			drained := make(chan struct{})
			go func() {
				io.Copy(io.Discard, s.data)
				close(drained)
			}()
			t := time.NewTimer(forwardLinger)
			defer t.Stop()
			select {
			case <-drained:
			case <-t.C:
				s.data.Reset()
				s.errStream.Reset()
			case <-s.conn.CloseChan():
			}
			s.conn.RemoveStreams(s.data, s.errStream)
			s.release()
		}()
	})
	return nil
}

func (s *forwardStream) LocalAddr() net.Addr  { return s.addr }
func (s *forwardStream) RemoteAddr() net.Addr { return s.addr }

var errNoDeadline = errors.New("port-forward streams have no deadlines: close the stream or cancel the work instead")

func (s *forwardStream) SetDeadline(time.Time) error      { return errNoDeadline }
func (s *forwardStream) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (s *forwardStream) SetWriteDeadline(time.Time) error { return errNoDeadline }

// forwardAddr names a stream: namespace/pod:port#request.
type forwardAddr string

func (a forwardAddr) Network() string { return "portforward" }
func (a forwardAddr) String() string  { return string(a) }
