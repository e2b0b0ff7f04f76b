package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/task"
	"ceval.dev/ceval/wasm"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check task and experiment files and report every problem as FILE:LINE:COL",
		Long: "validate loads each task file strictly (unknown fields, wrong types, missing fields,\n" +
			"regular expressions and JMESPath expressions that do not compile, paths that leave the\n" +
			"task's directory) and prints every problem it finds. Exit 0 when all are valid, 2 otherwise.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, f := range args {
				if task.IsExperiment(f) {
					e, err := task.LoadExperiment(f, task.ExperimentOptions{})
					if err != nil {
						bad++
						printProblems(cmd.ErrOrStderr(), f, err)
						continue
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (experiment %s, %d runs: %d variant/task pairs x %d repeats)\n",
						f, e.ID, len(e.Entries)*e.Repeats, len(e.Entries), e.Repeats)
					continue
				}
				t, err := task.Load(f)
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
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (task %s, %d criteria)\n", f, t.ID, len(t.Criteria))
				for _, w := range wasm.CommandWarnings(t) {
					fmt.Fprintln(cmd.ErrOrStderr(), w)
				}
			}
			if bad > 0 {
				return exitWith(exitInvalid, fmt.Errorf("%d of %d files invalid", bad, len(args)))
			}
			return nil
		},
	}
}

// loadTask loads one task file, mapping invalid input to exit code 2 with every problem.
func loadTask(path string) (*task.Task, error) {
	t, err := task.Load(path)
	if err != nil {
		return nil, exitWith(exitInvalid, err)
	}
	return t, nil
}
