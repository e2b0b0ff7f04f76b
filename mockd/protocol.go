package mockd

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Wire protocol: each side sends one frame, a 4-byte big-endian length then that many bytes
// of JSON whose "v" is ProtocolVersion. One request and one response per connection.
const (
	ProtocolVersion  = 1
	MaxRequestBytes  = 64 << 10 // argv, cwd and stdin together
	MaxResponseBytes = 1 << 20
	// MaxStdinBytes is what the client sends of its stdin, leaving room for argv and cwd.
	MaxStdinBytes = 32 << 10
)

// SocketPath is where the client finds the server inside the container; ContainerDir is the
// directory mounted read-only there.
const (
	ContainerDir = "/run/ceval"
	SocketName   = "mock.sock"
	SocketPath   = ContainerDir + "/" + SocketName
)

// Exit codes the client uses beyond a fixture's own.
const (
	ExitNoMatch     = 2   // no rule matched and the fixture has no default
	ExitUnavailable = 69  // the server could not be reached or answered with a protocol error
	ExitBudget      = 75  // the tool's max_requests is spent
	ExitUnknownTool = 127 // no fixture for this tool
)

// Request is what the client sends.
type Request struct {
	V              int      `json:"v"`
	Tool           string   `json:"tool"`
	Argv           []string `json:"argv"` // the arguments after the tool's name
	Cwd            string   `json:"cwd"`
	Stdin          []byte   `json:"stdin,omitempty"`
	StdinTruncated bool     `json:"stdin_truncated,omitempty"`
}

// Response is what the server answers: a reply to print and exit with.
type Response struct {
	V int `json:"v"`
	Reply
}

var errFrameTooLarge = errors.New("frame too large")

// WriteFrame writes one length-prefixed frame.
func WriteFrame(w io.Writer, body []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	if _, err := w.Write(append(hdr[:], body...)); err != nil {
		return err
	}
	return nil
}

// ReadFrame reads one length-prefixed frame of at most limit bytes; a larger announced length
// is refused before anything past the header is read.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("read frame header: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errFrameTooLarge, n, limit)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("read frame body: %w", err)
	}
	return body, nil
}

// EncodeRequest validates and encodes a request body.
func EncodeRequest(req Request) ([]byte, error) {
	req.V = ProtocolVersion
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxRequestBytes {
		return nil, fmt.Errorf("request of %d bytes is over the %d-byte limit", len(b), MaxRequestBytes)
	}
	return b, nil
}

// DecodeRequest parses and checks a request body: the version, a tool name, and no unknown
// fields.
func DecodeRequest(body []byte) (Request, error) {
	var req Request
	if len(body) > MaxRequestBytes {
		return req, errFrameTooLarge
	}
	if err := strictJSON(body, &req); err != nil {
		return req, fmt.Errorf("malformed request: %w", err)
	}
	if req.V != ProtocolVersion {
		return req, fmt.Errorf("protocol version %d: this server speaks %d", req.V, ProtocolVersion)
	}
	if req.Tool == "" {
		return req, errors.New("request names no tool")
	}
	return req, nil
}

func encodeResponse(r Response) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxResponseBytes {
		return nil, fmt.Errorf("response of %d bytes is over the %d-byte limit", len(b), MaxResponseBytes)
	}
	return b, nil
}

// DecodeResponse parses and checks a response body.
func DecodeResponse(body []byte) (Response, error) {
	var r Response
	if err := strictJSON(body, &r); err != nil {
		return r, fmt.Errorf("malformed response: %w", err)
	}
	if r.V != ProtocolVersion {
		return r, fmt.Errorf("protocol version %d: this client speaks %d", r.V, ProtocolVersion)
	}
	return r, nil
}

func strictJSON(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
