// Command standin is a tiny WASI stand-in for the toolbox in tests: `standin -c SCRIPT`
// runs ";"-separated commands (each may end in "> FILE"); with other arguments it runs
// them as one command. The exit status is the last command's.
package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	script := strings.Join(os.Args[1:], " ")
	if len(os.Args) > 2 && os.Args[1] == "-c" {
		script = os.Args[2]
	}
	code := 0
	for _, cmd := range strings.Split(script, ";") {
		code = run(strings.Fields(cmd))
	}
	os.Exit(code)
}

func run(f []string) int {
	if len(f) == 0 {
		return 0
	}
	out := io.Writer(os.Stdout)
	if i := slices.Index(f, ">"); i >= 0 && i+1 < len(f) {
		file, err := os.Create(f[i+1])
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", f[0], err)
			return 1
		}
		defer file.Close()
		out, f = file, f[:i]
	}
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	n, _ := strconv.Atoi(arg(1))
	switch f[0] {
	case "echo":
		fmt.Fprintln(out, strings.Join(f[1:], " "))
	case "cat":
		code := 0
		for _, name := range f[1:] {
			b, err := os.ReadFile(name)
			if err != nil {
				fmt.Fprintf(os.Stderr, "cat: %v\n", err)
				code = 1
			}
			out.Write(b)
		}
		return code
	case "ls":
		dir := arg(1)
		if dir == "" {
			dir = "."
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ls: %v\n", err)
			return 1
		}
		for _, e := range ents {
			fmt.Fprintln(out, e.Name())
		}
	case "ln": // ln -s TARGET NAME
		if err := os.Symlink(arg(2), arg(3)); err != nil {
			fmt.Fprintf(os.Stderr, "ln: %v\n", err)
			return 1
		}
	case "readlink":
		t, err := os.Readlink(arg(1))
		if err != nil {
			fmt.Fprintf(os.Stderr, "readlink: %v\n", err)
			return 1
		}
		fmt.Fprintln(out, t)
	case "mkdir":
		if err := os.MkdirAll(arg(1), 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "mkdir: %v\n", err)
			return 1
		}
	case "pwd":
		wd, _ := os.Getwd()
		fmt.Fprintln(out, wd)
	case "env":
		for _, kv := range os.Environ() {
			fmt.Fprintln(out, kv)
		}
	case "exit":
		return n
	case "sleep":
		time.Sleep(time.Duration(n) * time.Second)
	case "spin": // spin forever
		x := 1
		for {
			x = x*31 + 7
		}
	case "hash": // hash N: N rounds of sha256, CPU-bound
		sum := sha256.Sum256(nil)
		for range n {
			sum = sha256.Sum256(sum[:])
		}
		fmt.Fprintf(out, "%x\n", sum[:4])
	case "alloc": // alloc N: hold N MiB, every byte of it written (ones)
		// Filled by doubling copies, which Go compiles to WebAssembly's memory.copy: a
		// byte-at-a-time loop cost the guest ~38 ms of CPU a MiB, so a 64 MiB bomb took
		// 2.5 s of CPU and, at a tenth of a core on a loaded host, outlasted its 20 s
		// timeout before it reached the memory limit it is there to hit.
		var keep [][]byte
		for range n {
			b := make([]byte, 1<<20)
			b[0] = 1
			for k := 1; k < len(b); k *= 2 {
				copy(b[k:], b[:k])
			}
			keep = append(keep, b)
		}
		fmt.Fprintln(out, len(keep), "MiB")
	case "dirty": // dirty N: count the bytes not zero in N MiB this instance never wrote
		// 64 bytes a step (eight words or'ed), a step's bytes counted only when it is not
		// zero: the same count as a byte loop for a small part of its CPU (0.53 s for
		// 16 MiB a byte at a time, which at a twentieth of a core nears a 20 s timeout).
		dirty := 0
		for range n {
			for ws := make([]uint64, 1<<17); len(ws) >= 8; ws = ws[8:] { // fresh from memory.grow: Go does not clear it
				if ws[0]|ws[1]|ws[2]|ws[3]|ws[4]|ws[5]|ws[6]|ws[7] == 0 {
					continue
				}
				for _, w := range ws[:8] {
					for ; w != 0; w >>= 8 {
						if w&0xff != 0 {
							dirty++
						}
					}
				}
			}
		}
		fmt.Fprintln(out, dirty, "dirty")
	case "flood":
		line := []byte(strings.Repeat("y", 1023) + "\n")
		w := io.Writer(os.Stdout)
		if arg(1) == "stderr" {
			w = os.Stderr
		}
		for {
			w.Write(line)
		}
	case "fill": // fill FILE MiB: write N MiB into FILE
		file, err := os.Create(arg(1))
		if err != nil {
			fmt.Fprintf(os.Stderr, "fill: %v\n", err)
			return 1
		}
		defer file.Close()
		m, _ := strconv.Atoi(arg(2))
		chunk := make([]byte, 1<<20)
		for range m {
			if _, err := file.Write(chunk); err != nil {
				fmt.Fprintf(os.Stderr, "fill: %v\n", err)
				return 1
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "%s: not found\n", f[0])
		return 127
	}
	return 0
}
