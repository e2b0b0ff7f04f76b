package kube

import (
	"strconv"
	"strings"

	"ceval.dev/ceval/internal/kubeproto"
)

// MemoryLimit is the memory limit (bytes) in an init's reported cgroup files: memory.max
// (v2) or memory.limit_in_bytes (v1); ok is false when it reported neither or no number
// ("max": unlimited).
func MemoryLimit(a *kubeproto.Attest) (int64, bool) {
	for key, v := range a.Files {
		if !strings.HasPrefix(key, "cgroup:") || !(strings.HasSuffix(key, "/memory.max") || strings.HasSuffix(key, "/memory.limit_in_bytes")) {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err == nil {
			return n, true
		}
	}
	return 0, false
}
