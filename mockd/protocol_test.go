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
	if err != nil || req.Tool != "gh" || string(req.Stdin) != "x" || req.V != ProtocolVersion {
		t.Fatalf("decoded %+v %v", req, err)
	}
	buf.Reset()
	WriteFrame(&buf, make([]byte, 100))
	if _, err := ReadFrame(&buf, 99); err == nil {
		t.Error("read a frame over the limit")
	}
}

func FuzzDecodeRequest(f *testing.F) {
	ok, _ := EncodeRequest(Request{Tool: "gh", Argv: []string{"a"}, Stdin: []byte{0, 1}})
	f.Add(append([]byte{0, 0, 0, byte(len(ok))}, ok...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
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
		if req.V != ProtocolVersion || req.Tool == "" {
			t.Fatalf("accepted %+v", req)
		}
		if _, err := EncodeRequest(req); err != nil && len(body) <= MaxRequestBytes/2 {
			t.Fatalf("re-encode a small accepted request: %v", err)
		}
	})
}
