// Package kubeproto is the wire protocol between ceval (the controller) and its init inside a
// Pod (cmd/ceval-init --control): typed, length-prefixed frames over one control connection,
// the JSON messages they carry, and the splice both ends use for relayed connections. It is a
// leaf (standard library only) so the static init can import it; it holds no policy.
package kubeproto

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// ControlPort is the port the init listens on, on the Pod's 127.0.0.1.
const ControlPort = 7170

// MaxFrame caps a frame's payload; a bigger frame is a protocol error and nothing of it is read.
const MaxFrame = 1 << 20

// Frame types; C is the controller, I the init.
const (
	FrameStart   byte = 'S' // C->I: JSON Start, the first frame of the control connection
	FrameAttest  byte = 'A' // I->C: JSON Attest, the reply to Start, before anything runs
	FrameCopyIn  byte = 'I' // C->I: JSON Dir; then FrameData (a tar stream) and FrameEnd
	FrameData    byte = 'D' // both: raw bytes of the current stream
	FrameEnd     byte = 'E' // both: empty, ends the current stream
	FrameOK      byte = 'K' // I->C: empty, the last request succeeded
	FrameError   byte = 'X' // I->C: UTF-8 message, the last request failed
	FrameGo      byte = 'G' // C->I: empty, start the agent
	FrameStdout  byte = 'O' // I->C: the agent's stdout bytes
	FrameStderr  byte = 'R' // I->C: the agent's stderr bytes
	FrameOpen    byte = 'N' // I->C: JSON Open, the agent connected to a relay listener
	FrameKill    byte = 'Z' // C->I: JSON Kill: SIGTERM everything, grace, SIGKILL
	FrameExit    byte = 'Q' // I->C: JSON Exit, once everything is dead and reaped
	FrameCopyOut byte = 'T' // C->I: JSON Dir; the init answers FrameData... FrameEnd (tar) or FrameError
	FrameQuit    byte = 'B' // C->I: empty, the init exits 0
)

// Kill reasons.
const (
	KillTimeout   = "timeout"
	KillStop      = "stop"
	KillInterrupt = "interrupt"
)

// NonceLen is the length of a relay nonce on the wire: 32 random bytes in lowercase hex. A
// relayed connection to the control port starts with the nonce and a newline.
const NonceLen = 64

// Start is the run's start parameters, the payload of FrameStart.
type Start struct {
	Argv     []string      // the agent's command
	Env      []string      // KEY=VALUE, the agent's whole environment
	Dir      string        // its working directory
	Timeout  time.Duration // the agent's deadline counted by the init from Go (0: none)
	Grace    time.Duration // between SIGTERM and SIGKILL
	Relays   []Relay       // listeners the init opens for the agent on Go
	Probes   []string      // host:port addresses that must NOT accept a TCP connection
	RlimitAS uint64        // the agent's RLIMIT_AS in bytes; 0: none
	// FileSizeLimit is the RLIMIT_FSIZE (bytes) the init sets on itself at Go, for the
	// agent to inherit: the kubelet bind-mounts a world-writable node file at
	// /dev/termination-log that no volume limit covers. 0: none.
	FileSizeLimit uint64
}

// Relay is one listener the init opens for the agent; each connection to it is relayed to
// the controller's service of that Name.
type Relay struct {
	Name    string // "gateway", "mocks"
	Network string // "tcp" or "unix"
	Address string // "127.0.0.1:80", "/run/ceval/mock.sock"
}

// Attest is what the init reports of its own isolation before anything runs.
type Attest struct {
	// Files holds raw contents: "status", "uid_map", "gid_map", "limits", "cgroup" and
	// "net/dev" from /proc/self, and cgroup files as found under key "cgroup:<path>".
	Files      map[string]string
	Interfaces []string // as net.Interfaces reports them: name, flags, addresses
	Probes     []Probe
	PID        int // the init's pid in its PID namespace (1 in a Pod)
	// Exe is the sha256 (hex) of the init's own executable (/proc/self/exe): the controller
	// checks it against its own ceval-init, which a node holding other content under the init
	// image's pinned name would not run. "" when it could not be read.
	Exe string
}

// Probe is one probe's outcome: Err "" means the connection SUCCEEDED (a breach).
type Probe struct {
	Addr string
	Err  string
}

// Dir is the payload of FrameCopyIn and FrameCopyOut.
type Dir struct {
	Dir string `json:"dir"`
	// Limits bound a CopyOut stream at its source (nil: unbounded, as for CopyIn).
	Limits *CopyLimits `json:"limits,omitempty"`
}

// CopyLimits are the snapshot caps the init applies while it writes a CopyOut stream: a
// file over MaxFileBytes, or over what MaxTotalBytes leaves, is sent as a header without
// data (PAXOmitted "size"); the stream ends after the entry that goes past MaxEntries or
// MaxPathBytes (that entry is sent without data, so the reader sees the cap reached); below
// a directory MaxDepth deep only its first name is sent, without data (so the reader sees
// that it is not empty), and the entries counted are those MaxDepth deep at most.
type CopyLimits struct {
	MaxFileBytes  int64 `json:"max_file_bytes"`
	MaxTotalBytes int64 `json:"max_total_bytes"`
	MaxEntries    int   `json:"max_entries"`
	MaxDepth      int   `json:"max_depth"`
	MaxPathBytes  int64 `json:"max_path_bytes"`
}

// The PAX records and type of a CopyOut entry whose data the init does not send; the
// controller records such an entry as the local snapshot records the same one.
const (
	// PAXOmitted says why: OmittedDenied (the init may not open it) or OmittedSize (a cap).
	PAXOmitted = "CEVAL.omitted"
	// PAXSize is the entry's real size (its header's Size is 0: no data follows).
	PAXSize = "CEVAL.size"
	// PAXUnfinished, on the entry one past a cap (the stream's last), has one byte per
	// directory on its way, the root first: '1' when that directory has names after it
	// (its listing is cut), '0' when not.
	PAXUnfinished = "CEVAL.unfinished"

	OmittedDenied = "denied"
	OmittedSize   = "size"

	// TarTypeSocket marks a socket, for which tar has no type.
	TarTypeSocket byte = 's'
)

// Open is the payload of FrameOpen.
type Open struct {
	Relay string `json:"relay"`
	Nonce string `json:"nonce"`
}

// KillRequest is the payload of FrameKill.
type KillRequest struct {
	Reason string `json:"reason"`
}

// ExitOrphaned is the init's exit code when its control connection (in a Pod) or its
// supervisor FIFO (locally) was lost: the controller's side went away, not the agent's.
const ExitOrphaned = 123

// Exit is how the agent's run ended, sent once everything is dead and reaped.
type Exit struct {
	Code      int           // the agent's exit code (128+sig when killed), or the init's own
	TimedOut  bool          // killed for Start.Timeout or a Kill("timeout")
	Killed    string        // the Kill reason, "" when the agent ended by itself
	Duration  time.Duration // Go to the agent's exit
	Reap      time.Duration // the agent's exit to everything reaped
	Remaining int           // processes alive after the kill (must be 0); unknown counts as 1
	OutputCut bool          // reserved for the controller (the init never caps)
	// OOMKills and MemoryPeak are the container's memory cgroup's counts after the kill
	// (oom_kill of memory.events or memory.oom_control; memory.peak or
	// memory.max_usage_in_bytes), 0 when the init could not read them.
	OOMKills   int64
	MemoryPeak int64
}

// ErrFrameTooLarge is a frame header announcing a payload over MaxFrame.
var ErrFrameTooLarge = errors.New("kubeproto: frame payload over MaxFrame")

// WriteFrame writes one frame in a single Write: type, big-endian payload length, payload.
func WriteFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > MaxFrame {
		return fmt.Errorf("%w: %d bytes in a %q frame", ErrFrameTooLarge, len(payload), typ)
	}
	buf := make([]byte, 5+len(payload))
	buf[0] = typ
	binary.BigEndian.PutUint32(buf[1:5], uint32(len(payload)))
	copy(buf[5:], payload)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame. A header over MaxFrame is ErrFrameTooLarge with nothing of the
// payload read; a stream that ends inside a frame is io.ErrUnexpectedEOF; io.EOF only
// between frames.
func ReadFrame(r io.Reader) (typ byte, payload []byte, err error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:5])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: %d bytes announced in a %q frame", ErrFrameTooLarge, n, h[0])
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], payload, nil
}

// WriteJSON writes v as the JSON payload of one frame.
func WriteJSON(w io.Writer, typ byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("kubeproto: encode %q frame: %w", typ, err)
	}
	return WriteFrame(w, typ, b)
}

// DecodeJSON decodes a frame's JSON payload into v, refusing unknown fields.
func DecodeJSON(typ byte, payload []byte, v any) error {
	d := json.NewDecoder(bytesReader(payload))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("kubeproto: decode %q frame: %w", typ, err)
	}
	return nil
}
