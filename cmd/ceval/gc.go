package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/supervisor"
)

func newGCCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Remove what a crashed ceval left in containerd (containers, tasks, snapshots, leases, scratch mounts, ID slots)",
		Long: "gc removes, from the namespace, the containers ceval labelled whose owning ceval process\n" +
			"is gone (its PID and boot id, checked against the process's start time), killing their\n" +
			"tasks first (their init has killed the agent already, once it saw ceval's FIFO close),\n" +
			"with their snapshots, leases, scratch filesystems and supervisor FIFOs, then the lock files\n" +
			"of user-namespace ID slots no live ceval holds (/run/ceval/idslots). What a live ceval owns\n" +
			"is kept. Exit 0 when everything left behind was removed, 3 otherwise.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			removed, kept, err := supervisor.GC(ctx, c)
			out := cmd.OutOrStdout()
			for _, r := range removed {
				fmt.Fprintf(out, "removed %s %s (%s)\n", r.Kind, r.ID, r.Why)
			}
			for _, k := range kept {
				fmt.Fprintf(out, "kept %s %s (%s)\n", k.Kind, k.ID, k.Why)
			}
			fmt.Fprintf(out, "gc: removed %d, kept %d in namespace %s\n", len(removed), len(kept), g.namespace)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			return nil
		},
	}
}
