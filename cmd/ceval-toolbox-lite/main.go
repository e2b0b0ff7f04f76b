// Command ceval-toolbox-lite is the small toolbox: the commands of cmds.LiteNames and the
// && / || / ! of a shell, without the shell's parser or any other command, so wazero
// validates and compiles a fraction of the full toolbox's code. Built for GOOS=wasip1
// GOARCH=wasm with -tags toolboxlite and embedded by package wasm, which sends it a script
// only after shell.LiteProgram parsed it on the host (with the full shell's parser and word
// expansion) into a program:
//
//	toolbox-lite STMT...
//	STMT := "!" STMT | "&&" STMT STMT | "||" STMT STMT | "c" N WORD...
//
// each token one argument, N the number of WORDs of a command (its name first). It runs the
// statements in order and exits with the last one's status, as the full shell does.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"ceval.dev/ceval/internal/toolbox/cmds"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

type runner struct {
	dir            string
	stdin          io.Reader
	stdout, stderr io.Writer
	exit           int
}

func run(prog []string) (status int) {
	dir, err := os.Getwd()
	if err != nil || dir == "" {
		dir = "/"
	}
	r := &runner{dir: dir, stdin: bufio.NewReader(os.Stdin), stdout: os.Stdout, stderr: os.Stderr}
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(r.stderr, "toolbox: internal error: %v\n", p)
			status = 2
		}
	}()
	for len(prog) > 0 {
		if prog, err = r.stmt(prog); err != nil {
			fmt.Fprintf(r.stderr, "toolbox-lite: %v\n", err)
			return 2
		}
	}
	return r.exit
}

// stmt runs the statement prog starts with and returns the rest. skip parses it without
// running it (the right side of a && or || that does not run).
func (r *runner) stmt(prog []string) ([]string, error) { return r.do(prog, false) }

func (r *runner) do(prog []string, skip bool) ([]string, error) {
	if len(prog) == 0 {
		return nil, fmt.Errorf("program ends inside a statement")
	}
	switch op, rest := prog[0], prog[1:]; op {
	case "!":
		rest, err := r.do(rest, skip)
		if err == nil && !skip {
			if r.exit == 0 {
				r.exit = 1
			} else {
				r.exit = 0
			}
		}
		return rest, err
	case "&&", "||":
		rest, err := r.do(rest, skip)
		if err != nil {
			return nil, err
		}
		runY := !skip && (r.exit == 0) == (op == "&&")
		return r.do(rest, !runY)
	case "c":
		if len(rest) == 0 {
			return nil, fmt.Errorf("command without its word count")
		}
		n, err := strconv.Atoi(rest[0])
		if err != nil || n < 1 || n > len(rest)-1 {
			return nil, fmt.Errorf("bad word count %q", rest[0])
		}
		args := rest[1 : 1+n]
		if !skip {
			r.exit = r.command(args)
		}
		return rest[1+n:], nil
	default:
		return nil, fmt.Errorf("unknown statement %q", op)
	}
}

// command runs one toolbox command as the full shell's runCommand does.
func (r *runner) command(args []string) (status int) {
	name := args[0]
	fn, ok := cmds.Lookup(name)
	if !ok {
		fmt.Fprintf(r.stderr, "toolbox: %s\n", cmds.NotFound(name))
		return 127
	}
	e := &cmds.Env{
		Ctx: context.Background(), Stdin: r.stdin, Stdout: r.stdout, Stderr: r.stderr, Dir: r.dir,
		Getenv:  os.Getenv,
		Environ: os.Environ,
		Run: func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
			return 127 // no lite command runs another
		},
	}
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(r.stderr, "toolbox: %s: internal error: %v\n", name, p)
			status = 2
		}
	}()
	return fn(e, args[1:])
}
