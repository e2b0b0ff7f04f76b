package mockd

import (
	"bytes"
	"testing"
)

func TestFrameRoundTripAndLimits(t *testing.T) {
	body, err := EncodeRequest(Request{Tool: "gh", Argv: []string{"pr", "list"}, Cwd: "/w", Stdin: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	WriteFrame(&buf, body)
	got, err := ReadFrame(&buf, MaxRequestBytes)
	if err != nil {
		t.Fatal(err)
	}
	req, err := DecodeRequest(got)
	if err != nil || req.Tool != "gh" || string(req.Stdin) != "x" || len(req.Argv) != 2 || req.Cwd != "/w" {
		t.Fatalf("decoded %+v %v", req, err)
	}
	buf.Reset()
	WriteFrame(&buf, make([]byte, 100))
	if _, err := ReadFrame(&buf, 99); err == nil {
		t.Error("read a frame over the limit")
	}
}

// FuzzDecodeRequest feeds the server's read path (frame, then body) arbitrary bytes: it must
// never accept more than the limit, never panic, and what it accepts must encode back to
// the very body it came from (the encoding is canonical: no two bodies mean one request).
func FuzzDecodeRequest(f *testing.F) {
	ok, _ := EncodeRequest(Request{Tool: "gh", Argv: []string{"a"}, Stdin: []byte{0, 1}, StdinTruncated: true})
	f.Add(append([]byte{0, 0, 0, byte(len(ok))}, ok...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0, 0, 0, 14, ProtocolVersion, 0, 0, 0, 0, 1, 'x', 0, 0, 0, 0, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		body, err := ReadFrame(bytes.NewReader(data), MaxRequestBytes)
		if err != nil {
			return
		}
		if len(body) > MaxRequestBytes {
			t.Fatalf("frame of %d bytes over the limit", len(body))
		}
		req, err := DecodeRequest(body)
		if err != nil {
			return
		}
		if req.Tool == "" {
			t.Fatalf("accepted %+v", req)
		}
		again, err := EncodeRequest(req)
		if err != nil {
			t.Fatalf("re-encode an accepted request: %v", err)
		}
		if !bytes.Equal(again, body) {
			t.Fatalf("accepted body %x re-encodes as %x", body, again)
		}
	})
}
