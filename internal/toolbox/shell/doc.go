// Package shell is the toolbox's POSIX-style shell executor: it walks the syntax tree of
// mvdan.cc/sh/v3's parser, expands words with that module's expand package, and runs
// every command in-process from package cmds. Pipelines are goroutines joined by io.Pipe,
// so it needs neither os.Pipe nor exec and works unchanged on GOOS=wasip1.
package shell
