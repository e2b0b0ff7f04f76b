// Package procgroup runs a child process as the leader of its own process group, so that
// stopping it reaches everything it started: a cancelled context sends the group SIGTERM
// (buildah and mmdebstrap then remove their containers and mounts), then SIGKILL after a
// grace, and Wait leaves no member of the group running. It never signals by name.
package procgroup

import (
	"context"
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// DefaultGrace is the time between SIGTERM and SIGKILL: buildah stopping a RUN step's
// container takes about a second.
const DefaultGrace = 10 * time.Second

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
	return c.Cmd.Start()
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
