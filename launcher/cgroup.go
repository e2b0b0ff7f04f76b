package launcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// v1Controllers are the cgroup v1 hierarchies checked for leftover processes: the ones that
// hold ceval's limits. Every process of the container is in the same cgroup in each.
var v1Controllers = []string{"pids", "memory"}

// cgroupProcs lists the processes in the cgroup at cgroupsPath (a spec's
// linux.cgroupsPath in cgroupfs form, e.g. /ns/id), on cgroup v2 or v1.
func cgroupProcs(root, cgroupsPath string) ([]string, error) {
	if cgroupsPath == "" {
		return nil, errors.New("spec has no cgroups path")
	}
	if strings.Contains(cgroupsPath, ":") {
		return nil, fmt.Errorf("cgroups path %q: systemd form not supported", cgroupsPath)
	}
	rel := filepath.Clean("/" + cgroupsPath)
	var dirs []string
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		dirs = []string{filepath.Join(root, rel)}
	} else {
		for _, c := range v1Controllers {
			dirs = append(dirs, filepath.Join(root, c, rel))
		}
	}
	var procs []string
	found := false
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read cgroup %s: %w", d, err)
		}
		found = true
		procs = append(procs, strings.Fields(string(b))...)
	}
	if !found {
		return nil, fmt.Errorf("no cgroup at %s", strings.Join(dirs, " or "))
	}
	return procs, nil
}

// waitCgroupEmpty waits until the container's cgroup at cgroupsPath (under root) holds no
// live process, for at most max. It is event-driven: one read of cgroup.procs, and while
// live processes remain, a wait on their pidfds (readable when the process exits) followed
// by another read, since a process may have forked meanwhile. An exited process its parent
// has not reaped yet counts as gone: it runs nothing. cgroup v1 has no emptiness event of
// its own (v2's cgroup.events), and the usual case, a cgroup already empty when PID 1's
// exit is seen, costs one read.
func waitCgroupEmpty(root, cgroupsPath string, max time.Duration) error {
	deadline := time.Now().Add(max)
	for {
		procs, err := cgroupProcs(root, cgroupsPath)
		if err != nil {
			return err
		}
		if len(procs) == 0 {
			return nil
		}
		live, waited, err := waitExits(procs, deadline)
		if err != nil {
			return fmt.Errorf("cgroup %s: %w", cgroupsPath, err)
		}
		if len(live) > 0 {
			return fmt.Errorf("cgroup %s still holds processes %s %s after the exit", cgroupsPath, strings.Join(live, " "), max)
		}
		if !waited {
			return nil
		}
	}
}

// waitExits waits until every process in pids has exited or the deadline passes, and
// returns those still running then. waited is false when none of them was running to
// begin with (gone, or exited and not yet reaped).
func waitExits(pids []string, deadline time.Time) (live []string, waited bool, err error) {
	type proc struct {
		pid string
		fd  int
	}
	var procs []proc
	defer func() {
		for _, p := range procs {
			unix.Close(p.fd)
		}
	}()
	for _, s := range pids {
		pid, err := strconv.Atoi(s)
		if err != nil || pid <= 0 {
			return nil, false, fmt.Errorf("cgroup.procs lists %q, not a PID", s)
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // exited and reaped since the read
		}
		if err != nil {
			return nil, false, fmt.Errorf("pidfd_open %d: %w", pid, err)
		}
		procs = append(procs, proc{s, fd})
	}
	for first := true; len(procs) > 0; first = false {
		timeout := 0 // the first poll only sorts the running from the exited
		if !first {
			// Rounded up: a poll of 0 ms before the deadline would spin.
			timeout = int((time.Until(deadline) + time.Millisecond - 1) / time.Millisecond)
			if timeout <= 0 {
				break
			}
		}
		fds := make([]unix.PollFd, len(procs))
		for i, p := range procs {
			fds[i] = unix.PollFd{Fd: int32(p.fd), Events: unix.POLLIN}
		}
		if _, err := unix.Poll(fds, timeout); err != nil && !errors.Is(err, unix.EINTR) {
			return nil, false, fmt.Errorf("poll pidfds: %w", err)
		}
		running := procs[:0]
		for i, p := range procs {
			if fds[i].Revents != 0 {
				unix.Close(p.fd)
				continue
			}
			running = append(running, p)
		}
		procs = running
		if first && len(procs) == 0 {
			return nil, false, nil
		}
		waited = true
	}
	for _, p := range procs {
		live = append(live, p.pid)
	}
	return live, waited, nil
}
