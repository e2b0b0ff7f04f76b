// Package idmap parses the kernel's user-namespace ID maps (/proc/PID/uid_map and gid_map),
// strictly: the attestation and the mock server's peer check both decide on them.
package idmap

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// Parse reads the lines of a uid_map or gid_map (ID inside the namespace, ID in the reader's
// namespace, count); a line that is not three 32-bit numbers is an error.
func Parse(r io.Reader) ([]specs.LinuxIDMapping, error) {
	out := []specs.LinuxIDMapping{}
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("id map line %q: want 3 fields", sc.Text())
		}
		var v [3]uint32
		for i := range f {
			n, err := strconv.ParseUint(f[i], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("id map line %q: %w", sc.Text(), err)
			}
			v[i] = uint32(n)
		}
		out = append(out, specs.LinuxIDMapping{ContainerID: v[0], HostID: v[1], Size: v[2]})
	}
	return out, sc.Err()
}

// ToParent maps id, an ID of a user namespace whose map is m (as the namespace's own
// /proc/PID/uid_map reads from inside it: ID inside, ID in the parent, count), to the parent
// namespace's numbering; an ID m does not map is an error.
func ToParent(id uint32, m []specs.LinuxIDMapping) (uint32, error) {
	for _, r := range m {
		if id >= r.ContainerID && id-r.ContainerID < r.Size {
			return r.HostID + (id - r.ContainerID), nil
		}
	}
	return 0, fmt.Errorf("id %d is not mapped to the parent namespace by %v", id, m)
}

// RangesToParent renumbers ranges (a child namespace's map, its HostIDs in the numbering of
// the namespace m describes) in the numbering of m's parent: each range keeps its ContainerID
// and is split where it crosses two of m's extents. A range of which any ID is unmapped is an
// error.
func RangesToParent(ranges, m []specs.LinuxIDMapping) ([]specs.LinuxIDMapping, error) {
	out := []specs.LinuxIDMapping{}
	for _, r := range ranges {
		cid, id, left := uint64(r.ContainerID), uint64(r.HostID), uint64(r.Size)
		for left > 0 {
			i := slices.IndexFunc(m, func(e specs.LinuxIDMapping) bool {
				return id >= uint64(e.ContainerID) && id-uint64(e.ContainerID) < uint64(e.Size)
			})
			if i < 0 {
				return nil, fmt.Errorf("id %d of range %v is not mapped to the parent namespace by %v", id, r, m)
			}
			e := m[i]
			n := min(left, uint64(e.ContainerID)+uint64(e.Size)-id)
			out = append(out, specs.LinuxIDMapping{ContainerID: uint32(cid), HostID: e.HostID + uint32(id-uint64(e.ContainerID)), Size: uint32(n)})
			cid, id, left = cid+n, id+n, left-n
		}
	}
	return out, nil
}
