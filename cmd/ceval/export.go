package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/atif"
	"ceval.dev/ceval/record"
)

func newExportCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "export DIR --format atif",
		Short: "Write the trajectory.json (Harbor ATIF) of a run, or of every run of an experiment",
		Long: "export writes trajectory.json into a run directory (one holding result.json), or into every\n" +
			"run directory of an experiment (one holding plan.json): the model gateway's transcript\n" +
			"(" + record.ModelCallsFile + ") as a trajectory in Harbor's Agent Trajectory Interchange Format,\n" +
			"schema " + atif.SchemaVersion + ". ceval run writes the same file as each run finishes; export makes it\n" +
			"for runs recorded before, or again. A run without model turns (no gateway, no call) is skipped\n" +
			"with a line saying why, as is a planned run that has no result.json yet.\n" +
			"Exit 0 when every run was exported or skipped, 1 when one could not be, 2 on bad arguments\n" +
			"(an unknown --format, DIR missing or neither a run nor an experiment directory).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format == "inspect" {
				return exitWith(exitInvalid, errors.New(inspectUnsupported))
			}
			if err := checkFormat(format, "atif"); err != nil {
				return err
			}
			return exportTrajectories(cmd, args[0])
		},
	}
	cmd.Flags().StringVar(&format, "format", "atif", "atif (Harbor's Agent Trajectory Interchange Format); inspect is refused with the reason (no published specification of Inspect's .eval)")
	return cmd
}

// inspectUnsupported is why export writes no Inspect log.
const inspectUnsupported = "--format inspect: not supported. Inspect's .eval log is a zip archive whose members and their " +
	"fields are defined only by inspect_ai's Python code (its documentation calls it a compact binary format and publishes no " +
	"specification or version policy for it), so a file ceval wrote could break with any Inspect release and no test here could " +
	"check it. Use --format atif (Harbor's trajectory format, schema ATIF-v1.7, validated in ceval's tests), or the run directory's " +
	"result.json and model_calls.jsonl"

// exportTrajectories exports DIR, a run or an experiment directory.
func exportTrajectories(cmd *cobra.Command, dir string) error {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return exitWith(exitInvalid, fmt.Errorf("export %s: %w: give a run directory (holding %s) or an experiment directory (holding %s)", dir, unwrapPathError(err), record.ResultFile, record.PlanFile))
	}
	var runs []string
	switch {
	case pathExists(filepath.Join(dir, record.ResultFile)):
		runs = []string{dir}
	case pathExists(filepath.Join(dir, record.PlanFile)):
		plan, err := record.ReadPlan(dir)
		if err != nil {
			return exitWith(exitFailure, fmt.Errorf("export %s: %w: the experiment's plan is unreadable; fix or restore it", dir, err))
		}
		for _, pr := range plan.Runs() {
			runs = append(runs, plan.Dir(dir, pr))
		}
	default:
		return exitWith(exitInvalid, fmt.Errorf("export %s: neither a run directory (no %s) nor an experiment directory (no %s)", dir, record.ResultFile, record.PlanFile))
	}
	failed := 0
	for _, rd := range runs {
		res, err := record.ReadResult(rd)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(out, "skipped %s: no %s (the run has not finished)\n", rd, record.ResultFile)
			continue
		}
		if err == nil {
			err = atif.WriteRun(rd, res, nil, true)
		}
		var skip *atif.SkipError
		switch {
		case errors.As(err, &skip):
			fmt.Fprintf(out, "skipped %s\n", skip.Why)
		case err != nil:
			failed++
			fmt.Fprintf(errOut, "ceval export: %s: %v\n", rd, err)
		default:
			fmt.Fprintf(out, "wrote %s\n", filepath.Join(rd, atif.File))
		}
	}
	if failed > 0 {
		fmt.Fprintf(errOut, "ceval export: %d of %d runs could not be exported\n", failed, len(runs))
		return exitCode(exitFailure)
	}
	return nil
}

func pathExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// unwrapPathError drops the path an os error repeats.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
