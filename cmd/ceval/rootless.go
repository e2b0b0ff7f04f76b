package main

import (
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/launcher"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

func newRootlessCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rootless",
		Short: "Admin steps for rootless mode (run as root): delegate a cgroup subtree to a user, or remove it",
		Long: `rootless setup --user U, run once by root, makes a cgroup subtree in every cgroup v1 hierarchy
and gives it to U, so U's rootless containerd enforces pids, memory and cpu limits by cgroup
(the strict mode). rootless teardown --user U removes it. See docs/rootless.md.`,
	}
	var name string
	resolve := func() (*user.User, int, int, error) {
		if os.Geteuid() != 0 {
			return nil, 0, 0, exitWith(exitInvalid, fmt.Errorf("ceval rootless needs root: run it with sudo"))
		}
		if name == "" {
			return nil, 0, 0, exitWith(exitInvalid, fmt.Errorf("--user is required"))
		}
		u, err := user.Lookup(name)
		if err != nil {
			return nil, 0, 0, exitWith(exitInvalid, err)
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil || uid == 0 {
			return nil, 0, 0, exitWith(exitInvalid, fmt.Errorf("user %s (UID %s): want an unprivileged user", name, u.Uid))
		}
		return u, uid, gid, nil
	}
	setup := &cobra.Command{
		Use:   "setup --user U",
		Short: "Delegate a cgroup subtree to U (the strict rootless limit mode)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, uid, gid, err := resolve()
			if err != nil {
				return err
			}
			made, err := launcher.SetupDelegatedCgroup(cgroupRoot, u.Username, uid, gid)
			for _, d := range made {
				fmt.Fprintln(cmd.OutOrStdout(), d)
			}
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			return nil
		},
	}
	teardown := &cobra.Command{
		Use:   "teardown --user U",
		Short: "Remove the cgroup subtree delegated to U",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, _, _, err := resolve()
			if err != nil {
				return err
			}
			if err := launcher.TeardownDelegatedCgroup(cgroupRoot, u.Username); err != nil {
				return exitWith(exitInfraErr, err)
			}
			return nil
		},
	}
	for _, c := range []*cobra.Command{setup, teardown} {
		c.Flags().StringVar(&name, "user", "", "the rootless user")
	}
	cmd.AddCommand(setup, teardown)
	return cmd
}
