package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/snapshot"
)

// StepLogCap bounds each of a step's stdout and stderr in its log.
const StepLogCap = 8 << 20

// RunStep runs argv as one step in a fresh container of this sandbox (a shell of the image: supervisor.StepShell), its stdout and stderr to logPath (created;
// it must not exist), within timeout, and returns how it ended. An error is ceval's failure, not the step's.
func (s *Sandbox) RunStep(ctx context.Context, name string, argv []string, timeout time.Duration, logPath string) (_ launcher.Exit, err error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return launcher.Exit{}, fmt.Errorf("step %s: %w", name, err)
	}
	defer log.Close()
	userns, err := launcher.NewUserNS(s.ids.HostID, oci.IDRangeSize)
	if err != nil {
		return launcher.Exit{}, fmt.Errorf("step %s: %w", name, err)
	}
	defer userns.Close()
	cfg := s.ocfg
	cfg.RunID = launcher.ContainerID(s.cfg.ID + "-" + name)
	cfg.Args, cfg.Timeout = argv, timeout
	cfg.ExtraMounts = s.cfg.StepMounts
	cfg.UserNS.Path = userns.Path()
	opts, err := specOpts(cfg)
	if err != nil {
		return launcher.Exit{}, fmt.Errorf("step %s: %w", name, err)
	}
	goR, goW := io.Pipe()
	defer goW.Close()
	img, err := s.image(ctx)
	if err != nil {
		return launcher.Exit{}, fmt.Errorf("step %s: %w", name, err)
	}
	ctr, err := launcher.Create(ctx, s.cfg.Client, launcher.Spec{
		ID: cfg.RunID, Image: img, ImageName: s.cfg.Image, ChainID: s.chainID, Opts: opts, Labels: oci.Labels(cfg),
		Snapshotter: images.Snapshotter, // where images unpacked it: no lookup of the namespace's default
		Stdout:      log, Stderr: log, LogCap: StepLogCap, Stdin: goR,
	})
	if err != nil {
		return launcher.Exit{}, fmt.Errorf("step %s: %w", name, err)
	}
	defer func() {
		cctx, cancel := launcher.CleanupContext(ctx)
		defer cancel()
		if derr := ctr.Delete(cctx); derr != nil {
			err = errors.Join(err, fmt.Errorf("step %s: %w", name, derr))
		}
	}()
	tk, err := ctr.Start(ctx, func(ctx context.Context, pid uint32) error {
		if err := s.hardenTask(userns, pid); err != nil {
			return err
		}
		if s.cfg.StepBeforeStart != nil {
			return s.cfg.StepBeforeStart(ctx, pid)
		}
		return nil
	})
	if err != nil {
		return launcher.Exit{}, fmt.Errorf("step %s: %w", name, err)
	}
	if _, err := s.attestInit(ctx, tk.Pid()); err != nil {
		goW.Close() // EOF without the go-ahead: the init exits without starting the step
		cctx, cancel := launcher.CleanupContext(ctx)
		defer cancel()
		_, _ = tk.Wait(cctx, 5*time.Second, time.Second)
		return launcher.Exit{}, fmt.Errorf("step %s: %w", name, err)
	}
	if _, err := goW.Write([]byte("go\n")); err != nil {
		return launcher.Exit{}, fmt.Errorf("step %s: start: %w", name, err)
	}
	goW.Close()
	exit, err := tk.Wait(ctx, timeout, s.cfg.Grace)
	if err != nil {
		return exit, fmt.Errorf("step %s: %w", name, err)
	}
	if !exit.Interrupted && !exit.CgroupEmpty {
		return exit, fmt.Errorf("step %s: processes remained in its container after the kill (%s)", name, exit.CgroupError)
	}
	return exit, nil
}

// Dirs are the host paths of the agent's workspace and home.
func (s *Sandbox) Dirs() (workspace, home string) { return s.Workspace, s.Home }

// OutputDirs are the host paths of the task's sandbox.outputs, in order.
func (s *Sandbox) OutputDirs() []string { return s.Outputs }

// TakeSnapshot copies the reaped agent's workspace into dst, never following a link.
func (s *Sandbox) TakeSnapshot(_ context.Context, dst string, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	return snapshot.Take(s.Workspace, dst, lim)
}
