package probebin

import (
	_ "embed"

	"ceval.dev/ceval/internal/embedbin"
)

//go:embed ceval-probe
var binary []byte

var bin = embedbin.New("ceval-probe", binary)

// Bytes returns the embedded static probe binary. Callers must not modify it.
func Bytes() []byte { return bin.Bytes() }

// SHA256 returns the hex SHA-256 digest of Bytes.
func SHA256() string { return bin.SHA256() }
