package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/bundle"
)

func newBundleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Project plugins and skills for an agent, and prove what was projected",
		Long: "A plugin repository often holds grading material too (tests, reference solutions,\n" +
			"checkers). build copies only the allowlisted trees into a read-only bundle with a\n" +
			"sha256 manifest; verify checks a bundle against its manifest. A task's plugins\n" +
			"are verified before and after every run and mounted read-only.",
	}
	cmd.AddCommand(newBundleBuildCmd(), newBundleVerifyCmd())
	return cmd
}

func newBundleBuildCmd() *cobra.Command {
	var out string
	var allow, deny []string
	cmd := &cobra.Command{
		Use:   "build SRC --out DIR",
		Short: "Copy SRC's allowlisted trees into DIR/tree with DIR/manifest.json",
		Long: "build copies the allowlisted top-level trees of SRC (default " + strings.Join(bundle.DefaultAllow, ", ") + ")\n" +
			"without following any symlink, and refuses the whole source, listing every offender\n" +
			"(exit 2), when a tree holds a name matching a deny glob (default " + strings.Join(bundle.DefaultDeny, " ") + ";\n" +
			"case-insensitive, a trailing / for directories only), an absolute symlink, a symlink\n" +
			"leaving its tree or passing through a denied name, a hard-linked file or a special\n" +
			"file. Files become 0444 (0555 when executable), directories 0555. --allow and --deny\n" +
			"replace the defaults.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return exitWith(exitInvalid, errors.New("bundle build: --out DIR is required"))
			}
			var o bundle.Options
			if cmd.Flags().Changed("allow") {
				o.Allow = allow
			}
			if cmd.Flags().Changed("deny") {
				o.Deny = deny
			}
			m, err := bundle.Build(args[0], out, o)
			if err != nil {
				var re *bundle.RefusedError
				var ie *bundle.InputError
				if errors.As(err, &re) || errors.As(err, &ie) {
					return exitWith(exitInvalid, err)
				}
				return exitWith(exitInfraErr, err)
			}
			files, links := 0, 0
			for _, e := range m.Entries {
				switch e.Kind {
				case bundle.KindFile:
					files++
				case bundle.KindSymlink:
					links++
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s: %d files, %d symlinks, tree sha256 %s\n", out, files, links, m.TreeSHA256)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "bundle directory to create (must not exist, or be empty)")
	cmd.Flags().StringSliceVar(&allow, "allow", nil, "top-level directories to project, comma-separated (replaces the default)")
	cmd.Flags().StringSliceVar(&deny, "deny", nil, "name globs to refuse inside them, comma-separated (replaces the default)")
	return cmd
}

func newBundleVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify DIR",
		Short: "Check a bundle against its manifest in both directions",
		Long: "verify recomputes DIR/tree without following symlinks and compares it with\n" +
			"DIR/manifest.json: every missing or extra entry, changed byte, link target, mode or\n" +
			"kind, and every hard-linked file is reported by path. Exit 0 only when identical,\n" +
			"1 on any difference, 2 when DIR is not a readable bundle.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := bundle.Verify(args[0])
			var de *bundle.DriftError
			switch {
			case errors.As(err, &de):
				for _, d := range de.Diffs {
					fmt.Fprintln(cmd.OutOrStdout(), d)
				}
				return exitWith(exitFailure, fmt.Errorf("%s: %d difference(s) from its manifest (tree sha256 %s, manifest %s)", args[0], len(de.Diffs), de.Got, de.Want))
			case err != nil:
				return exitWith(exitInvalid, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok, %d entries, tree sha256 %s\n", args[0], len(m.Entries), m.TreeSHA256)
			return nil
		},
	}
}
