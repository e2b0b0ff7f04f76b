package local

import (
	"errors"
	"fmt"
	"sync/atomic"

	"context"
	"strconv"

	"github.com/containerd/containerd/v2/core/containers"
	ctroci "github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"ceval.dev/ceval/internal/idmap"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"

	"ceval.dev/ceval/sandbox"
)

// Rootless is how this process drives a rootless containerd: it runs inside the daemon's
// user and mount namespaces (cmd/ceval re-executes itself there through nsenter, the way
// nerdctl does), as root of that namespace, so the scratch mounts, the snapshot read, the
// init's install and the listeners in the container's network namespace are the rootful
// code paths; what differs is the limits and the runs' IDs.
type Rootless struct {
	// Delegated is the cgroup subtree root delegated to the user (launcher.DelegatedCgroup);
	// "" is the rlimit mode, which the user must have allowed.
	Delegated string
	// Slots is how many per-run slices of the user's subordinate range are beyond the
	// daemon's own (launcher.SubordinateIDs).
	Slots int
	// LockDir holds the slots' locks (launcher.RootlessIDLockDir): the daemon's /run is
	// rootlesskit's copy of the host's, whose /run/ceval the user cannot write.
	LockDir string
	// UIDMap and GIDMap are the daemon's user namespace's maps to the real host's IDs (its
	// /proc/PID/uid_map and gid_map read from inside it): the attestation is recorded in host IDs.
	UIDMap, GIDMap []specs.LinuxIDMapping
}

// rootlessMode is set once, when the process has entered a rootless daemon's namespaces:
// from then on every sandbox it makes is rootless (a process is in one user namespace).
var rootlessMode atomic.Pointer[Rootless]

// EnterRootless makes every later sandbox of this process a rootless one.
func EnterRootless(r Rootless) error {
	if r.LockDir == "" {
		return errors.New("rootless: no directory for the ID slots' locks")
	}
	if len(r.UIDMap) == 0 || len(r.GIDMap) == 0 {
		return errors.New("rootless: the daemon's user namespace has no ID maps to the host")
	}
	if r.Slots <= 0 {
		return errors.New("rootless: the user's subordinate range has no per-run slice beyond the daemon's own (grow it: scripts/containerd.sh rootless-start USER DIR as root)")
	}
	rootlessMode.Store(&r)
	return nil
}

// RootlessMode returns the rootless mode, or nil for a rootful process.
func RootlessMode() *Rootless { return rootlessMode.Load() }

// ids is the range of the runs' user namespaces as the daemon's namespace numbers them:
// slot k is launcher.RootlessSliceHostID(k).
func (r *Rootless) ids() sandbox.IDRange {
	return sandbox.IDRange{Start: launcher.RootlessSliceHostID(0), Slots: uint32(r.Slots)}
}

// toHost renumbers a's host IDs, read in the daemon's user namespace, in the real host's
// IDs, and keeps the daemon's numbering in a.DaemonUserNS.
func (r *Rootless) toHost(a *record.Attestation) error {
	d := &record.DaemonUserNS{HostUID: a.HostUID, HostGID: a.HostGID, UIDMap: a.UIDMap, GIDMap: a.GIDMap}
	uid, err1 := idmap.ToParent(uint32(a.HostUID), r.UIDMap)
	gid, err2 := idmap.ToParent(uint32(a.HostGID), r.GIDMap)
	uidMap, err3 := idmap.RangesToParent(a.UIDMap, r.UIDMap)
	gidMap, err4 := idmap.RangesToParent(a.GIDMap, r.GIDMap)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("attest: the run's IDs in the host's numbering: %w", err)
	}
	a.HostUID, a.HostGID, a.UIDMap, a.GIDMap, a.DaemonUserNS = int(uid), int(gid), uidMap, gidMap, d
	return nil
}

// limits is what holds each limit in this mode.
func (r *Rootless) limits() policy.LimitsEnforcedBy {
	l, err := launcher.RootlessLimits(r.Delegated, true)
	if err != nil { // unreachable: allowRlimit is true
		panic(err)
	}
	return l
}

// specOpts adapts the run's spec (applied after oci's): the cgroup under the delegated
// subtree, or no cgroup, RLIMIT_NPROC for pids and RLIMIT_AS for the init to set on the
// agent just before it starts it (runc's own setup needs more address space than that).
func (r *Rootless) specOpts(id string, pids, memoryMB int64) []ctroci.SpecOpts {
	opts := []ctroci.SpecOpts{launcher.WithRootlessLimits(r.Delegated, id, pids)}
	if r.Delegated == "" {
		opts = append(opts, withInitRlimitAS(memoryMB))
	}
	return opts
}

// withInitRlimitAS gives the init --rlimit-as: the agent's RLIMIT_AS, set by the init in the
// agent's process just before its execve.
func withInitRlimitAS(memoryMB int64) ctroci.SpecOpts {
	return func(_ context.Context, _ ctroci.Client, _ *containers.Container, s *specs.Spec) error {
		if memoryMB <= 0 {
			return fmt.Errorf("rootless limits: memory %d MiB: want a positive limit for RLIMIT_AS", memoryMB)
		}
		if s.Process == nil || len(s.Process.Args) == 0 || s.Process.Args[0] != oci.InitPath {
			return errors.New("rootless limits: the process is not ceval's init: RLIMIT_AS would not be set")
		}
		a := s.Process.Args
		s.Process.Args = append([]string{a[0], "--rlimit-as", strconv.FormatInt(memoryMB<<20, 10)}, a[1:]...)
		return nil
	}
}

// policyRlimits are the rlimits the attestation must find on the init: the rootful ones,
// and in rlimit mode RLIMIT_NPROC in place of pids.max.
func (r *Rootless) policyRlimits(pids int64) []specs.POSIXRlimit {
	rl := oci.Rlimits()
	if r == nil || r.Delegated != "" {
		return rl
	}
	return append(rl, launcher.RlimitNproc(pids))
}

func (r *Rootless) String() string {
	if r.Delegated != "" {
		return fmt.Sprintf("rootless, cgroup subtree %s", r.Delegated)
	}
	return "rootless, rlimit limits"
}
