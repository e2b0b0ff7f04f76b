package mockd

import (
	"time"

	"ceval.dev/ceval/mockd/fixture"
	"ceval.dev/ceval/mockd/wire"
)

// The wire protocol lives in package mockd/wire, the only code the static client shares with
// the server; these names are the server side's view of it.
const (
	ProtocolVersion  = wire.Version
	MaxRequestBytes  = wire.MaxRequestBytes
	MaxResponseBytes = wire.MaxResponseBytes
	MaxStdinBytes    = wire.MaxStdinBytes

	ContainerDir = wire.ContainerDir
	SocketName   = wire.SocketName
	SocketPath   = wire.SocketPath

	ExitNoMatch     = wire.ExitNoMatch
	ExitUnavailable = wire.ExitUnavailable
	ExitBudget      = wire.ExitBudget
	ExitUnknownTool = wire.ExitUnknownTool

	// DefaultClientTimeout bounds one call from the client's side.
	DefaultClientTimeout = wire.DefaultTimeout
)

// Request is what the client sends; Response what the server answers.
type (
	Request  = wire.Request
	Response = wire.Response
)

// The frame and body codecs, shared with the client.
var (
	WriteFrame     = wire.WriteFrame
	ReadFrame      = wire.ReadFrame
	EncodeRequest  = wire.EncodeRequest
	DecodeRequest  = wire.DecodeRequest
	DecodeResponse = wire.DecodeResponse
)

// Do makes one call the way the client does (wire.Do).
func Do(socket string, req Request, timeout time.Duration) (Response, error) {
	return wire.Do(socket, req, timeout)
}

func encodeResponse(r fixture.Reply) ([]byte, error) { return wire.EncodeResponse(Response(r)) }
