package oci

import (
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestOnlyCevalRunDirMayBeMountedInsideRun(t *testing.T) {
	for _, tt := range []struct {
		dst string
		ok  bool
	}{
		{CevalRunPath, true},
		{"/usr/local/bin/gh", true},
		{"/run", false},
		{"/run/cevalx", false},
		{"/run/ceval/mock.sock", false},
		{"/run/user", false},
	} {
		cfg := reference()
		cfg.ExtraMounts = []Mount{{Source: "/srv/mock", Destination: tt.dst}}
		_, err := SpecOpts(cfg)
		if (err == nil) != tt.ok {
			t.Errorf("extra mount at %s: err %v, want ok=%v", tt.dst, err, tt.ok)
		}
	}
}

func TestCevalRunDirIsReadOnlyAndMountedOverRunTmpfs(t *testing.T) {
	cfg := reference()
	cfg.ExtraMounts = []Mount{{Source: "/srv/mock", Destination: CevalRunPath}}
	s := generate(t, cfg)
	run := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/run" })
	ceval := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == CevalRunPath })
	if run < 0 || ceval < run {
		t.Fatalf("/run at %d, %s at %d: the bind must come after the tmpfs", run, CevalRunPath, ceval)
	}
	if opts := strings.Join(s.Mounts[ceval].Options, ","); !strings.Contains(opts, "ro") || !strings.Contains(opts, "nosuid") {
		t.Errorf("%s options %s", CevalRunPath, opts)
	}
}
