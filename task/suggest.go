package task

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// imageOnlyPrograms are toolchains and CLIs that exist only in an image, never in the WASM
// sandbox's toolbox: a run_command that calls one fails there whatever the agent did.
var imageOnlyPrograms = []string{
	"bash", "bun", "bundle", "cargo", "cc", "clang", "cmake", "composer", "deno", "dotnet",
	"g++", "gcc", "go", "gofmt", "gradle", "java", "javac", "make", "mvn", "node", "npm",
	"npx", "php", "pip", "pip3", "pnpm", "poetry", "rake", "ruby", "rustc", "tsc", "uv",
	"uvx", "yarn",
}

// TierSuggestions lists, at each criterion's position, the WASM run_command criteria that
// call a program only an image provides, with the fix: sandbox: container. They are advice,
// not problems: the task loads either way.
func (t *Task) TierSuggestions() []Problem {
	var out []Problem
	for i := range t.Criteria {
		c := &t.Criteria[i]
		if c.Tier() != TierWASM || c.Type != RunCommand {
			continue
		}
		if prog := ImageOnlyProgram(c.Command); prog != "" {
			out = append(out, Problem{File: t.Path, Line: c.Line, Column: c.Column, Msg: fmt.Sprintf(
				"suggestion: success_criteria[%d] (run_command) calls %s, which the WASM sandbox does not have: add sandbox: container (it runs in a fresh container from the task's image, or image: one that has %s)", i, prog, prog)})
		}
	}
	return out
}

// ImageOnlyProgram returns the first program a shell command calls that only an image has
// (never the WASM sandbox's toolbox): the first word of each simple command (after
// VAR=value assignments), by base name; "" when there is none.
func ImageOnlyProgram(command string) string {
	split := strings.NewReplacer("&&", "\n", "||", "\n", ";", "\n", "|", "\n", "(", "\n", ")", "\n", "`", "\n", "$(", "\n")
	for _, part := range strings.Split(split.Replace(command), "\n") {
		for _, word := range strings.Fields(part) {
			if strings.Contains(word, "=") && !strings.HasPrefix(word, "=") {
				continue // an assignment before the command
			}
			if name := path.Base(word); slices.Contains(imageOnlyPrograms, name) {
				return name
			}
			break
		}
	}
	return ""
}
