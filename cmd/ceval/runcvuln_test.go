package main

import (
	"strings"
	"testing"
)

func TestRuncAdvisoryWarnsForVersionsBeforeTheEscapeFixes(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want []string // CVEs named; nil = no advisory
	}{
		{"runc version 1.0.0-rc6\ncommit: x", []string{"CVE-2019-5736", "CVE-2024-21626"}},
		{"runc version 1.0.0-rc7", []string{"CVE-2024-21626"}},
		{"runc version 1.0.0-rc10", []string{"CVE-2024-21626"}},
		{"runc version 0.1.1", []string{"CVE-2019-5736", "CVE-2024-21626"}},
		{"runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1+deb12u1", []string{"CVE-2024-21626"}},
		{"runc version 1.1.11", []string{"CVE-2024-21626"}},
		{"runc version 1.1.12", nil},
		{"runc version 1.2.0-rc.1", nil},
		{"runc version 1.2.5", nil},
		{"something else", nil},
	} {
		got := runcAdvisory(tc.out)
		if tc.want == nil {
			if got != "" {
				t.Errorf("%q: advisory %q, want none", tc.out, got)
			}
			continue
		}
		for _, cve := range tc.want {
			if !strings.Contains(got, cve) {
				t.Errorf("%q: advisory %q lacks %s", tc.out, got, cve)
			}
		}
		if len(tc.want) == 1 && strings.Contains(got, "CVE-2019-5736") {
			t.Errorf("%q: advisory %q names CVE-2019-5736, fixed in 1.0.0-rc7", tc.out, got)
		}
	}
}
