package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/importer"
)

func newImportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert task files written for other harnesses into ceval's format",
	}
	cmd.AddCommand(newImportCoderEvalCmd())
	return cmd
}

func newImportCoderEvalCmd() *cobra.Command {
	var out string
	var keep bool
	var root string
	cmd := &cobra.Command{
		Use:   "coder-eval SRC... --out DIR",
		Short: "Convert coder_eval task files (files, or directories searched for *.yaml)",
		Long: "coder-eval converts each coder_eval task file into a ceval task file under --out, one output\n" +
			"file per input, keeping comments on the fields it carries over. A directory is mirrored under\n" +
			"DIR/<its name> with its other files (prompts, references, templates) copied along; links are\n" +
			"never followed. Every field that has no ceval equivalent is listed as FILE:LINE: unmapped: with\n" +
			"a reason, and an unmappable criterion is left out, or kept as a placeholder that always fails\n" +
			"with --keep-unmapped. Each output is then validated as ceval would load it. With --root ROOT\n" +
			"(tasks naming templates elsewhere in the tree, e.g. ../../skills/x), ROOT is mirrored into DIR\n" +
			"and the outputs validate (and later run) with --root DIR.\n" +
			"Exit 0 when everything mapped and validated, 1 when something did not, 2 on bad arguments.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return exitWith(exitInvalid, errors.New("--out DIR is required (where the converted files go)"))
			}
			results, err := importer.ImportCoderEval(args, out, importer.Options{KeepUnmapped: keep, Root: root})
			bad := 0
			for _, r := range results {
				for _, p := range r.Problems {
					fmt.Fprintln(cmd.ErrOrStderr(), p)
				}
				if !r.OK() {
					bad++
				}
				if r.Output == "" {
					continue
				}
				if r.Invalid != nil {
					printProblems(cmd.ErrOrStderr(), r.Output, r.Invalid)
					continue
				}
				if r.Unmapped() == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s: ok\n", r.Input, r.Output)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s: valid, %d field(s) unmapped\n", r.Input, r.Output, r.Unmapped())
				}
			}
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			if bad > 0 {
				return exitWith(exitFailure, fmt.Errorf("%d of %d file(s) did not map completely: see the list above", bad, len(results)))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write the converted files into")
	cmd.Flags().StringVar(&root, "root", "", "declared root of the inputs: the whole tree is mirrored into --out (material anywhere in it comes along) and the outputs validate with --root OUT")
	cmd.Flags().BoolVar(&keep, "keep-unmapped", false, "keep each unmappable criterion as a placeholder that always fails")
	return cmd
}

// rootHelp describes --root on every command that loads task files.
const rootHelp = "declared root: task files may name material anywhere inside DIR (\"../\" included), nothing outside it (default: each task file's own directory)"
