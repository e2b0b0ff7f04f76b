package local

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"ceval.dev/ceval/record"
)

// A rootless run's attestation is read in the daemon's user namespace, where the agent's
// init of slot 0 is ID 67536; result.json must name the real host's subordinate UID instead,
// never an ID that looks like an unrelated host user's.
func TestRootlessAttestationRecordsTheRealHostIDsNotTheDaemonNamespaces(t *testing.T) {
	userMap := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1002, Size: 1}, {ContainerID: 1, HostID: 1245184, Size: 1114112}}
	slice := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 65536, Size: 65536}}
	a := &record.Attestation{UID: 2000, GID: 2000, HostUID: 67536, HostGID: 67536, UIDMap: slice, GIDMap: slice}
	r := &Rootless{UIDMap: userMap, GIDMap: userMap}
	if err := r.toHost(a); err != nil {
		t.Fatal(err)
	}
	const base = 1245184 - 1 // the daemon's ID n is the user's subordinate ID base+n
	wantMap := []specs.LinuxIDMapping{{ContainerID: 0, HostID: base + 65536, Size: 65536}}
	if a.HostUID != base+67536 || a.HostGID != base+67536 || !slices.Equal(a.UIDMap, wantMap) || !slices.Equal(a.GIDMap, wantMap) {
		t.Fatalf("host ids %d/%d maps %v %v, want %d and %v", a.HostUID, a.HostGID, a.UIDMap, a.GIDMap, base+67536, wantMap)
	}
	d := a.DaemonUserNS
	if d == nil || d.HostUID != 67536 || d.HostGID != 67536 || !slices.Equal(d.UIDMap, slice) || !slices.Equal(d.GIDMap, slice) {
		t.Fatalf("daemon_userns %+v, want the daemon's numbering", d)
	}
	// An ID the daemon's namespace does not map cannot be recorded as if it were the host's.
	r.UIDMap = userMap[:1]
	if err := r.toHost(&record.Attestation{HostUID: 67536, HostGID: 67536, UIDMap: slice, GIDMap: slice}); err == nil {
		t.Fatal("an unmapped ID was translated")
	}
}

func TestEnterRootlessRefusesAModeWithoutTheDaemonsIDMaps(t *testing.T) {
	if err := EnterRootless(Rootless{Slots: 1, LockDir: t.TempDir()}); err == nil {
		rootlessMode.Store(nil)
		t.Fatal("entered rootless mode with no ID maps to the host")
	}
}
