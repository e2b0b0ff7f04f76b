package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandRefusesAnUnknownSubcommandOrStrayArgument walks the whole command tree:
// each command with subcommands is given one it lacks, each command that takes no
// positional argument is given one, and each must exit 2 saying "unknown command" (a CI
// script calling a wrong command must not pass).
func TestEveryCommandRefusesAnUnknownSubcommandOrStrayArgument(t *testing.T) {
	var cases [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		switch {
		case c.HasSubCommands():
			cases = append(cases, append(path, "no-such-command"))
		case c.ValidateArgs(nil) == nil && c.ValidateArgs([]string{"stray"}) != nil:
			cases = append(cases, append(path, "stray"))
		}
		for _, s := range c.Commands() {
			if !strings.HasPrefix(s.Name(), "__") { // cobra's hidden completion requests
				walk(s, append(path[:len(path):len(path)], s.Name()))
			}
		}
	}
	root := newRootCmd()
	root.InitDefaultHelpCmd() // what Execute adds: they are commands a user can mistype too
	root.InitDefaultCompletionCmd()
	walk(root, nil)
	if len(cases) < 15 {
		t.Fatalf("the walk found only %d cases: %v", len(cases), cases)
	}
	for _, sub := range []string{"images", "bundle", "import", "sandbox", "rootless", "help", "completion"} {
		if !hasCase(cases, sub) {
			t.Errorf("the walk never reached %q", sub)
		}
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := ceval(t, args...)
			if r.code != exitInvalid || !strings.Contains(r.stderr, "unknown command") {
				t.Errorf("exit %d, stderr %q; want 2 and unknown command", r.code, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("a refused command printed on stdout: %q", r.stdout)
			}
		})
	}
}

func hasCase(cases [][]string, first string) bool {
	for _, c := range cases {
		if len(c) > 0 && c[0] == first {
			return true
		}
	}
	return false
}

// TestCommandGroupRunBarePrintsItsHelp: `ceval images` alone is a request for the menu.
func TestCommandGroupRunBarePrintsItsHelp(t *testing.T) {
	r := ceval(t, "images")
	if r.code != 0 || !strings.Contains(r.stdout, "build-default") {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestMistypedSubcommandIsGivenASuggestion names the command meant.
func TestMistypedSubcommandIsGivenASuggestion(t *testing.T) {
	r := ceval(t, "images", "biuld")
	if r.code != exitInvalid || !strings.Contains(r.stderr, "Did you mean this?\n\tbuild") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
