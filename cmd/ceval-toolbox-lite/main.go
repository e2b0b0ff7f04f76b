// Command ceval-toolbox-lite is the small toolbox: the commands of cmds.LiteNames and the
// && / || / ! of a shell, without the shell's parser or any other command, so wazero
// validates and compiles a fraction of the full toolbox's code. Built for GOOS=wasip1
// GOARCH=wasm with -tags toolboxlite and embedded by package wasm, which sends it a script
// only after shell.LiteProgram parsed it on the host (with the full shell's parser and word
// expansion) into a program:
//
//	toolbox-lite STMT...
//	STMT := "!" STMT | "&&" STMT STMT | "||" STMT STMT | "|" N CMD... | CMD
//	CMD  := ["r" N REDIR...] "c" N WORD...
//	REDIR := "o-" | "e-" | "e>o" | "o>e"
//
// each token one argument, N the number of WORDs of a command (its name first), of the
// commands of a pipeline or of a command's redirections (stdout or stderr to /dev/null,
// 2>&1, >&2; applied left to right). It runs the statements in order and exits with the last one's
// status, as the full shell does.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"ceval.dev/ceval/internal/toolbox/cmds"
	"ceval.dev/ceval/internal/toolbox/pipeline"
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
	// As the full shell's, the streams are locked: a pipeline's stages write concurrently.
	var mu sync.Mutex
	r := &runner{dir: dir, stdin: bufio.NewReader(os.Stdin), stdout: pipeline.Locked(&mu, os.Stdout), stderr: pipeline.Locked(&mu, os.Stderr)}
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
	case "c", "r":
		cmd, rest, err := parseCommand(prog)
		if err != nil {
			return nil, err
		}
		if !skip {
			r.exit = r.command(cmd, r.stdin, r.stdout, r.stderr)
		}
		return rest, nil
	case "|":
		n, err := count(rest)
		if err != nil || n < 2 {
			return nil, fmt.Errorf("bad pipeline length")
		}
		rest = rest[1:]
		stages := make([]command, n)
		for i := range stages {
			if stages[i], rest, err = parseCommand(rest); err != nil {
				return nil, err
			}
		}
		if !skip {
			r.exit = r.pipeline(stages)
		}
		return rest, nil
	default:
		return nil, fmt.Errorf("unknown statement %q", op)
	}
}

// count reads the count that starts prog.
func count(prog []string) (int, error) {
	if len(prog) == 0 {
		return 0, fmt.Errorf("count missing")
	}
	n, err := strconv.Atoi(prog[0])
	if err != nil || n < 1 || n > len(prog)-1 {
		return 0, fmt.Errorf("bad count %q", prog[0])
	}
	return n, nil
}

// command is one command with its redirections.
type command struct {
	redirs, args []string
}

// parseCommand reads one ["r" N REDIR...] "c" N WORD... and returns it and the rest.
func parseCommand(prog []string) (cmd command, rest []string, err error) {
	if len(prog) > 0 && prog[0] == "r" {
		n, err := count(prog[1:])
		if err != nil {
			return cmd, nil, err
		}
		cmd.redirs, prog = prog[2:2+n], prog[2+n:]
	}
	if len(prog) == 0 || prog[0] != "c" {
		return cmd, nil, fmt.Errorf("command expected")
	}
	n, err := count(prog[1:])
	if err != nil {
		return cmd, nil, err
	}
	cmd.args = prog[2 : 2+n]
	return cmd, prog[2+n:], nil
}

// pipeline runs the stages as the full shell's pipeline does: each stage but the last in a
// goroutine writing through a 64 KiB buffer into an io.Pipe, the last in this one; when it
// ends its input pipe is closed (the stage before sees a broken pipe). The status is the
// last stage's (no pipefail).
func (r *runner) pipeline(stages []command) int {
	statuses := pipeline.Run(len(stages), r.stdin, r.stdout, r.stderr, func(i int, in io.Reader, out io.Writer) int {
		return r.command(stages[i], in, out, r.stderr)
	})
	return statuses[len(stages)-1]
}

// command runs one toolbox command as the full shell's runCommand does, its streams first
// redirected as the full shell's redirect does.
func (r *runner) command(cmd command, stdin io.Reader, stdout, stderr io.Writer) (status int) {
	for _, op := range cmd.redirs {
		switch op {
		case "o-":
			stdout = io.Discard
		case "e-":
			stderr = io.Discard
		case "e>o":
			stderr = stdout
		case "o>e":
			stdout = stderr
		default:
			fmt.Fprintf(r.stderr, "toolbox-lite: unknown redirection %q\n", op)
			return 2
		}
	}
	args := cmd.args
	name := args[0]
	fn, ok := cmds.Lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "toolbox: %s\n", cmds.NotFound(name))
		return 127
	}
	e := &cmds.Env{
		Ctx: context.Background(), Stdin: stdin, Stdout: stdout, Stderr: stderr, Dir: r.dir,
		Getenv:  os.Getenv,
		Environ: os.Environ,
		Run: func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
			return 127 // no lite command runs another
		},
	}
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "toolbox: %s: internal error: %v\n", name, p)
			status = 2
		}
	}()
	return fn(e, args[1:])
}
