package selftest

import (
	"os"
	"path/filepath"
	"testing"

	"ceval.dev/ceval/record"
)

func TestSnapshotChecksFlagAnUnnamedCapAndAnUnboundedPathShape(t *testing.T) {
	dir := t.TempDir()
	manifest := func(size int64) {
		f, err := os.Create(filepath.Join(dir, record.SnapshotFile))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
	run := func(seconds float64, hits ...string) *record.Result {
		r := &record.Result{Dir: dir, LimitsHit: hits}
		r.Timings.Snapshot, r.Timings.Grade = seconds/2, seconds/2
		return r
	}
	pathCap := `snapshot path cap 8 MiB: stopped at "tree/d…"; the directories it was in are incomplete`
	manifest(8 << 20)
	for _, tc := range []struct {
		name   string
		check  func(*record.Result) string
		res    *record.Result
		breach bool
	}{
		{"per-file cap named", checkLimitsHitNames("snapshot per-file cap"), run(1, "timeout 1m0s", "snapshot per-file cap 16 MiB: 2 file(s) omitted"), false},
		{"per-file cap not named", checkLimitsHitNames("snapshot per-file cap"), run(1, "workspace snapshot caps reached; graded what was captured"), true},
		{"path shape bounded", checkPathShapeBounded, run(3, pathCap), false},
		{"path shape too slow", checkPathShapeBounded, run(246, pathCap), true},
		{"path shape under no cap", checkPathShapeBounded, run(3), true},
	} {
		if got := tc.check(tc.res); (got != "") != tc.breach {
			t.Errorf("%s: %q, want breach=%v", tc.name, got, tc.breach)
		}
	}
	manifest(1600 << 20)
	if got := checkPathShapeBounded(run(3, pathCap)); got == "" {
		t.Error("a 1.6 GB snapshot.json passed the path-shape check")
	}
}
