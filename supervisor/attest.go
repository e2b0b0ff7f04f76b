package supervisor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"ceval.dev/ceval/internal/idmap"
	"ceval.dev/ceval/record"
	specs "github.com/opencontainers/runtime-spec/specs-go"
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
}

// procRoot is /proc; tests point it elsewhere.
var procRoot = "/proc"

// cgroupRoot is /sys/fs/cgroup; tests point it elsewhere.
var cgroupRoot = "/sys/fs/cgroup"

// ReadAttestation reads pid's credentials, capability sets, no_new_privs and seccomp mode
// from /proc/<pid>/status, its network interfaces from /proc/<pid>/net/dev, and its pids
// limit from its cgroup.
func ReadAttestation(pid uint32) (*record.Attestation, error) {
	base := filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10))
	status, err := os.ReadFile(filepath.Join(base, "status"))
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	a := &record.Attestation{Groups: []int{}}
	fields := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	firstInt := func(k string) (int, error) {
		f := strings.Fields(fields[k])
		if len(f) == 0 {
			return 0, fmt.Errorf("attest: no %s in /proc/%d/status", k, pid)
		}
		return strconv.Atoi(f[0])
	}
	// Uid and Gid lines are real, effective, saved, filesystem: all four must agree.
	for _, k := range []string{"Uid", "Gid"} {
		f := strings.Fields(fields[k])
		if len(f) != 4 || f[0] != f[1] || f[1] != f[2] || f[2] != f[3] {
			return nil, fmt.Errorf("attest: %s line %q is not one identity", k, fields[k])
		}
	}
	if a.HostUID, err = firstInt("Uid"); err != nil {
		return nil, err
	}
	if a.HostGID, err = firstInt("Gid"); err != nil {
		return nil, err
	}
	if a.UIDMap, err = readIDMap(filepath.Join(base, "uid_map")); err != nil {
		return nil, err
	}
	if a.GIDMap, err = readIDMap(filepath.Join(base, "gid_map")); err != nil {
		return nil, err
	}
	if a.UID, err = inside(a.HostUID, a.UIDMap); err != nil {
		return nil, fmt.Errorf("attest: uid: %w", err)
	}
	if a.GID, err = inside(a.HostGID, a.GIDMap); err != nil {
		return nil, fmt.Errorf("attest: gid: %w", err)
	}
	for _, g := range strings.Fields(fields["Groups"]) {
		n, err := strconv.Atoi(g)
		if err != nil {
			return nil, fmt.Errorf("attest: Groups %q", fields["Groups"])
		}
		if n, err = inside(n, a.GIDMap); err != nil {
			return nil, fmt.Errorf("attest: supplementary group: %w", err)
		}
		a.Groups = append(a.Groups, n)
	}
	if a.Rlimits, err = readRlimits(filepath.Join(base, "limits")); err != nil {
		return nil, err
	}
	a.CapInh, a.CapPrm, a.CapEff, a.CapBnd, a.CapAmb = fields["CapInh"], fields["CapPrm"], fields["CapEff"], fields["CapBnd"], fields["CapAmb"]
	if a.NoNewPrivs, err = firstInt("NoNewPrivs"); err != nil {
		return nil, err
	}
	if a.Seccomp, err = firstInt("Seccomp"); err != nil {
		return nil, err
	}
	if a.Interfaces, err = interfaces(filepath.Join(base, "net", "dev")); err != nil {
		return nil, err
	}
	a.PidsMax, err = pidsMax(filepath.Join(base, "cgroup"))
	if err != nil {
		return nil, err
	}
	return a, nil
}

// readIDMap reads a /proc/PID/uid_map or gid_map.
func readIDMap(path string) ([]specs.LinuxIDMapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	defer f.Close()
	m, err := idmap.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("attest: %s: %w", path, err)
	}
	return m, nil
}

// inside maps a host ID into the namespace of m; an ID m does not map is an error.
func inside(host int, m []specs.LinuxIDMapping) (int, error) {
	for _, r := range m {
		if host >= int(r.HostID) && host-int(r.HostID) < int(r.Size) {
			return int(r.ContainerID) + host - int(r.HostID), nil
		}
	}
	return 0, fmt.Errorf("host ID %d is not mapped into the container's user namespace %v", host, m)
}

// rlimitNames are the /proc/PID/limits rows of the limits a policy may set.
var rlimitNames = map[string]string{
	"Max open files":      "RLIMIT_NOFILE",
	"Max core file size":  "RLIMIT_CORE",
	"Max processes":       "RLIMIT_NPROC",
	"Max msgqueue size":   "RLIMIT_MSGQUEUE",
	"Max address space":   "RLIMIT_AS",
	"Max file size":       "RLIMIT_FSIZE",
	"Max locked memory":   "RLIMIT_MEMLOCK",
	"Max pending signals": "RLIMIT_SIGPENDING",
	"Max stack size":      "RLIMIT_STACK",
	"Max cpu time":        "RLIMIT_CPU",
}

// readRlimits reads /proc/PID/limits; "unlimited" reads as the all-ones value.
func readRlimits(path string) ([]specs.POSIXRlimit, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	var out []specs.POSIXRlimit
	for _, line := range strings.Split(string(data), "\n") {
		for name, typ := range rlimitNames {
			rest, ok := strings.CutPrefix(line, name+" ")
			if !ok {
				continue
			}
			f := strings.Fields(rest)
			if len(f) < 2 {
				return nil, fmt.Errorf("attest: %s: line %q", path, line)
			}
			var v [2]uint64
			for i := range v {
				if f[i] == "unlimited" {
					v[i] = ^uint64(0)
				} else if v[i], err = strconv.ParseUint(f[i], 10, 64); err != nil {
					return nil, fmt.Errorf("attest: %s: line %q", path, line)
				}
			}
			out = append(out, specs.POSIXRlimit{Type: typ, Soft: v[0], Hard: v[1]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out, nil
}

func interfaces(netDev string) ([]string, error) {
	data, err := os.ReadFile(netDev)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		name, _, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if ok && name != "" && !strings.Contains(name, "|") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// pidsMax reads pids.max of the process's pids cgroup, v1 (a "pids" line) or v2 ("0::").
func pidsMax(cgroupFile string) (string, error) {
	data, err := os.ReadFile(cgroupFile)
	if err != nil {
		return "", fmt.Errorf("attest: %w", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir = filepath.Join(cgroupRoot, parts[2])
		case containsField(parts[1], "pids"):
			dir = filepath.Join(cgroupRoot, "pids", parts[2])
		default:
			continue
		}
		v, err := os.ReadFile(filepath.Join(dir, "pids.max"))
		if parts[2] == "/" && errors.Is(err, fs.ErrNotExist) {
			return "max", nil // a root cgroup has no pids.max: nothing limits it (rootless, rlimit mode)
		}
		if err != nil {
			return "", fmt.Errorf("attest: pids.max: %w", err)
		}
		return strings.TrimSpace(string(v)), nil
	}
	return "", fmt.Errorf("attest: no pids cgroup in %s", cgroupFile)
}

func containsField(list, f string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == f {
			return true
		}
	}
	return false
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
	for name, v := range map[string]string{"CapInh": a.CapInh, "CapPrm": a.CapPrm, "CapEff": a.CapEff, "CapBnd": a.CapBnd, "CapAmb": a.CapAmb} {
		if v != noCaps {
			bad = append(bad, fmt.Sprintf("%s %q, want none", name, v))
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

// execed reports whether pid has finished its execve into the init: its command name is
// then the init's, no longer runc's.
func execed(pid uint32, comm string) bool {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "comm"))
	return err == nil && strings.TrimSpace(string(data)) == comm
}
