package main

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// procEntry is one process as /proc/PID/stat describes it.
type procEntry struct {
	pid, ppid int
	state     byte
}

// readStat parses /proc/PID/stat. The command name may hold spaces and parentheses, so the
// fields are counted from the last ')'.
func readStat(pid int) (procEntry, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procEntry{}, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procEntry{}, false
	}
	fields := bytes.Fields(data[i+1:])
	if len(fields) < 2 || len(fields[0]) != 1 {
		return procEntry{}, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return procEntry{}, false
	}
	return procEntry{pid: pid, ppid: ppid, state: fields[0][0]}, true
}

// descendants lists the live processes whose ancestry leads to root, from a /proc walk.
// The set includes root itself. An error means /proc could not be listed (a process of the
// container may have lowered our RLIMIT_NOFILE): who is alive is then unknown, never "nobody".
func descendants(root int) (map[int]bool, []procEntry, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, nil, err
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return nil, nil, err
	}
	children := make(map[int][]procEntry)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if e, ok := readStat(pid); ok {
			children[e.ppid] = append(children[e.ppid], e)
		}
	}
	tree := map[int]bool{root: true}
	var out []procEntry
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if tree[c.pid] {
				continue
			}
			tree[c.pid] = true
			queue = append(queue, c.pid)
			if c.state != 'Z' && c.state != 'X' {
				out = append(out, c)
			}
		}
	}
	return tree, out, nil
}

// killDescendants sends sig to every live descendant of root but the pids in except. A pid found in /proc may be reaped and reused before it is
// signalled, so each one is pinned with a pidfd and its parent re-checked while pinned: the
// signal then reaches that same process or nobody.
func killDescendants(root int, sig syscall.Signal, except ...int) {
	tree, procs, _ := descendants(root) // unreadable: nobody to signal by pid (see killOthers)
	for _, p := range procs {
		if slices.Contains(except, p.pid) {
			continue
		}
		fd, err := unix.PidfdOpen(p.pid, 0)
		if err == unix.ENOSYS { // kernel < 5.3: accept the small reuse race
			_ = syscall.Kill(p.pid, sig)
			continue
		}
		if err != nil {
			continue
		}
		if e, ok := readStat(p.pid); ok && tree[e.ppid] {
			_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		}
		unix.Close(fd)
	}
}

// procPIDs returns this process's pid and the pid of its child agentPid as /proc numbers
// them: /proc may belong to another PID namespace (an init that is PID 1 of a namespace made
// without its own /proc, as in tests). The child's is read from a pidfd's fdinfo there.
func procPIDs(agentPid int) (self, agent int, err error) {
	link, err := os.Readlink("/proc/self")
	if err != nil {
		return 0, 0, err
	}
	if self, err = strconv.Atoi(link); err != nil {
		return 0, 0, errors.New("/proc/self is " + strconv.Quote(link))
	}
	if self == os.Getpid() {
		return self, agentPid, nil
	}
	fd, err := unix.PidfdOpen(agentPid, 0)
	if err != nil {
		return 0, 0, &os.SyscallError{Syscall: "pidfd_open", Err: err}
	}
	defer unix.Close(fd)
	info, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, 0, err
	}
	for line := range bytes.Lines(info) {
		if v, ok := bytes.CutPrefix(line, []byte("Pid:")); ok {
			if agent, err = strconv.Atoi(string(bytes.TrimSpace(v))); err == nil && agent > 0 {
				return self, agent, nil
			}
		}
	}
	return 0, 0, errors.New("no pid of the agent in its pidfd's fdinfo")
}

// liveOthers counts the live descendants of self (as /proc numbers them) other than agent.
func liveOthers(self, agent int) (int, error) {
	_, procs, err := descendants(self)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range procs {
		if p.pid != agent {
			n++
		}
	}
	return n, nil
}
