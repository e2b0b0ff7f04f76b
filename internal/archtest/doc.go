// Package archtest holds the tests that keep docs/ARCHITECTURE.md true: the package rules (a
// table, one subtest each, checked against `go list`; the document's rule list is generated
// from it) and the import table (compared with the module's real imports). After an import or
// a rule changed, `go test ./internal/archtest -update` rewrites both; read the diff: a new
// arrow may break a rule.
package archtest
