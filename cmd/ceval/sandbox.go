package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/task"
)

func newSandboxCmd(g *globalOptions) *cobra.Command {
	sb := &cobra.Command{
		Use:   "sandbox",
		Short: "Work with the agent sandbox directly",
	}
	var (
		image        string
		network      string
		timeout      time.Duration
		allowHostNet bool
		busybox      string
	)
	exec := &cobra.Command{
		Use:   "exec [--image IMG] [--network none|host] [--timeout D] -- CMD [ARGS...]",
		Short: "Run CMD in exactly the sandbox an agent gets, with a fresh empty workspace",
		Long: "sandbox exec runs CMD as the agent would run: UID/GID 2000, no capabilities,\n" +
			"no_new_privs, seccomp, the default limits, read-only rootfs, an empty /workspace, and no\n" +
			"network unless --network host (which needs --allow-host-network). CMD's stdout and stderr\n" +
			"stream through; ceval's own messages go to stderr only. Exits with CMD's exit code.\n" +
			"Use it to check what an agent can see.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if network != policy.NetworkNone && network != policy.NetworkHost {
				return exitWith(exitInvalid, fmt.Errorf("--network must be none or host, got %q", network))
			}
			if network == policy.NetworkHost && !allowHostNet {
				return exitWith(exitInvalid, errors.New("--network host needs --allow-host-network"))
			}
			if timeout <= 0 {
				return exitWith(exitInvalid, errors.New("--timeout must be positive"))
			}
			ucfg, err := g.config(cmd) // refused before containerd is reached or an image built
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			c, cctx, err := g.connectRuns(cmd.Context(), cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			defer images.WaitTouches() // the image's last-used label, before the client closes
			if _, err := images.Resolve(cctx, c, image, nil, busybox); err != nil {
				var nf *images.NotFoundError
				if errors.As(err, &nf) {
					return exitWith(exitInvalid, err)
				}
				return exitWith(exitInfraErr, err)
			}
			dir, err := tempdir.Make("", "ceval-sandbox-")
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer tempdir.Remove(dir)
			limits := task.Limits{Timeout: timeout, MemoryMB: policy.DefaultMemoryMB, CPUs: policy.DefaultCPUs,
				Pids: policy.DefaultPids, DiskMB: policy.DefaultDiskMB}
			s, err := local.NewSandbox(cctx, sandbox.Config{
				Client: c, Image: image, ID: "sandbox-" + record.NewRunID(time.Now()), Argv: args,
				Limits: limits, Network: network, Dir: dir + "/scratch",
				Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), IDs: ucfg.idRange(),
			})
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			out, err := s.Run(cctx, nil)
			if cerr := s.Close(cctx); cerr != nil && err == nil {
				err = cerr
			}
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			switch {
			case out.Exit.Interrupted:
				return exitWith(130, errors.New("interrupted")) // 130 or 143: execute's interruptedExit
			case out.Exit.TimedOut:
				return exitWith(124, fmt.Errorf("timed out after %s", timeout))
			case out.Exit.Code != 0:
				return exitCode(out.Exit.Code)
			}
			return nil
		},
	}
	f := exec.Flags()
	f.StringVar(&image, "image", images.DefaultName, "image to run (built on first use when it is the default)")
	f.StringVar(&network, "network", policy.NetworkNone, "none (loopback only) or host")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "kill CMD after this long")
	f.BoolVar(&allowHostNet, "allow-host-network", false, "permit --network host")
	f.StringVar(&busybox, "busybox", images.DefaultBusybox, "static busybox used to build the default image on first use")
	sb.AddCommand(exec)
	return sb
}
