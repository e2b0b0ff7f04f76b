package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/sandbox/local"
)

func newGCCmd(g *globalOptions) *cobra.Command {
	var b backendFlags
	var allHosts bool
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove what a crashed ceval left in containerd (containers, tasks, snapshots, leases, scratch mounts, ID slots)",
		Long: "gc removes, from the namespace, the containers ceval labelled whose owning ceval process\n" +
			"is gone (its PID and boot id, checked against the process's start time), killing their\n" +
			"tasks first (their init has killed the agent already, once it saw ceval's FIFO close),\n" +
			"with their snapshots, leases, scratch filesystems and supervisor FIFOs, the runtime shims\n" +
			"left running with no container or task (a ceval killed while it created a task), the lock\n" +
			"files of user-namespace ID slots no live ceval holds (/run/ceval/idslots), and the temporary\n" +
			"directories (TMPDIR/ceval-*) of a ceval that is gone, unmounting what is mounted in them.\n" +
			"What a live ceval owns\n" +
			"is kept. Exit 0 when everything left behind was removed, 3 otherwise.\n\n" +
			"With --backend kubernetes it removes, from the Kubernetes namespace (--namespace, else the\n" +
			"config's kubernetes.namespace, else default), the Pods and NetworkPolicies of ceval\n" +
			"controllers on this machine that are gone (a killed ceval run); those of a live ceval are\n" +
			"kept, and those of other machines' controllers too unless --all-hosts.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ucfg, err := g.config(cmd)
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			if k, err := b.kubernetes(ucfg); err != nil || k {
				if err != nil {
					return err
				}
				return kubeGC(cmd, g, &b, ucfg, allHosts)
			}
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			removed, kept, err := local.GC(ctx, c)
			// Then the shims of containers gone (a ceval killed while it created a task).
			sr, serr := launcher.SweepOrphanShims(ctx, c, g.containerdAddress)
			removed, err = append(removed, sr...), errors.Join(err, serr)
			// After GC: a killed verifier's directory is free once its scratch mounts are gone.
			tr, tk, terr := tempdir.Sweep("")
			for _, d := range tr {
				removed = append(removed, launcher.Swept{Kind: "temporary directory", ID: d.Path, Why: d.Why})
			}
			for _, d := range tk {
				kept = append(kept, launcher.Swept{Kind: "temporary directory", ID: d.Path, Why: d.Why})
			}
			err = errors.Join(err, terr)
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
	b.add(cmd)
	cmd.Flags().BoolVar(&allHosts, "all-hosts", false, "with --backend kubernetes: also remove what controllers on other machines left (only when none of them runs)")
	return cmd
}

// kubeGC removes what dead controllers left in the cluster's namespace.
func kubeGC(cmd *cobra.Command, g *globalOptions, b *backendFlags, ucfg userConfig, allHosts bool) error {
	o, err := b.kubeOptions(cmd.Context(), cmd, g, ucfg)
	if err != nil {
		return err
	}
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	owners, err := o.Cluster.Controllers(ctx, o.Namespace)
	if err != nil {
		return exitWith(exitInfraErr, err)
	}
	removed, kept := 0, 0
	var errs []error
	for _, id := range kube.SortedKeys(owners) {
		alive, local := kube.ControllerState(id)
		switch {
		case alive:
			fmt.Fprintf(out, "kept %d object(s) of controller %s (it is running)\n", owners[id], id)
			kept += owners[id]
			continue
		case !local && !allHosts:
			fmt.Fprintf(out, "kept %d object(s) of controller %s (another machine's: run gc there, or --all-hosts)\n", owners[id], id)
			kept += owners[id]
			continue
		}
		n, err := o.Cluster.Collect(ctx, o.Namespace, id)
		removed += n
		if err != nil {
			errs = append(errs, err)
		}
		fmt.Fprintf(out, "removed %d object(s) of controller %s (gone)\n", n, id)
	}
	fmt.Fprintf(out, "gc: removed %d, kept %d in Kubernetes namespace %s\n", removed, kept, o.Namespace)
	if len(errs) > 0 {
		return exitWith(exitInfraErr, errors.Join(errs...))
	}
	return nil
}
