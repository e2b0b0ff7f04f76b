package mockd

import (
	"fmt"
	"net"
	"time"
)

// DefaultClientTimeout bounds one call from the client's side.
const DefaultClientTimeout = 30 * time.Second

// Do sends one request to the server at socket and returns its response.
func Do(socket string, req Request, timeout time.Duration) (Response, error) {
	body, err := EncodeRequest(req)
	if err != nil {
		return Response{}, err
	}
	conn, err := net.DialTimeout("unix", socket, timeout)
	if err != nil {
		return Response{}, fmt.Errorf("connect to the mock server: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if err := WriteFrame(conn, body); err != nil {
		return Response{}, fmt.Errorf("send request: %w", err)
	}
	rb, err := ReadFrame(conn, MaxResponseBytes)
	if err != nil {
		return Response{}, fmt.Errorf("read response (refused or cut off): %w", err)
	}
	return DecodeResponse(rb)
}
