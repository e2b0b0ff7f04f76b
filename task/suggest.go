package task

import (
	"path"
	"slices"
	"strings"
)

// imageOnlyPrograms are toolchains and CLIs that exist only in an image, never in the WASM
// sandbox's toolbox: the importer sends a run_command that calls one to a verifier
// container (ceval validate warns about any program the toolbox lacks: wasm.CommandWarnings).
var imageOnlyPrograms = []string{
	"bash", "bun", "bundle", "cargo", "cc", "clang", "cmake", "composer", "deno", "dotnet",
	"g++", "gcc", "go", "gofmt", "gradle", "java", "javac", "make", "mvn", "node", "npm",
	"npx", "php", "pip", "pip3", "pnpm", "poetry", "rake", "ruby", "rustc", "tsc", "uv",
	"uvx", "yarn",
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
