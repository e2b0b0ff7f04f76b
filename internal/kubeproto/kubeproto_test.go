package kubeproto

import (
	"bytes"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"
	"time"
)

func TestFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	payloads := [][]byte{nil, []byte("x"), bytes.Repeat([]byte{0xff}, MaxFrame)}
	for i, p := range payloads {
		if err := WriteFrame(&buf, FrameData+byte(i), p); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range payloads {
		typ, got, err := ReadFrame(&buf)
		if err != nil || typ != FrameData+byte(i) || !bytes.Equal(got, p) {
			t.Fatalf("frame %d: type %q, %d bytes, err %v; want %q, %d bytes", i, typ, len(got), err, FrameData+byte(i), len(p))
		}
	}
	if _, _, err := ReadFrame(&buf); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	start := Start{Argv: []string{"sh", "-c", "x"}, Env: []string{"A=1"}, Dir: "/workspace",
		Timeout: time.Minute, Grace: time.Second, RlimitAS: 1 << 30,
		Relays: []Relay{{"gateway", "tcp", "127.0.0.1:80"}}, Probes: []string{"10.0.0.1:443"}}
	exit := Exit{Code: 137, TimedOut: true, Killed: KillTimeout, Duration: time.Second, Reap: time.Millisecond}
	for _, v := range []any{&start, &exit, &Attest{Files: map[string]string{"status": "Uid: 1"}, PID: 1, Probes: []Probe{{"a:1", "refused"}}}} {
		var buf bytes.Buffer
		if err := WriteJSON(&buf, FrameStart, v); err != nil {
			t.Fatal(err)
		}
		typ, p, err := ReadFrame(&buf)
		if err != nil || typ != FrameStart {
			t.Fatalf("read: %q %v", typ, err)
		}
		got := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := DecodeJSON(typ, p, got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, v) {
			t.Fatalf("round trip: got %+v, want %+v", got, v)
		}
	}
}

func TestDecodeJSONRefusesUnknownFields(t *testing.T) {
	var d Dir
	if err := DecodeJSON(FrameCopyIn, []byte(`{"dir":"/w","follow":true}`), &d); err == nil {
		t.Fatal("an unknown field was accepted")
	}
}

func TestOversizeFrameIsRefusedWithoutReadingIt(t *testing.T) {
	if err := WriteFrame(io.Discard, FrameData, make([]byte, MaxFrame+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("write: %v, want ErrFrameTooLarge", err)
	}
	// A header announcing 4 GiB: refused from the header alone, before any allocation.
	r := &countingReader{r: bytes.NewReader(append([]byte{FrameData, 0xff, 0xff, 0xff, 0xff}, make([]byte, 100)...))}
	if _, _, err := ReadFrame(r); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("read: %v, want ErrFrameTooLarge", err)
	}
	if r.n != 5 {
		t.Fatalf("read %d bytes of an oversize frame, want its 5-byte header only", r.n)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestTruncatedFrameIsUnexpectedEOF(t *testing.T) {
	var buf bytes.Buffer
	WriteFrame(&buf, FrameData, []byte("hello"))
	whole := buf.Bytes()
	for _, cut := range []int{1, 4, 5, 9} {
		if _, _, err := ReadFrame(bytes.NewReader(whole[:cut])); err != io.ErrUnexpectedEOF {
			t.Errorf("frame cut at %d bytes: %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
}

func TestTarNameRefusesNamesOutsideTheDirectory(t *testing.T) {
	for n, want := range map[string]string{"a/b": "a/b", "./a//b/": "a/b", ".": ".", "a/../b": "b",
		"/etc/passwd": "", "..": "", "../x": "", "a/../../x": "", "": "", "a\x00b": ""} {
		got, ok := TarName(n)
		if ok != (want != "") || got != want {
			t.Errorf("TarName(%q) = %q, %v; want %q", n, got, ok, want)
		}
	}
}

func TestSpliceHalfCloseStillDeliversTheReply(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // an echo server that answers once the request has ended
		c, err := ln.Accept()
		if err != nil {
			return
		}
		req, _ := io.ReadAll(c)
		c.Write(append([]byte("re:"), req...))
		c.Close()
	}()
	server, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client, inner := tcpPair(t)
	go Splice(inner, server)
	client.Write([]byte("ping"))
	client.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(client)
	if err != nil || string(got) != "re:ping" {
		t.Fatalf("reply %q, %v; want re:ping", got, err)
	}
}

func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}
