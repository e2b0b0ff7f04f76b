package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/task"
)

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema task",
		Short: "Print the JSON Schema of the task file format (for editors)",
		Long: "schema prints the JSON Schema (draft 2020-12) of task files, kept equal to what the loader\n" +
			"accepts by a test. Save it and point your editor at it, e.g. with the YAML language server:\n" +
			"  ceval schema task > ceval-task.schema.json\n" +
			"  # yaml-language-server: $schema=./ceval-task.schema.json   (first line of a task file)\n" +
			"The schema checks names, types and enums; ceval validate still checks the rest (paths,\n" +
			"regular expressions, cross-field rules).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "task" {
				return exitWith(exitInvalid, fmt.Errorf("unknown format %q: ceval schema prints the task format's schema (ceval schema task)", args[0]))
			}
			out, err := json.MarshalIndent(task.TaskSchema(), "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(out))
			return nil
		},
	}
}
