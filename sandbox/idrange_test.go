package sandbox

import (
	"strings"
	"testing"

	"ceval.dev/ceval/oci"
)

func TestIDRangeOverlappingAHostAccountIsRefused(t *testing.T) {
	r := IDRange{Start: 100000, Slots: 2}
	for _, tc := range []struct {
		file    hostIDFile
		content string
		who     string
	}{
		{hostIDFile{"/etc/passwd", 2, false}, "root:x:0:0::/root:/bin/sh\nbob:x:100001:100001::/home/bob:/bin/sh\n", "bob"},
		{hostIDFile{"/etc/group", 2, false}, "root:x:0:\nbig:x:231071:\n", "big"},
		{hostIDFile{"/etc/subuid", 1, true}, "alice:50000:65536\n", "alice"},
		{hostIDFile{"/etc/subgid", 1, true}, "carol:1:4294967294\n", "carol"},
	} {
		_, _, who, err := overlapIn(strings.NewReader(tc.content), tc.file, uint64(r.Start), uint64(r.Start)+2*oci.IDRangeSize)
		if err != nil || who != tc.who {
			t.Errorf("%s: overlap %q (%v), want %q", tc.file.path, who, err, tc.who)
		}
	}
	_, _, who, _ := overlapIn(strings.NewReader("alice:100000000:65536\nbob:x\n# 100001\n"), hostIDFile{"/etc/subuid", 1, true}, uint64(r.Start), uint64(r.Start)+2*oci.IDRangeSize)
	if who != "" {
		t.Errorf("%q overlaps, want none", who)
	}
}

func TestIDRangeOutOfBoundsIsRefused(t *testing.T) {
	for _, r := range []IDRange{{Start: 1 << 31, Slots: 0}, {Start: 0, Slots: 1}, {Start: 1<<32 - 65536, Slots: 1}, {Start: 1 << 31, Slots: 1 << 15}} {
		if err := r.Check(); err == nil || !strings.Contains(err.Error(), "id_range") {
			t.Errorf("%+v: got %v, want an id_range error", r, err)
		}
	}
	if err := DefaultIDRange.Check(); err != nil {
		t.Errorf("the default range is refused on this host: %v", err)
	}
}
