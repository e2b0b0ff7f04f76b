package mockd

import (
	"fmt"
	"os"
	"strconv"

	"ceval.dev/ceval/internal/idmap"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// HostUID maps containerUID, a UID inside a container's user namespace, to the UID this
// process's user namespace sees for it, through the namespace's UID mappings as the OCI spec
// writes them (linux.uidMappings: containerID, hostID, size). SO_PEERCRED reports a peer's UID
// in the reader's namespace, so this is the UID the server must allow for the agent. No
// mappings: the container shares this user namespace and the UID is itself. A UID no range
// maps is an error: such a process would run as the overflow UID (65534), which the server
// must never serve.
func HostUID(containerUID uint32, mappings []specs.LinuxIDMapping) (uint32, error) {
	if len(mappings) == 0 {
		return containerUID, nil
	}
	for _, m := range mappings {
		if m.Size == 0 || containerUID < m.ContainerID || containerUID-m.ContainerID >= m.Size {
			continue
		}
		host := uint64(m.HostID) + uint64(containerUID-m.ContainerID)
		if host >= 1<<32-1 { // past the 32-bit range, or (uid_t)-1, which no process can have
			return 0, fmt.Errorf("container UID %d maps past the host's UID range (mapping %d %d %d)", containerUID, m.ContainerID, m.HostID, m.Size)
		}
		return uint32(host), nil
	}
	return 0, fmt.Errorf("container UID %d is in none of the user namespace's UID mappings %s: "+
		"map it (the agent runs as it) or the mock server cannot tell the agent's connections from others", containerUID, describe(mappings))
}

func describe(ms []specs.LinuxIDMapping) string {
	s := ""
	for i, m := range ms {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("[%d..%d]->%d", m.ContainerID, uint64(m.ContainerID)+uint64(m.Size)-1, m.HostID)
	}
	if s == "" {
		return "(none)"
	}
	return s
}

// ReadUIDMap reads the UID mappings of process pid's user namespace as this process sees
// them (/proc/PID/uid_map: inside, outside relative to the reader's namespace, size). Read
// from the host for a container's init, it states how the agent's UID appears to
// SO_PEERCRED here, whether the mappings came from the spec or from a rootless runtime's own
// namespace. A process in our own namespace shows the identity mapping.
func ReadUIDMap(pid int) ([]specs.LinuxIDMapping, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/uid_map")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return idmap.Parse(f)
}
