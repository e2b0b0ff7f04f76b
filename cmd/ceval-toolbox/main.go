// Command ceval-toolbox is the shell and command set that grading criteria run inside the
// WebAssembly sandbox. Built for GOOS=wasip1 GOARCH=wasm and embedded by package wasm.
//
//	toolbox -c SCRIPT [NAME [ARGS...]]
//
// runs SCRIPT as a POSIX-style shell script (bash syntax) in the working directory given
// by $PWD and exits with its status. Every command runs in-process; nothing is executed.
package main

import (
	"context"
	"fmt"
	"os"

	"ceval.dev/ceval/internal/toolbox/shell"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) < 2 || args[0] != "-c" {
		fmt.Fprintln(os.Stderr, "usage: toolbox -c SCRIPT [NAME [ARGS...]]")
		return 2
	}
	dir, err := os.Getwd()
	if err != nil || dir == "" {
		dir = "/"
	}
	r := shell.New(dir, os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	name, params := "toolbox", []string(nil)
	if len(args) > 2 {
		name, params = args[2], args[3:]
	}
	r.SetParams(name, params)
	return r.Run(context.Background(), args[1])
}
