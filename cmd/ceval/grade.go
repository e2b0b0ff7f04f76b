package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

func newGradeCmd(g *globalOptions) *cobra.Command {
	var workspace, row, step string
	var outputs []string
	var asJSON, allowHostNet bool
	cmd := &cobra.Command{
		Use:   "grade TASK --workspace DIR [--row ID] [--step NAME] [--output PATH=DIR]...",
		Short: "Grade a workspace directory against a task's criteria, with no agent",
		Long: "grade snapshots DIR (a private copy that never follows a symlink) and grades the copy\n" +
			"against TASK's success criteria. Criteria with sandbox: container run in verifier\n" +
			"containers and need containerd (without it they are NOT_GRADED, with the reason).\n" +
			"A task with a dataset is graded as one of its rows: --row ID (the row's id, else its number).\n" +
			"--output PATH=DIR grades DIR as the task's sandbox.outputs entry PATH (an output not\n" +
			"given is empty, as when the agent wrote nothing there).\n" +
			"A multi-step task is graded with one step's criteria: --step NAME (or its number).\n" +
			"Exit 0 on SUCCESS, 1 on FAILURE, 2 on invalid input, 3 on ERROR or NOT_GRADED.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if workspace == "" {
				return exitWith(exitInvalid, fmt.Errorf("--workspace DIR is required"))
			}
			var t *task.Task
			var err error
			if row != "" {
				t, err = loadRow(args[0], row)
			} else {
				t, err = loadTask(args[0])
			}
			if err != nil {
				return err
			}
			if t, err = gradedStep(t, step); err != nil {
				return err
			}
			if fi, err := os.Stat(workspace); err != nil || !fi.IsDir() {
				return exitWith(exitInvalid, fmt.Errorf("workspace %s is not a directory", workspace))
			}
			outDirs := map[string]string{}
			for _, o := range outputs {
				p, dir, ok := strings.Cut(o, "=")
				if !ok || !slices.Contains(t.Sandbox.Outputs, p) {
					return exitWith(exitInvalid, fmt.Errorf("--output %q: want PATH=DIR with PATH one of the task's sandbox.outputs (%s)", o, strings.Join(t.Sandbox.Outputs, ", ")))
				}
				if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
					return exitWith(exitInvalid, fmt.Errorf("--output %s: %s is not a directory", p, dir))
				}
				outDirs[p] = dir
			}
			// Started before the snapshot: the worker loads the toolbox while the copy runs.
			ucfg, err := g.config(cmd)
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			ex, closeEx, err := executorFor(dialTier(cmd, g, allowHostNet, ucfg.VerifierNetwork), t)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer closeEx()
			tmp, err := tempdir.Make("", "ceval-grade-")
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer tempdir.Remove(tmp)
			snap, err := snapshot.Take(workspace, filepath.Join(tmp, "workspace"), snapshot.DefaultLimits())
			if err != nil {
				return exitWith(exitInfraErr, fmt.Errorf("snapshot %s: %w", workspace, err))
			}
			for i, p := range t.Sandbox.Outputs {
				src := outDirs[p]
				if src == "" {
					src = filepath.Join(tmp, fmt.Sprintf("empty-%d", i))
					if err := os.Mkdir(src, 0o700); err != nil {
						return exitWith(exitInfraErr, err)
					}
				}
				o, err := snapshot.Take(src, filepath.Join(tmp, fmt.Sprintf("output-%d", i)), snapshot.DefaultLimits())
				if err != nil {
					return exitWith(exitInfraErr, fmt.Errorf("snapshot %s: %w", src, err))
				}
				snap.Outputs = append(snap.Outputs, snapshot.Output{Path: p, Snapshot: o})
			}
			res := grader.Grade(cmd.Context(), t, snap, grader.Options{Reference: t.Reference, Executor: ex})
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return exitWith(exitInfraErr, err)
				}
			} else {
				printResult(cmd.OutOrStdout(), res)
			}
			return exitForStatus(res.Status)
		},
	}
	cmd.Flags().StringVarP(&workspace, "workspace", "w", "", "directory to grade (required)")
	cmd.Flags().StringArrayVar(&outputs, "output", nil, "PATH=DIR: grade DIR as the task's sandbox.outputs entry PATH (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print exactly one JSON object")
	cmd.Flags().StringVar(&step, "step", "", "for a multi-step task: grade with this step's criteria (its name, or its number from 1)")
	cmd.Flags().StringVar(&row, "row", "", "for a task with a dataset: grade the task of this row (its id, else its number)")
	cmd.Flags().BoolVar(&allowHostNet, "allow-host-network", false, "let sandbox: container criteria with network: host use the host's network")
	return cmd
}

// gradedStep is the task as grade grades it: a multi-step task's step named by --step.
func gradedStep(t *task.Task, step string) (*task.Task, error) {
	switch {
	case !t.MultiStep() && step != "":
		return nil, exitWith(exitInvalid, fmt.Errorf("%s: --step %s: the task has no steps", t.Path, step))
	case !t.MultiStep():
		return t, nil
	case step == "":
		return nil, exitWith(exitInvalid, fmt.Errorf("%s is a multi-step task: give --step NAME to grade the workspace with that step's criteria (steps: %s)", t.Path, strings.Join(t.StepNames(), ", ")))
	}
	i, ok := t.StepIndex(step)
	if !ok {
		return nil, exitWith(exitInvalid, fmt.Errorf("%s: --step %s: no such step (steps: %s)", t.Path, step, strings.Join(t.StepNames(), ", ")))
	}
	return t.ForStep(i), nil
}

// loadRow loads the task of one row of a dataset task (the row's id, else its number).
func loadRow(path, row string) (*task.Task, error) {
	ts, err := task.LoadAll(path, task.LoadOptions{})
	if err != nil {
		return nil, exitWith(exitInvalid, err)
	}
	var found *task.Task
	var ids []string
	for _, t := range ts {
		if t.Dataset != "" && t.ID == t.Dataset+"."+row {
			found = t
			continue
		}
		ids = append(ids, strings.TrimPrefix(t.ID, t.Dataset+"."))
		t.Close()
	}
	if found == nil {
		return nil, exitWith(exitInvalid, fmt.Errorf("%s: --row %s: no such row (rows: %s)", path, row, strings.Join(ids, ", ")))
	}
	return found, nil
}

// exitForStatus maps a task status to the exit codes every command shares.
func exitForStatus(status string) error {
	switch status {
	case grader.TaskSuccess:
		return nil
	case grader.TaskFailure, record.StatusTimeout:
		return exitCode(exitFailure)
	default:
		return exitCode(exitInfraErr)
	}
}

// printResult writes the human table: one row a criterion, then the task's verdict.
func printResult(w io.Writer, res *grader.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tCRITERION\tWEIGHT\tSCORE\tRESULT\tDETAILS")
	for i, c := range res.Criteria {
		name := c.Type
		if c.Description != "" {
			name += ": " + c.Description
		}
		weight := fmt.Sprintf("%g", c.Weight)
		if !c.Gating {
			weight += " (info)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.2f\t%s\t%s\n", i+1, clip(name, 60), weight, c.Score, c.Status, clip(oneLine(c.Details), 100))
	}
	tw.Flush()
	for _, n := range res.SnapshotNotes {
		fmt.Fprintf(w, "note: %q: %s\n", n.Path, printable(n.Reason))
	}
	fmt.Fprintf(w, "%s: %s, score %.2f\n", res.TaskID, res.Status, res.Score)
}

func oneLine(s string) string { return strings.Join(strings.Fields(printable(s)), " ") }

// printable escapes control characters: paths and details can come from the agent, and a
// terminal must not interpret them.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
