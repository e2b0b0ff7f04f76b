// Package idmap parses the kernel's user-namespace ID maps (/proc/PID/uid_map and gid_map),
// strictly: the attestation and the mock server's peer check both decide on them.
package idmap

import (
	"bufio"
	"fmt"
	"io"
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
