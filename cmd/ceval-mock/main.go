package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"ceval.dev/ceval/mockd"
)

// selfName is the name under which the first argument names the tool.
const selfName = "ceval-mock"

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	tool := filepath.Base(args[0])
	rest := args[1:]
	if tool == selfName {
		if len(rest) == 0 {
			fmt.Fprintln(stderr, "usage: ceval-mock TOOL [ARG...] (or call it under the tool's name)")
			return 2
		}
		tool, rest = rest[0], rest[1:]
	}
	socket := mockd.SocketPath
	if s := os.Getenv("CEVAL_MOCK_SOCKET"); s != "" {
		socket = s
	}
	stdin, truncated := readStdin()
	cwd, _ := os.Getwd()
	resp, err := mockd.Do(socket, mockd.Request{Tool: tool, Argv: rest, Cwd: cwd, Stdin: stdin, StdinTruncated: truncated}, mockd.DefaultClientTimeout)
	if err != nil {
		fmt.Fprintf(stderr, "%s: ceval mock unavailable: %v\n", tool, err)
		return mockd.ExitUnavailable
	}
	io.WriteString(stdout, resp.Stdout)
	io.WriteString(stderr, resp.Stderr)
	return resp.ExitCode
}

// readStdin reads up to mockd.MaxStdinBytes of stdin when it is a file, a pipe or a socket,
// and reports whether there was more. A terminal is never read, and a pipe that stays open
// and silent is given up on after a short wait, so a tool called without input never hangs.
func readStdin() ([]byte, bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(0, &st); err != nil {
		return nil, false
	}
	limit := int64(mockd.MaxStdinBytes)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		data, _ := io.ReadAll(io.LimitReader(os.Stdin, limit+1))
		return cut(data, limit)
	case syscall.S_IFIFO, syscall.S_IFSOCK:
	default:
		return nil, false
	}
	if err := syscall.SetNonblock(0, true); err != nil {
		return nil, false
	}
	defer syscall.SetNonblock(0, false) // the descriptor is shared with the caller
	f := os.NewFile(0, "stdin")
	pollableStdin = f // reachable until exit: its finalizer would close descriptor 0
	var data []byte
	buf := make([]byte, 8192)
	wait := 250 * time.Millisecond // for the first byte; then per read
	for int64(len(data)) <= limit {
		if f.SetReadDeadline(time.Now().Add(wait)) != nil {
			break
		}
		n, err := f.Read(buf)
		data = append(data, buf[:n]...)
		if err != nil { // EOF, the deadline, or anything else: send what arrived
			break
		}
		wait = 2 * time.Second
	}
	return cut(data, limit)
}

var pollableStdin *os.File

func cut(data []byte, limit int64) ([]byte, bool) {
	if int64(len(data)) > limit {
		return data[:limit], true
	}
	return data, false
}
