package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/task"
	"ceval.dev/ceval/wasm"
)

func newValidateCmd() *cobra.Command {
	var strict bool
	var root string
	var warned int
	seen := map[string]bool{}
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check task and experiment files and report every problem as FILE:LINE:COL",
		Long: "validate loads each task file strictly (unknown fields, wrong types, missing fields,\n" +
			"regular expressions and JMESPath expressions that do not compile, paths that leave the\n" +
			"task's directory) and prints every problem it finds. Exit 0 when all are valid, 2 otherwise.\n\n" +
			strictHelp,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, f := range args {
				if task.IsExperiment(f) {
					e, err := task.LoadExperiment(f, task.ExperimentOptions{Root: root})
					if err != nil {
						bad++
						printProblems(cmd.ErrOrStderr(), f, err)
						continue
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (experiment %s, %d runs: %d variant/task pairs x %d repeats)\n",
						f, e.ID, len(e.Entries)*e.Repeats, len(e.Entries), e.Repeats)
					if strict {
						warned += printWarnings(cmd.ErrOrStderr(), seen, experimentTasks(e)...)
					}
					warnedCmd := map[string]bool{} // a task under several variants: once
					for _, en := range e.Entries {
						for _, w := range wasm.CommandWarnings(en.Task) {
							if !warnedCmd[w] {
								warnedCmd[w] = true
								fmt.Fprintln(cmd.ErrOrStderr(), w)
							}
						}
					}
					continue
				}
				ts, err := task.LoadAll(f, task.LoadOptions{Root: root})
				if err == nil && len(ts) > 1 {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (dataset %s: %d tasks, %s ... %s)\n", f, ts[0].Dataset, len(ts), ts[0].ID, ts[len(ts)-1].ID)
					if strict {
						warned += printWarnings(cmd.ErrOrStderr(), seen, ts...)
					}
					continue
				}
				var t *task.Task
				if err == nil {
					t = ts[0]
				}
				if err != nil {
					bad++
					var ps task.Problems
					if !errors.As(err, &ps) {
						fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", f, err)
						continue
					}
					for _, p := range ps {
						fmt.Fprintln(cmd.ErrOrStderr(), p)
					}
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (task %s, %d criteria, image %s)\n", f, t.ID, len(t.Criteria), taskImage(t.Sandbox))
				if strict {
					warned += printWarnings(cmd.ErrOrStderr(), seen, t)
				}
				for _, w := range wasm.CommandWarnings(t) {
					fmt.Fprintln(cmd.ErrOrStderr(), w)
				}
			}
			if bad > 0 {
				return exitWith(exitInvalid, fmt.Errorf("%d of %d files invalid", bad, len(args)))
			}
			if warned > 0 {
				return exitWith(exitFailure, fmt.Errorf("--strict: %d warning(s); fix the criteria (ceval audit runs the cheats they name)", warned))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", rootHelp)
	cmd.Flags().BoolVar(&strict, "strict", false, "also warn (FILE:LINE) about weak criteria a cheat can pass; exit 1 on any")
	return cmd
}

// loadTask loads one task file, mapping invalid input to exit code 2 with every problem.
func loadTask(path string) (*task.Task, error) {
	t, err := task.Load(path)
	if err != nil {
		return nil, exitWith(exitInvalid, err)
	}
	return t, nil
}

// taskImage names the image a task gets, with the packages it is built from.
func taskImage(sb task.Sandbox) string {
	if sb.PackageImage() != sb.Image {
		return sb.Image
	}
	s := sb.Image + " (Debian packages: " + strings.Join(sb.Packages, ",")
	if len(sb.Pip) > 0 {
		s += "; pip: " + strings.Join(sb.Pip, ",")
	}
	return s + "; built on first use, cached)"
}
