package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
)

func newImagesLsCmd(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the images in the namespace: name, digest, size, source, last use",
		Long: "ls lists every image of the containerd namespace: the digest its record names, its size\n" +
			"for this platform (compressed, as stored), where it came from (built, imported, pulled;\n" +
			"- when ceval did not make it), when a run last used it, and the experiments that pinned it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			es, err := images.List(ctx, c)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(es)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDIGEST\tSIZE\tSOURCE\tLAST USED\tPINNED BY")
			for _, e := range es {
				used := "never"
				if !e.LastUsed.IsZero() {
					used = e.LastUsed.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, shortDigest(e.Digest.String()), humanBytes(e.Size), orDash(e.Source), used, orDash(strings.Join(e.PinnedBy, ",")))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

func newImagesPruneCmd(g *globalOptions) *cobra.Command {
	var (
		olderThan time.Duration
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "prune [--older-than 720h] [--dry-run]",
		Short: "Remove the images no run used for a while (never one an unfinished experiment pinned)",
		Long: "prune removes from the namespace the images no run used for --older-than (by their last\n" +
			"use, recorded to within 10 minutes, which it allows for; else when they were made);\n" +
			"containerd then frees their content. An image an\n" +
			"experiment pinned is kept while that experiment has runs without a complete result.json\n" +
			"(interrupted, stopped early, running): ceval run --resume needs exactly that digest.\n" +
			"ceval's own images are built again on first use.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan < 0 {
				return exitWith(exitInvalid, fmt.Errorf("--older-than %s: give a positive duration", olderThan))
			}
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			removed, kept, err := images.Prune(ctx, c, olderThan, dryRun)
			out := cmd.OutOrStdout()
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			for _, r := range removed {
				fmt.Fprintf(out, "%s %s (%s, %s)\n", verb, r.Name, humanBytes(r.Size), r.Why)
			}
			for _, k := range kept {
				if len(k.PinnedBy) > 0 {
					fmt.Fprintf(out, "kept %s (%s)\n", k.Name, k.Why)
				}
			}
			fmt.Fprintf(out, "prune: %s %d, kept %d in namespace %s\n", verb, len(removed), len(kept), g.namespace)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 720*time.Hour, "remove images unused for this long")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be removed, remove nothing")
	return cmd
}

func shortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
