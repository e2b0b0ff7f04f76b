// Package initbin embeds the static ceval-init binary (built from cmd/ceval-init by
// `make init` and committed beside this file, so a plain `go build ./cmd/ceval` works) and
// installs it on the host for bind-mounting read-only as PID 1 of agent containers.
// It never runs the binary and knows nothing of containers.
package initbin
