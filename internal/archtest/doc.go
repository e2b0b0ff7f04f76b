// Package archtest holds the test that keeps docs/ARCHITECTURE.md true: the package rules it
// states, checked against `go list`, and its generated import table, compared with the
// module's real imports (run `go test ./internal/archtest -update` to rewrite the table
// after an import changed, and read the diff: a new arrow may break a rule).
package archtest
