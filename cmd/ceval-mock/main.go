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

// Waits for piped stdin: for its first byte, then between reads, when no process outside
// the client's own ancestry holds the pipe's write end (the pipe is the caller's own stdin,
// such as an agent harness's never-closed pipe, which may never carry a byte).
const (
	firstByteWait = 250 * time.Millisecond
	nextReadWait  = 2 * time.Second
)

// readStdin reads up to wire.MaxStdinBytes of stdin when it is a file, a pipe or a socket,
// and reports whether there was more. A terminal is never read. A pipe is read like any
// tool reads it, to its end, for as long as a producer holds its write end: a process that
// is not the client or one of its ancestors (`printf ... | gh`, however slow the host is to
// run printf). A pipe only the caller's ancestry can write (a harness's stdin passed down,
// open and silent) is given up on after a short wait, so a tool called without input never
// hangs (select(2) before each read: the descriptor, shared with the caller, stays blocking).
func readStdin() ([]byte, bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(0, &st); err != nil {
		return nil, false
	}
	limit := wire.MaxStdinBytes
	waits := false // false: a regular file, read without waiting
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
	case syscall.S_IFIFO, syscall.S_IFSOCK:
		waits = true
	default:
		return nil, false
	}
	wait := firstByteWait
	var data []byte
	buf := make([]byte, 8192)
	for len(data) <= limit {
		if waits && !awaitInput(st, wait) {
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
		wait = nextReadWait
	}
	if len(data) > limit {
		return data[:limit], true
	}
	return data, false
}

// awaitInput waits for descriptor 0 to have data or its end: up to wait while no producer
// holds the pipe's write end, and as long as one does.
func awaitInput(st syscall.Stat_t, wait time.Duration) bool {
	for {
		if stdinReadable(wait) {
			return true
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFIFO || !producerHolds(st.Ino) {
			return false
		}
	}
}

// producerHolds reports whether a process other than this one and its ancestors holds the
// pipe ino open for writing, from /proc (the container's own PID namespace; processes of
// the agent's UID are readable, others are not and count as no producer).
func producerHolds(ino uint64) bool {
	ancestors := map[string]bool{}
	for pid := "self"; pid != "" && pid != "0" && !ancestors[pid]; pid = parentOf(pid) {
		ancestors[pid] = true
	}
	self, _ := os.Readlink("/proc/self")
	ancestors[self] = true
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	link := "pipe:[" + utoa(ino) + "]"
	for _, p := range procs {
		pid := p.Name()
		if pid == "" || pid[0] < '0' || pid[0] > '9' || ancestors[pid] {
			continue
		}
		fds, err := os.ReadDir("/proc/" + pid + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink("/proc/" + pid + "/fd/" + fd.Name()); err == nil && l == link &&
				writable("/proc/"+pid+"/fdinfo/"+fd.Name()) {
				return true
			}
		}
	}
	return false
}

// parentOf returns the parent PID from /proc/PID/stat ("PID (COMM) STATE PPID ..."; COMM
// may hold spaces and parentheses, so the fields start after the last ')').
func parentOf(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	f := 0
	start := -1
	for j := i + 1; j < len(b); j++ {
		if b[j] == ' ' {
			if start >= 0 {
				if f == 1 {
					return string(b[start:j])
				}
				f++
				start = -1
			}
			continue
		}
		if start < 0 {
			start = j
		}
	}
	return ""
}

// writable reports whether an fdinfo file's flags (octal) open the descriptor for writing
// (O_WRONLY or O_RDWR).
func writable(fdinfo string) bool {
	b, err := os.ReadFile(fdinfo)
	if err != nil {
		return false
	}
	const key = "flags:"
	for i := 0; i+len(key) <= len(b); i++ {
		if (i == 0 || b[i-1] == '\n') && string(b[i:i+len(key)]) == key {
			j := i + len(key)
			for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
				j++
			}
			var flags uint64
			for ; j < len(b) && b[j] >= '0' && b[j] <= '7'; j++ {
				flags = flags*8 + uint64(b[j]-'0')
			}
			return flags&syscall.O_ACCMODE != syscall.O_RDONLY
		}
	}
	return false
}

func utoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
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
