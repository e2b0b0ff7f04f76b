package wire

import (
	"errors"
	"io"
	"syscall"
	"time"
)

// DefaultTimeout bounds one call from the client's side.
const DefaultTimeout = 30 * time.Second

// ErrTimeout is returned (wrapped) when a call's deadline passes.
var ErrTimeout = errors.New("timed out")

// Do sends req to the server listening on the Unix socket at path and returns its response,
// all within timeout. It works on one blocking socket through raw system calls, the
// deadline held by the socket's send and receive timeouts (SO_SNDTIMEO bounds connect and
// write, SO_RCVTIMEO each read), so the Go runtime's network poller is never started: that,
// and staying out of package net, is a good part of the client's start-up time.
func Do(path string, req Request, timeout time.Duration) (Response, error) {
	body, err := EncodeRequest(req)
	if err != nil {
		return Response{}, err
	}
	deadline := time.Now().Add(timeout)
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return Response{}, &opError{"socket", err}
	}
	defer syscall.Close(fd)
	if err := connect(fd, path, deadline); err != nil {
		return Response{}, &opError{"connect to the mock server", err}
	}
	if err := writeAll(fd, AppendFrame(make([]byte, 0, 4+len(body)), body), deadline); err != nil {
		return Response{}, &opError{"send request", err}
	}
	rb, err := ReadFrame(&conn{fd: fd, deadline: deadline}, MaxResponseBytes)
	if err != nil {
		return Response{}, &opError{"read response (refused or cut off)", err}
	}
	return DecodeResponse(rb)
}

// opError says which step of a call failed.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// setTimeout sets the socket option opt (SO_SNDTIMEO or SO_RCVTIMEO) to what is left until
// deadline; ErrTimeout when nothing is (a zero timeval would mean no timeout at all).
func setTimeout(fd, opt int, deadline time.Time) error {
	left := time.Until(deadline)
	if left <= 0 {
		return ErrTimeout
	}
	tv := syscall.NsecToTimeval(max(left.Nanoseconds(), int64(time.Microsecond)))
	return syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, opt, &tv)
}

func timeoutErr(err error) error {
	if err == syscall.EAGAIN || err == syscall.EINPROGRESS {
		return ErrTimeout
	}
	return err
}

func connect(fd int, path string, deadline time.Time) error {
	if err := setTimeout(fd, syscall.SO_SNDTIMEO, deadline); err != nil {
		return err
	}
	for {
		err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		switch err {
		case nil, syscall.EISCONN:
			return nil
		case syscall.EINTR:
			if time.Now().After(deadline) {
				return ErrTimeout
			}
			continue
		}
		return timeoutErr(err)
	}
}

func writeAll(fd int, b []byte, deadline time.Time) error {
	if err := setTimeout(fd, syscall.SO_SNDTIMEO, deadline); err != nil {
		return err
	}
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			if err := setTimeout(fd, syscall.SO_SNDTIMEO, deadline); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return timeoutErr(err)
		}
		b = b[n:]
	}
	return nil
}

// conn reads a blocking socket until a deadline.
type conn struct {
	fd       int
	deadline time.Time
}

func (c *conn) Read(p []byte) (int, error) {
	for {
		// Each read (a response can take several, and a signal interrupts one) may wait
		// only for what is left of the call's time.
		if err := setTimeout(c.fd, syscall.SO_RCVTIMEO, c.deadline); err != nil {
			return 0, err
		}
		n, err := syscall.Read(c.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, timeoutErr(err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
