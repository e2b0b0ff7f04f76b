package main

import (
	"os"
	"syscall"
	"time"

	"ceval.dev/ceval/mockd/wire"
)

// selfName is the name under which the first argument names the tool.
const selfName = "ceval-mock"

// The client runs once per mocked call, so its start-up is the call's cost: it imports only
// package wire (raw system calls, no network poller, no fmt, reflection or JSON) and os,
// which every Go program starts with.
func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	if len(args) == 0 { // execve with an empty argv: no name to take the tool from
		args = []string{selfName}
	}
	tool := base(args[0])
	rest := args[1:]
	if tool == selfName {
		if len(rest) == 0 {
			write(2, "usage: ceval-mock TOOL [ARG...] (or call it under the tool's name)\n")
			return 2
		}
		tool, rest = rest[0], rest[1:]
	}
	socket := wire.SocketPath
	if s, ok := syscall.Getenv("CEVAL_MOCK_SOCKET"); ok && s != "" {
		socket = s
	}
	stdin, truncated := readStdin()
	cwd, _ := syscall.Getwd()
	resp, err := wire.Do(socket, wire.Request{Tool: tool, Argv: rest, Cwd: cwd, Stdin: stdin, StdinTruncated: truncated}, wire.DefaultTimeout)
	if err != nil {
		write(2, tool+": ceval mock unavailable: "+err.Error()+"\n")
		return wire.ExitUnavailable
	}
	write(1, resp.Stdout)
	write(2, resp.Stderr)
	return resp.ExitCode
}

func base(p string) string {
	for len(p) > 1 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' && i < len(p)-1 {
			return p[i+1:]
		}
	}
	return p
}

// write writes all of s to fd, retrying interrupted and short writes; errors (a closed pipe)
// are dropped like a shell tool's would be.
func write(fd int, s string) {
	b := []byte(s)
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		b = b[n:]
	}
}

// Waits for piped stdin: for its first byte, then between reads.
const (
	firstByteWait = 250 * time.Millisecond
	nextReadWait  = 2 * time.Second
)

// readStdin reads up to wire.MaxStdinBytes of stdin when it is a file, a pipe or a socket,
// and reports whether there was more. A terminal is never read, and a pipe that stays open
// and silent is given up on after a short wait (select(2) before each read: the descriptor,
// shared with the caller, stays blocking), so a tool called without input never hangs.
func readStdin() ([]byte, bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(0, &st); err != nil {
		return nil, false
	}
	limit := wire.MaxStdinBytes
	var wait time.Duration // 0: a regular file, read without waiting
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
	case syscall.S_IFIFO, syscall.S_IFSOCK:
		wait = firstByteWait
	default:
		return nil, false
	}
	var data []byte
	buf := make([]byte, 8192)
	for len(data) <= limit {
		if wait > 0 && !stdinReadable(wait) {
			break
		}
		n, err := syscall.Read(0, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n <= 0 { // EOF or anything else: send what arrived
			break
		}
		data = append(data, buf[:n]...)
		if wait > 0 {
			wait = nextReadWait
		}
	}
	if len(data) > limit {
		return data[:limit], true
	}
	return data, false
}

// stdinReadable waits up to d for descriptor 0 to have data or its end.
func stdinReadable(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		var set syscall.FdSet
		set.Bits[0] |= 1 // descriptor 0
		tv := syscall.NsecToTimeval(time.Until(deadline).Nanoseconds())
		if tv.Sec < 0 || (tv.Sec == 0 && tv.Usec <= 0) {
			return false
		}
		n, err := syscall.Select(1, &set, nil, nil, &tv)
		if err == syscall.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}
