// Package clientbin embeds the static ceval-mock client (built from cmd/ceval-mock by `make
// mockclient` and committed beside this file, so a plain `go build ./cmd/ceval` works) and
// installs it on the host for bind-mounting read-only into agent containers, once per mocked
// tool. It never runs the binary.
package clientbin
