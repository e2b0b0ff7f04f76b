package local

import (
	"context"
	"errors"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/launcher"
)

// GC removes what a ceval process that is gone left behind: launcher.GC's containers,
// snapshots, leases, scratch filesystems and FIFOs, the root overlays of cevals that are gone, then the lock files of the ID slots
// (IDLockDir, or the rootless daemon's) no live process runs as.
func GC(ctx context.Context, c *client.Client) (removed, kept []launcher.Swept, err error) {
	removed, kept, err = launcher.GC(ctx, c)
	// Then the root overlays of a ceval killed before its verifier container existed: no
	// container names them, their directory's name names their ceval.
	r, oerr := launcher.SweepRootOverlays(RootOverlayBase)
	removed, err = append(removed, r...), errors.Join(err, oerr)
	// Last: the dead containers above no longer run as their slots' IDs (a slot whose IDs a
	// process still runs as is kept whatever happened above).
	dir := IDLockDir
	if rl := RootlessMode(); rl != nil {
		dir = rl.LockDir
	}
	r, k, serr := gcIDSlots(dir)
	return append(removed, r...), append(kept, k...), errors.Join(err, serr)
}
