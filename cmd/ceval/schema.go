package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/task"
)

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema task|experiment|config",
		Short: "Print the JSON Schema of the task, experiment or config file format (for editors)",
		Long: "schema prints the JSON Schema (draft 2020-12) of task, experiment or config files, kept equal to what the loader\n" +
			"accepts by a test. Save it and point your editor at it, e.g. with the YAML language server:\n" +
			"  ceval schema task > ceval-task.schema.json\n" +
			"  # yaml-language-server: $schema=./ceval-task.schema.json   (first line of a task file)\n" +
			"The schema checks names, types and enums; ceval validate still checks the rest (paths,\n" +
			"regular expressions, cross-field rules).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			schemas := map[string]func() map[string]any{"task": task.TaskSchema, "experiment": task.ExperimentSchema, "config": configSchema}
			schema, ok := schemas[args[0]]
			if !ok {
				return exitWith(exitInvalid, fmt.Errorf("unknown format %q: give task, experiment or config", args[0]))
			}
			out, err := json.MarshalIndent(schema(), "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(out))
			return nil
		},
	}
}
