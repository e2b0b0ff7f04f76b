package wire

import (
	"bytes"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRequestAndResponseRoundTripAndEveryTruncationIsRefused(t *testing.T) {
	req := Request{Tool: "gh", Argv: []string{"pr", "", "list\x00"}, Cwd: "/workspace", Stdin: []byte{0, 1, 2}, StdinTruncated: true}
	body, err := EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRequest(body)
	if err != nil || got.Tool != req.Tool || got.Cwd != req.Cwd || strings.Join(got.Argv, "|") != "pr||list\x00" ||
		!bytes.Equal(got.Stdin, req.Stdin) || !got.StdinTruncated {
		t.Fatalf("request round trip: %+v %v", got, err)
	}
	for i := range body {
		if _, err := DecodeRequest(body[:i]); err == nil {
			t.Errorf("request truncated to %d of %d bytes accepted", i, len(body))
		}
	}
	resp := Response{ExitCode: 255, Stdout: "out\n", Stderr: "err"}
	rb, err := EncodeResponse(resp)
	if err != nil || len(rb) != ResponseSize(resp) {
		t.Fatalf("encode response: %d bytes, %v", len(rb), err)
	}
	if r, err := DecodeResponse(rb); err != nil || r != resp {
		t.Fatalf("response round trip: %+v %v", r, err)
	}
	for i := range rb {
		if _, err := DecodeResponse(rb[:i]); err == nil {
			t.Errorf("response truncated to %d of %d bytes accepted", i, len(rb))
		}
	}
	if _, err := DecodeResponse(append(rb, 0)); err == nil {
		t.Error("response with a trailing byte accepted")
	}
	rb[0] = Version + 1
	if _, err := DecodeResponse(rb); err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("response of another version: %v", err)
	}
}

func TestLimits(t *testing.T) {
	if _, err := EncodeRequest(Request{Tool: "gh", Stdin: make([]byte, MaxRequestBytes)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("request over the limit: %v", err)
	}
	if _, err := DecodeRequest(make([]byte, MaxRequestBytes+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("decoded a body over the limit: %v", err)
	}
	if _, err := EncodeResponse(Response{Stdout: strings.Repeat("x", MaxResponseBytes)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("response over the limit: %v", err)
	}
	if _, err := EncodeResponse(Response{ExitCode: 256}); err == nil {
		t.Error("exit code 256 encoded")
	}
	var hdr bytes.Buffer
	hdr.Write([]byte{0, 0x10, 0, 1})
	if _, err := ReadFrame(&hdr, MaxRequestBytes); !errors.Is(err, ErrTooLarge) {
		t.Errorf("frame header over the limit: %v", err)
	}
}

// Do holds its deadline with socket timeouts: a server that accepts and never answers, or
// answers half a frame, costs the client the timeout and no more.
func TestDoTimesOutOnASilentServer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var half atomic.Bool
	go func() {
		var held []net.Conn // never answered, closed with the listener's test
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			if half.Load() {
				c.Write([]byte{0, 0, 0, 9, Version})
			}
			held = append(held, c)
		}
	}()
	for _, h := range []bool{false, true} {
		half.Store(h)
		start := time.Now()
		_, err := Do(sock, Request{Tool: "gh"}, 200*time.Millisecond)
		took := time.Since(start)
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("half=%v: %v, want a timeout", h, err)
		}
		if took < 150*time.Millisecond || took > 2*time.Second {
			t.Errorf("half=%v: gave up after %s, timeout 200ms", h, took)
		}
	}
	if _, err := Do(filepath.Join(t.TempDir(), "absent.sock"), Request{Tool: "gh"}, time.Second); err == nil || !strings.Contains(err.Error(), "connect") {
		t.Errorf("absent socket: %v", err)
	}
}
