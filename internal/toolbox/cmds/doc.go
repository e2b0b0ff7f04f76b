// Package cmds implements the commands of the ceval toolbox (cat, grep, sed, awk, jq, ...)
// as plain Go functions that run in-process over an Env. It never starts a program: the
// registry is the complete set of commands a grading script can run. Every command reads
// its options with the one flagSet parser, which stops at the first operand and at "--", so
// workspace file names can never become options.
package cmds
