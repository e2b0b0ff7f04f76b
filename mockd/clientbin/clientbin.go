package clientbin

import (
	_ "embed"

	"ceval.dev/ceval/internal/embedbin"
)

//go:embed ceval-mock
var binary []byte

var bin = embedbin.New("ceval-mock", binary)

// Bytes returns the embedded static mock client. Callers must not modify it.
func Bytes() []byte { return bin.Bytes() }

// SHA256 returns the hex SHA-256 digest of Bytes.
func SHA256() string { return bin.SHA256() }

// Install makes sure dir (created 0755 if missing) holds the static mock client as
// ceval-mock-<first 12 hex digits of SHA256>, mode 0555, owned by the caller, with exactly the
// embedded content, replacing anything else there (a planted symlink included) atomically;
// it returns the path. See embedbin.Binary.Install.
func Install(dir string) (string, error) { return bin.Install(dir) }
