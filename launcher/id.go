package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/containerd/containerd/v2/pkg/identifiers"
)

// MaxContainerIDLen bounds ContainerID: containerd takes 76, but the ID is also the run-id label
// and oci.Config's RunID, which take 64.
const MaxContainerIDLen = 64

// ContainerIDPrefix starts every ContainerID; GC sweeps only snapshots keyed with it.
const ContainerIDPrefix = "ceval-"

// ContainerID is the one place a containerd ID (container, rootfs snapshot, the run's labels)
// is made from free text such as "<run>-<variant>-<task>-<repeat>": ContainerIDPrefix+name when
// that is a valid identifier (identifiers.Validate) of at most MaxContainerIDLen characters,
// else the start of name with each invalid run of characters made one "-", then "-" and 16 hex
// digits of name's SHA-256, so two names that differ only past the cut or in a replaced
// character still get different IDs.
func ContainerID(name string) string {
	id := ContainerIDPrefix + name
	if len(id) <= MaxContainerIDLen && identifiers.Validate(id) == nil {
		return id
	}
	sum := sha256.Sum256([]byte(name))
	tag := hex.EncodeToString(sum[:8])
	var b strings.Builder
	sep := true // the prefix ends in a separator: none may follow it
	for i := 0; i < len(name) && b.Len() < MaxContainerIDLen-len(ContainerIDPrefix)-1-len(tag); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			b.WriteByte(c)
			sep = false
		case !sep:
			if c != '.' && c != '_' {
				c = '-'
			}
			b.WriteByte(c)
			sep = true
		}
	}
	s := b.String()
	if !sep {
		s += "-"
	}
	return ContainerIDPrefix + s + tag
}
