package sandbox

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"ceval.dev/ceval/record"
)

// Policy is what an attestation must show for a run to be graded.
type Policy struct {
	UID, GID int // inside the container
	PidsMax  int64
	// PidsByRlimit: no pids cgroup of the run's own (rootless, rlimit mode); RLIMIT_NPROC in
	// Rlimits holds pids instead, and pids.max is not checked.
	PidsByRlimit bool
	Network      string                 // "none": loopback only
	IDMap        []specs.LinuxIDMapping // the run's user namespace: both uid_map and gid_map
	Rlimits      []specs.POSIXRlimit    // each must be in force exactly
	// Caps are the bounding, permitted and effective sets (a root verifier's
	// oci.VerifierRootCaps); nil: none. Inheritable and ambient are always empty.
	Caps []string
}

// capBits are the capability numbers of the names a Policy may list.
var capBits = map[string]uint{
	"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_FSETID": 4, "CAP_KILL": 5,
	"CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETFCAP": 31,
}

// capMask is caps as /proc/PID/status shows a capability set.
func capMask(caps []string) string {
	var m uint64
	for _, c := range caps {
		b, ok := capBits[c]
		if !ok {
			return "unknown capability " + c
		}
		m |= 1 << b
	}
	return fmt.Sprintf("%016x", m)
}

const noCaps = "0000000000000000"

// CheckAttestation returns every way the attestation differs from policy; a run with any is ERROR.
func CheckAttestation(a *record.Attestation, p Policy) error {
	var bad []string
	if a.UID != p.UID || a.GID != p.GID {
		bad = append(bad, fmt.Sprintf("uid/gid %d/%d, want %d/%d", a.UID, a.GID, p.UID, p.GID))
	}
	for _, g := range a.Groups {
		if g != p.GID {
			bad = append(bad, fmt.Sprintf("supplementary group %d", g))
		}
	}
	caps := capMask(p.Caps)
	for name, v := range map[string]string{"CapInh": a.CapInh, "CapPrm": a.CapPrm, "CapEff": a.CapEff, "CapBnd": a.CapBnd, "CapAmb": a.CapAmb} {
		want := caps
		if name == "CapInh" || name == "CapAmb" {
			want = noCaps
		}
		if v != want {
			bad = append(bad, fmt.Sprintf("%s %q, want %s", name, v, want))
		}
	}
	if a.NoNewPrivs != 1 {
		bad = append(bad, "no_new_privs not set")
	}
	if a.Seccomp != 2 {
		bad = append(bad, fmt.Sprintf("seccomp mode %d, want 2 (filter)", a.Seccomp))
	}
	if !p.PidsByRlimit && a.PidsMax != strconv.FormatInt(p.PidsMax, 10) {
		bad = append(bad, fmt.Sprintf("pids.max %q, want %d", a.PidsMax, p.PidsMax))
	}
	if !slices.Equal(a.UIDMap, p.IDMap) {
		bad = append(bad, fmt.Sprintf("uid_map %v, want %v", a.UIDMap, p.IDMap))
	}
	if !slices.Equal(a.GIDMap, p.IDMap) {
		bad = append(bad, fmt.Sprintf("gid_map %v, want %v", a.GIDMap, p.IDMap))
	}
	for _, want := range p.Rlimits {
		i := slices.IndexFunc(a.Rlimits, func(r specs.POSIXRlimit) bool { return r.Type == want.Type })
		if i < 0 || a.Rlimits[i] != want {
			bad = append(bad, fmt.Sprintf("%s not %d/%d", want.Type, want.Soft, want.Hard))
		}
	}
	if p.Network == "none" && (len(a.Interfaces) != 1 || a.Interfaces[0] != "lo") {
		bad = append(bad, fmt.Sprintf("network interfaces %v, want only lo", a.Interfaces))
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("isolation attestation does not match policy: %s", strings.Join(bad, "; "))
	}
	return nil
}
