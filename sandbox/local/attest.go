package local

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	attestparse "ceval.dev/ceval/internal/attest"
	"ceval.dev/ceval/record"
)

// procRoot is /proc; tests point it elsewhere.
var procRoot = "/proc"

// cgroupRoot is /sys/fs/cgroup; tests point it elsewhere.
var cgroupRoot = "/sys/fs/cgroup"

// ReadAttestation reads pid's credentials, capability sets, no_new_privs and seccomp mode
// from /proc/<pid>/status, its network interfaces from /proc/<pid>/net/dev, and its pids
// limit from its cgroup (parsed by package attest, as the Kubernetes backend's report is).
func ReadAttestation(pid uint32) (*record.Attestation, error) {
	base := filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10))
	return attestparse.Parse(func(name string) ([]byte, error) {
		if filepath.IsAbs(name) {
			return os.ReadFile(name)
		}
		return os.ReadFile(filepath.Join(base, name))
	}, cgroupRoot, base)
}

// execed reports whether pid has finished its execve into the init: its command name is
// then the init's, no longer runc's.
func execed(pid uint32, comm string) bool {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "comm"))
	return err == nil && strings.TrimSpace(string(data)) == comm
}
