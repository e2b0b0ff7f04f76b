package selftest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"ceval.dev/ceval/record"
)

// checkLimitsHitNames: result.json's limits_hit names the snapshot cap the attack drove the
// workspace past, so what the cap left out is accounted for.
func checkLimitsHitNames(cap string) func(*record.Result) string {
	return func(res *record.Result) string {
		for _, l := range res.LimitsHit {
			if strings.HasPrefix(l, cap) {
				return ""
			}
		}
		return fmt.Sprintf("limits_hit %q does not name the %s", res.LimitsHit, cap)
	}
}

// Bounds on what the path shape (attacks/fool-path-shape) may cost ceval: issue 14's target
// of 20 s to snapshot and grade, and a manifest that is not a copy of every path (1.6 GB once).
const (
	pathShapeMaxSeconds       = 20
	pathShapeMaxManifestBytes = 64 << 20
)

// checkPathShapeBounded: the path shape was snapshotted and graded within the bounds, and
// refused by the path cap, which limits_hit names.
func checkPathShapeBounded(res *record.Result) string {
	if t := res.Timings.Snapshot + res.Timings.Grade; t > pathShapeMaxSeconds {
		return fmt.Sprintf("snapshot and grade took %.1f s, over %d s", t, pathShapeMaxSeconds)
	}
	fi, err := os.Stat(filepath.Join(res.Dir, record.SnapshotFile))
	if err != nil {
		return fmt.Sprintf("no snapshot manifest: %v", err)
	}
	if fi.Size() > pathShapeMaxManifestBytes {
		return fmt.Sprintf("snapshot.json is %d bytes, over %d", fi.Size(), pathShapeMaxManifestBytes)
	}
	return checkLimitsHitNames("snapshot path cap")(res)
}
