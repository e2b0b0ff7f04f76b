// Package wire is the protected mocks' wire protocol, the one piece of code the host's server
// (package mockd) and the static client in the container (cmd/ceval-mock) share: where the
// socket is, the limits, the exit codes, the frame and the binary encoding of a request and a
// response, and the client's call over raw syscalls. It imports only what a Go binary starts
// with anyway (no fmt, reflect, encoding/json or package net), so the client, which runs once
// per mocked tool call, starts about as fast as any static Go program.
//
// A connection carries one request and one response, each a frame: a 4-byte big-endian
// length then that many bytes of body. A body starts with the protocol version (one byte)
// and has no trailing bytes; strings and byte strings are a 4-byte big-endian length then the
// bytes.
//
//	request:  version, flags (bit 0: stdin truncated; the others must be 0),
//	          tool, cwd, argc (4 bytes), argc × arg, stdin
//	response: version, exit code (one byte), stdout, stderr
package wire

import (
	"errors"
	"io"
	"strconv"
)

// Version is the protocol version; a body of any other version is refused. Version 1 was
// JSON (its bodies start with '{', read here as version 123).
const Version = 2

// Limits, in bytes.
const (
	MaxRequestBytes  = 64 << 10 // a request body: argv, cwd and stdin together
	MaxResponseBytes = 1 << 20  // a response body
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
	Tool           string
	Argv           []string // the arguments after the tool's name
	Cwd            string
	Stdin          []byte
	StdinTruncated bool
}

// Response is what the server answers: what the client prints and exits with.
type Response struct {
	ExitCode int // 0..255
	Stdout   string
	Stderr   string
}

const flagStdinTruncated = 1

// ErrTooLarge is wrapped by the errors about a frame or body over its limit.
var ErrTooLarge = errors.New("frame too large")

type tooLarge struct {
	what     string
	n, limit int
}

func (e *tooLarge) Error() string {
	return e.what + " too large: " + strconv.Itoa(e.n) + " bytes, limit " + strconv.Itoa(e.limit)
}

func (e *tooLarge) Unwrap() error { return ErrTooLarge }

// AppendFrame appends body as one frame to dst.
func AppendFrame(dst, body []byte) []byte {
	dst = be32(dst, len(body))
	return append(dst, body...)
}

// WriteFrame writes body as one frame, in one Write.
func WriteFrame(w io.Writer, body []byte) error {
	_, err := w.Write(AppendFrame(make([]byte, 0, 4+len(body)), body))
	return err
}

// ReadFrame reads one frame of at most limit bytes; a larger announced length is refused
// before anything past the header is read.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, &opError{"read frame header", err}
	}
	n := int64(hdr[0])<<24 | int64(hdr[1])<<16 | int64(hdr[2])<<8 | int64(hdr[3])
	if n > int64(limit) {
		return nil, &tooLarge{"frame", int(n), limit}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, &opError{"read frame body", err}
	}
	return body, nil
}

// EncodeRequest encodes a request body; it is an error for it to exceed MaxRequestBytes.
func EncodeRequest(req Request) ([]byte, error) {
	n := 2 + 4 + len(req.Tool) + 4 + len(req.Cwd) + 4 + 4 + len(req.Stdin)
	for _, a := range req.Argv {
		n += 4 + len(a)
	}
	if n > MaxRequestBytes {
		return nil, &tooLarge{"request", n, MaxRequestBytes}
	}
	var flags byte
	if req.StdinTruncated {
		flags |= flagStdinTruncated
	}
	b := make([]byte, 0, n)
	b = append(b, Version, flags)
	b = appendString(b, req.Tool)
	b = appendString(b, req.Cwd)
	b = be32(b, len(req.Argv))
	for _, a := range req.Argv {
		b = appendString(b, a)
	}
	b = be32(b, len(req.Stdin))
	b = append(b, req.Stdin...)
	return b, nil
}

// DecodeRequest parses and checks a request body: its size, the version, the flags, a tool
// name, every length against the bytes there are, and no trailing bytes.
func DecodeRequest(body []byte) (Request, error) {
	var req Request
	if len(body) > MaxRequestBytes {
		return req, &tooLarge{"request", len(body), MaxRequestBytes}
	}
	d := decoder{b: body}
	if err := d.version(); err != nil {
		return req, err
	}
	flags := d.byte("flags")
	if d.err == nil && flags&^flagStdinTruncated != 0 {
		return req, errors.New("malformed request: unknown flags " + strconv.Itoa(int(flags)))
	}
	req.StdinTruncated = flags&flagStdinTruncated != 0
	req.Tool = string(d.bytes("tool"))
	req.Cwd = string(d.bytes("cwd"))
	argc := d.u32("argc")
	// Every argument takes at least its 4-byte length: a count the body cannot hold is refused
	// before anything is allocated for it.
	if d.err == nil && argc > uint32(len(d.b)/4) {
		return req, errors.New("malformed request: " + strconv.FormatUint(uint64(argc), 10) + " arguments cannot fit in the body")
	}
	if d.err == nil {
		req.Argv = make([]string, 0, argc)
	}
	for i := uint32(0); i < argc && d.err == nil; i++ {
		req.Argv = append(req.Argv, string(d.bytes("argument")))
	}
	if s := d.bytes("stdin"); len(s) > 0 {
		req.Stdin = append([]byte(nil), s...)
	}
	if err := d.end("request"); err != nil {
		return Request{}, err
	}
	if req.Tool == "" {
		return Request{}, errors.New("malformed request: it names no tool")
	}
	return req, nil
}

// EncodeResponse encodes a response body; it is an error for it to exceed MaxResponseBytes
// or for the exit code to be outside 0..255.
func EncodeResponse(r Response) ([]byte, error) {
	if r.ExitCode < 0 || r.ExitCode > 255 {
		return nil, errors.New("exit code " + strconv.Itoa(r.ExitCode) + " is outside 0..255")
	}
	n := ResponseSize(r)
	if n > MaxResponseBytes {
		return nil, &tooLarge{"response", n, MaxResponseBytes}
	}
	b := make([]byte, 0, n)
	b = append(b, Version, byte(r.ExitCode))
	b = appendString(b, r.Stdout)
	b = appendString(b, r.Stderr)
	return b, nil
}

// ResponseSize is the size of r's encoded body.
func ResponseSize(r Response) int { return 2 + 4 + len(r.Stdout) + 4 + len(r.Stderr) }

// DecodeResponse parses and checks a response body.
func DecodeResponse(body []byte) (Response, error) {
	var r Response
	if len(body) > MaxResponseBytes {
		return r, &tooLarge{"response", len(body), MaxResponseBytes}
	}
	d := decoder{b: body}
	if err := d.version(); err != nil {
		return r, err
	}
	r.ExitCode = int(d.byte("exit code"))
	r.Stdout = string(d.bytes("stdout"))
	r.Stderr = string(d.bytes("stderr"))
	if err := d.end("response"); err != nil {
		return Response{}, err
	}
	return r, nil
}

func be32(b []byte, n int) []byte {
	return append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func appendString(b []byte, s string) []byte {
	b = be32(b, len(s))
	return append(b, s...)
}

// decoder reads a body front to back; the first error sticks and every later read returns
// zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = errors.New("malformed body: truncated at its " + what)
	}
}

func (d *decoder) version() error {
	if len(d.b) == 0 {
		return errors.New("malformed body: empty")
	}
	if v := d.b[0]; v != Version {
		return errors.New("protocol version " + strconv.Itoa(int(v)) + ": this side speaks " + strconv.Itoa(Version) + " (ceval and its mock client are from different builds)")
	}
	d.b = d.b[1:]
	return nil
}

func (d *decoder) byte(what string) byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail(what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) u32(what string) uint32 {
	if d.err != nil || len(d.b) < 4 {
		d.fail(what)
		return 0
	}
	n := uint32(d.b[0])<<24 | uint32(d.b[1])<<16 | uint32(d.b[2])<<8 | uint32(d.b[3])
	d.b = d.b[4:]
	return n
}

func (d *decoder) bytes(what string) []byte {
	n := d.u32(what + " length")
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) end(what string) error {
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return errors.New("malformed " + what + ": " + strconv.Itoa(len(d.b)) + " trailing bytes")
	}
	return nil
}
