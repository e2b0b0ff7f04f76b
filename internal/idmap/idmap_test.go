package idmap

import (
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

func TestParseIsStrict(t *testing.T) {
	got, err := Parse(strings.NewReader("         0          0 4294967295\n  2000 3456 2\n"))
	if err != nil || len(got) != 2 || got[0].Size != 4294967295 || got[1].HostID != 3456 || got[1].ContainerID != 2000 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"0 0\n", "a b c\n", "0 0 4294967296\n", "1 2 3 4\n"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// rootlesskit's child as the user 1002 with subordinate IDs 1245184.. sees itself.
var rootlesskitMap = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1002, Size: 1}, {ContainerID: 1, HostID: 1245184, Size: 1114112}}

func TestToParentRenumbersThroughTheNamespacesMap(t *testing.T) {
	for _, tc := range []struct {
		id, want uint32
		ok       bool
	}{
		{0, 1002, true},
		{1, 1245184, true},
		{67536, 1245184 + 67535, true},
		{1114112, 1245184 + 1114111, true},
		{1114113, 0, false},
	} {
		got, err := ToParent(tc.id, rootlesskitMap)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ToParent(%d) = %d, %v; want %d (ok %v)", tc.id, got, err, tc.want, tc.ok)
		}
	}
}

func TestRangesToParentSplitsAtExtentsAndRefusesUnmappedIDs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ranges []specs.LinuxIDMapping
		want   []specs.LinuxIDMapping
	}{
		{"a run's slice", []specs.LinuxIDMapping{{ContainerID: 0, HostID: 65536, Size: 65536}},
			[]specs.LinuxIDMapping{{ContainerID: 0, HostID: 1245184 + 65535, Size: 65536}}},
		{"across the daemon's own ID", []specs.LinuxIDMapping{{ContainerID: 5, HostID: 0, Size: 3}},
			[]specs.LinuxIDMapping{{ContainerID: 5, HostID: 1002, Size: 1}, {ContainerID: 6, HostID: 1245184, Size: 2}}},
		{"past the end", []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1114100, Size: 65536}}, nil},
	} {
		got, err := RangesToParent(tc.ranges, rootlesskitMap)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%s: %v renumbered to %v, want an error", tc.name, tc.ranges, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
