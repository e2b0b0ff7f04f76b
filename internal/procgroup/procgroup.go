// Package procgroup runs a child process as the leader of its own process group, so that
// stopping it reaches everything it started: a cancelled context sends the group SIGTERM
// (buildah and mmdebstrap then remove their containers and mounts), then SIGKILL after a
// grace, and Wait leaves no member of the group running. It never signals by name.
package procgroup

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultGrace is the time between SIGTERM and SIGKILL: buildah stopping a RUN step's
// container takes about a second.
const DefaultGrace = 10 * time.Second

// live are the groups of the Cmds started whose Wait has not returned, for KillAll.
var (
	mu   sync.Mutex
	live = map[int]bool{}
)

// KillAll sends SIGKILL to the group of every Cmd started whose Wait has not returned, and
// to every descendant of theirs by PID: for a process about to exit without waiting for them
// (a second SIGINT or SIGTERM), which would leave them running as orphans. A descendant that
// left the group (buildah's RUN step: runc in a session of its own, and the step's container
// below it) is found by its parent, so all of them are stopped first (SIGSTOP: none forks or
// exits while the tree is read; a stopped process keeps its PID), the tree read again until
// it holds no new process, then killed. A group's ID is not reused while its leader is
// unreaped, and Wait reaps it only after the group left live.
func KillAll() {
	mu.Lock()
	defer mu.Unlock()
	if len(live) == 0 {
		return
	}
	stopped := map[int]bool{}
	for pgid := range live {
		_ = syscall.Kill(-pgid, syscall.SIGSTOP)
	}
	for range 100 { // each pass reaches at least one generation further; trees are shallow
		found := false
		for _, pid := range descendants(live) {
			if !stopped[pid] {
				stopped[pid], found = true, true
				_ = syscall.Kill(pid, syscall.SIGSTOP)
			}
		}
		if !found {
			break
		}
	}
	for pgid := range live {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	for pid := range stopped {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// descendants lists, from /proc, every process in one of the groups or below one of their
// members (by parent PID), the groups' own members included.
func descendants(groups map[int]bool) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int][]int{} // parent PID -> children
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the command's closing parenthesis: state, ppid, pgrp, ...
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		parent[ppid] = append(parent[ppid], pid)
		if groups[pgrp] {
			out = append(out, pid)
		}
	}
	seen := map[int]bool{}
	for i := 0; i < len(out); i++ {
		if seen[out[i]] {
			continue
		}
		seen[out[i]] = true
		out = append(out, parent[out[i]]...)
	}
	return out
}

// Cmd is an exec.Cmd whose process group ends with it.
type Cmd struct {
	*exec.Cmd
	Grace time.Duration // SIGTERM to SIGKILL once ctx is done; DefaultGrace when zero

	once sync.Once
	done chan struct{} // closed when Wait has returned: no SIGKILL after it
}

// Command is exec.CommandContext(ctx, name, args...) in a process group of its own.
func Command(ctx context.Context, name string, args ...string) *Cmd {
	c := &Cmd{Cmd: exec.CommandContext(ctx, name, args...), done: make(chan struct{})}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = c.stop
	return c
}

func (c *Cmd) grace() time.Duration {
	if c.Grace > 0 {
		return c.Grace
	}
	return DefaultGrace
}

// Start starts the process; the pipes are closed grace+1 s after a cancellation whether or
// not a grandchild still holds them.
func (c *Cmd) Start() error {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Setpgid = true
	c.WaitDelay = c.grace() + time.Second
	mu.Lock()
	defer mu.Unlock()
	if err := c.Cmd.Start(); err != nil {
		return err
	}
	live[c.Process.Pid] = true
	return nil
}

// stop is the Cancel: SIGTERM to the group now, SIGKILL after the grace unless Wait is done.
func (c *Cmd) stop() error {
	pgid := c.Process.Pid
	err := syscall.Kill(-pgid, syscall.SIGTERM)
	go func() {
		t := time.NewTimer(c.grace())
		defer t.Stop()
		select {
		case <-t.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		case <-c.done:
		}
	}()
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Wait waits for the leader, then kills whatever of its group outlived it.
func (c *Cmd) Wait() error {
	// Reaped only after it left live: KillAll never signals a reused group ID.
	if c.Process != nil {
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, c.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		mu.Lock()
		delete(live, c.Process.Pid)
		mu.Unlock()
	}
	err := c.Cmd.Wait()
	c.once.Do(func() {
		// The group's ID cannot be reused while a member lives; an empty group is ESRCH.
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		close(c.done)
	})
	return err
}

// Run starts the process and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}
