// Package probebin embeds the static ceval-probe binary (built from cmd/ceval-probe by `make
// probe` and committed beside this file, so a plain `go build ./cmd/ceval` works): the agent
// of the selftest attack kernel-syscalls, which the selftest adds to that attack's image. It
// never runs the binary.
package probebin
