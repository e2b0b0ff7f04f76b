// Package attest parses what a container's init reports of its own isolation (its
// /proc/PID status, uid_map, gid_map, limits, net/dev and cgroup files, and its pids cgroup's
// limit) into a record.Attestation. It reads nothing itself: the caller's Read gives the
// bytes, from the host's /proc (supervisor) or from an init's report over the wire (kube),
// so both are checked by the same parser.
package attest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"ceval.dev/ceval/internal/idmap"
	"ceval.dev/ceval/record"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Read returns one file an attestation is made of: a name relative to the process's /proc
// directory ("status", "uid_map", "gid_map", "limits", "net/dev", "cgroup"), or the absolute
// path of a cgroup file under the cgroupRoot given to Parse. A missing file is an error
// matching fs.ErrNotExist.
type Read func(name string) ([]byte, error)

// Parse reads the process's credentials, capability sets, no_new_privs and seccomp mode
// from status, its ID maps, its resource limits, its network interfaces from net/dev and its
// pids limit from its cgroup (v1 or v2, below cgroupRoot). what names the process in errors
// ("/proc/42").
func Parse(read Read, cgroupRoot, what string) (*record.Attestation, error) {
	status, err := read("status")
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
			return 0, fmt.Errorf("attest: no %s in %s/status", k, what)
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
	if a.UIDMap, err = readIDMap(read, what, "uid_map"); err != nil {
		return nil, err
	}
	if a.GIDMap, err = readIDMap(read, what, "gid_map"); err != nil {
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
	if a.Rlimits, err = readRlimits(read, what); err != nil {
		return nil, err
	}
	a.CapInh, a.CapPrm, a.CapEff, a.CapBnd, a.CapAmb = fields["CapInh"], fields["CapPrm"], fields["CapEff"], fields["CapBnd"], fields["CapAmb"]
	if a.NoNewPrivs, err = firstInt("NoNewPrivs"); err != nil {
		return nil, err
	}
	if a.Seccomp, err = firstInt("Seccomp"); err != nil {
		return nil, err
	}
	if a.Interfaces, err = interfaces(read); err != nil {
		return nil, err
	}
	if a.PidsMax, err = pidsMax(read, cgroupRoot, what); err != nil {
		return nil, err
	}
	return a, nil
}

// readIDMap reads a uid_map or gid_map.
func readIDMap(read Read, what, name string) ([]specs.LinuxIDMapping, error) {
	data, err := read(name)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	m, err := idmap.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("attest: %s/%s: %w", what, name, err)
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

// readRlimits reads limits; "unlimited" reads as the all-ones value.
func readRlimits(read Read, what string) ([]specs.POSIXRlimit, error) {
	data, err := read("limits")
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	path := what + "/limits"
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

func interfaces(read Read) ([]string, error) {
	data, err := read("net/dev")
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
func pidsMax(read Read, cgroupRoot, what string) (string, error) {
	data, err := read("cgroup")
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
		v, err := read(filepath.Join(dir, "pids.max"))
		if parts[2] == "/" && errors.Is(err, fs.ErrNotExist) {
			return "max", nil // a root cgroup has no pids.max: nothing limits it (rootless, rlimit mode)
		}
		if err != nil {
			return "", fmt.Errorf("attest: pids.max: %w", err)
		}
		return strings.TrimSpace(string(v)), nil
	}
	return "", fmt.Errorf("attest: no pids cgroup in %s/cgroup", what)
}

func containsField(list, f string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == f {
			return true
		}
	}
	return false
}
