package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// refuseUnknownCommands makes a mistyped or missing subcommand, at any depth, an error
// (exit 2, "unknown command") instead of cobra's help and exit 0, so a CI script calling a
// wrong command fails. A command group run bare still prints its help; a command that
// declares no Args takes none.
func refuseUnknownCommands(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.SuggestionsMinimumDistance = 2
		switch {
		case c.Name() == "help" && c.HasParent():
			c.Args = knownHelpTopic
		case c.HasSubCommands() && !c.Runnable():
			c.Args = knownSubcommand
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		case c.Args == nil:
			c.Args = cobra.NoArgs
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// knownSubcommand is the Args of a command group: reached with an argument, it is one
// that names none of its subcommands.
func knownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return unknownCommand(cmd, args[0])
}

// knownHelpTopic refuses `ceval help X` for an X that is no command.
func knownHelpTopic(cmd *cobra.Command, args []string) error {
	found, rest, err := cmd.Root().Find(args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return unknownCommand(found, rest[0])
	}
	return nil
}

func unknownCommand(cmd *cobra.Command, arg string) error {
	msg := fmt.Sprintf("unknown command %q for %q", arg, cmd.CommandPath())
	if s := cmd.SuggestionsFor(arg); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	if cmd.HasAvailableSubCommands() {
		msg += fmt.Sprintf("\n\nRun '%s --help' for its commands.", cmd.CommandPath())
	}
	return exitWith(exitInvalid, fmt.Errorf("%s", msg))
}
