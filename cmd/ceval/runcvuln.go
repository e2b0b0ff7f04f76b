package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// runcFix is a runc release that fixed a container-escape CVE.
type runcFix struct {
	cve   string
	fixed runcVersion
	what  string
}

// runcFixes lists the runtime-layer escapes ceval selftest cannot prove absent on its own
// (they need a runc exec or a leaked fd at the moment of the exploit).
var runcFixes = []runcFix{
	{"CVE-2019-5736", runcVersion{1, 0, 0, 7}, "overwrite of the host runc binary through /proc/self/exe"},
	{"CVE-2024-21626", runcVersion{1, 1, 12, 0}, "a leaked host working directory or file descriptor (\"Leaky Vessels\")"},
}

// runcVersion is major.minor.patch and a release-candidate number (0 for a final release).
type runcVersion struct{ major, minor, patch, rc int }

func (v runcVersion) less(w runcVersion) bool {
	a := [4]int{v.major, v.minor, v.patch, v.rcRank()}
	b := [4]int{w.major, w.minor, w.patch, w.rcRank()}
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// rcRank orders 1.0.0-rc1 < 1.0.0-rc7 < 1.0.0.
func (v runcVersion) rcRank() int {
	if v.rc == 0 {
		return 1 << 30
	}
	return v.rc
}

var runcVersionRE = regexp.MustCompile(`runc version (\d+)\.(\d+)\.(\d+)(?:-rc\.?(\d+))?`)

// parseRuncVersion reads the first line of `runc --version` ("runc version 1.1.5+ds1").
func parseRuncVersion(out string) (runcVersion, bool) {
	m := runcVersionRE.FindStringSubmatch(out)
	if m == nil {
		return runcVersion{}, false
	}
	var v runcVersion
	for i, p := range []*int{&v.major, &v.minor, &v.patch, &v.rc} {
		if m[i+1] != "" {
			*p, _ = strconv.Atoi(m[i+1])
		}
	}
	return v, true
}

// runcAdvisory says which known runc escapes a version predates, "" when none (or when the
// version cannot be read). Distributions backport fixes without changing the upstream
// version, so this is a warning to check, never a failure.
func runcAdvisory(versionOutput string) string {
	v, ok := parseRuncVersion(versionOutput)
	if !ok {
		return ""
	}
	var hits []string
	for _, f := range runcFixes {
		if v.less(f.fixed) {
			hits = append(hits, fmt.Sprintf("%s (%s; fixed upstream in %s)", f.cve, f.what, f.fixed))
		}
	}
	if len(hits) == 0 {
		return ""
	}
	return fmt.Sprintf("runc %s predates the fix for %s; distributions often backport it, so check yours", v, strings.Join(hits, " and "))
}

func (v runcVersion) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch)
	if v.rc > 0 {
		s += fmt.Sprintf("-rc%d", v.rc)
	}
	return s
}
