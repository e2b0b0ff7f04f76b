package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/sandbox"
)

// goodStatus is the init as the host sees it: the agent's 2000 is 2^31+2000 on the host.
const goodStatus = `Name:	init
Uid:	2147485648	2147485648	2147485648	2147485648
Gid:	2147485648	2147485648	2147485648	2147485648
Groups:	
NoNewPrivs:	1
Seccomp:	2
CapInh:	0000000000000000
CapPrm:	0000000000000000
CapEff:	0000000000000000
CapBnd:	0000000000000000
CapAmb:	0000000000000000
`

// fakeProc lays out /proc/<pid> and a cgroup tree for ReadAttestation.
func fakeProc(t *testing.T, status, cgroup, netDev string) uint32 {
	t.Helper()
	root := t.TempDir()
	procRoot, cgroupRoot = filepath.Join(root, "proc"), filepath.Join(root, "cgroup")
	t.Cleanup(func() { procRoot, cgroupRoot = "/proc", "/sys/fs/cgroup" })
	base := filepath.Join(procRoot, "42")
	os.MkdirAll(filepath.Join(base, "net"), 0o755)
	os.WriteFile(filepath.Join(base, "status"), []byte(status), 0o644)
	os.WriteFile(filepath.Join(base, "cgroup"), []byte(cgroup), 0o644)
	os.WriteFile(filepath.Join(base, "net", "dev"), []byte(netDev), 0o644)
	os.WriteFile(filepath.Join(base, "uid_map"), []byte(runIDMap), 0o644)
	os.WriteFile(filepath.Join(base, "gid_map"), []byte(runIDMap), 0o644)
	os.WriteFile(filepath.Join(base, "limits"), []byte(goodLimits), 0o644)
	for _, d := range []string{"pids/ns/run1", "ns/run1"} {
		os.MkdirAll(filepath.Join(cgroupRoot, d), 0o755)
		os.WriteFile(filepath.Join(cgroupRoot, d, "pids.max"), []byte("128\n"), 0o644)
	}
	return 42
}

const loOnly = "Inter-|   Receive\n face |bytes\n    lo:       0       0\n"

// runIDMap is the run's user namespace as /proc/PID/uid_map shows it to the host.
const runIDMap = "         0 2147483648      65536\n"

const goodLimits = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max core file size        0                    0                    bytes     
Max processes             96549                96549                processes 
Max open files            1024                 1024                 files     
Max msgqueue size         819200               819200               bytes     
`

var wantPolicy = sandbox.Policy{
	UID: 2000, GID: 2000, PidsMax: 128, Network: "none",
	IDMap:   oci.UserNS{HostID: 1 << 31}.Mappings(),
	Rlimits: oci.Rlimits(),
}

// writeProc replaces one file of the fake /proc/42.
func writeProc(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(procRoot, "42", name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAttestationOfAHardenedInitPasses(t *testing.T) {
	for name, cg := range map[string]string{"cgroup v1": "12:pids:/ns/run1\n4:memory:/ns/run1\n", "cgroup v2": "0::/ns/run1\n"} {
		pid := fakeProc(t, goodStatus, cg, loOnly)
		a, err := ReadAttestation(pid)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := sandbox.CheckAttestation(a, wantPolicy); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if a.PidsMax != "128" || len(a.Interfaces) != 1 {
			t.Errorf("%s: %+v", name, a)
		}
	}
}

// Each row weakens one property; the run must be refused (ERROR, never graded).
func TestAttestationRefusesEveryWeakenedProperty(t *testing.T) {
	tests := []struct {
		name, from, to, netDev, want string
	}{
		{"effective capability", "CapEff:\t0000000000000000", "CapEff:\t0000000000200000", loOnly, "CapEff"},
		{"ambient capability", "CapAmb:\t0000000000000000", "CapAmb:\t0000000000000001", loOnly, "CapAmb"},
		{"bounding set kept", "CapBnd:\t0000000000000000", "CapBnd:\t000001ffffffffff", loOnly, "CapBnd"},
		{"no_new_privs off", "NoNewPrivs:\t1", "NoNewPrivs:\t0", loOnly, "no_new_privs"},
		{"seccomp read before execve", "Seccomp:\t2", "Seccomp:\t0", loOnly, "seccomp mode 0"},
		{"root", "Uid:\t2147485648\t2147485648\t2147485648\t2147485648", "Uid:\t2147483648\t2147483648\t2147483648\t2147483648", loOnly, "uid/gid 0/2000"},
		{"supplementary group", "Groups:\t", "Groups:\t2147483648", loOnly, "supplementary group 0"},
		{"host network", "", "", loOnly + "  eth0:  1 2\n", "network interfaces"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pid := fakeProc(t, strings.Replace(goodStatus, tc.from, tc.to, 1), "12:pids:/ns/run1\n", tc.netDev)
			a, err := ReadAttestation(pid)
			if err != nil {
				t.Fatal(err)
			}
			if err := sandbox.CheckAttestation(a, wantPolicy); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want refusal naming %q, got %v", tc.want, err)
			}
		})
	}
}

func TestAttestationRefusesMixedIdentity(t *testing.T) {
	pid := fakeProc(t, strings.Replace(goodStatus, "Uid:\t2147485648\t2147485648", "Uid:\t2147485648\t2147483648", 1), "0::/ns/run1\n", loOnly)
	if _, err := ReadAttestation(pid); err == nil {
		t.Fatal("an effective UID 0 behind a real UID 2000 was accepted")
	}
}

func TestAttestationRefusesWrongPidsLimit(t *testing.T) {
	pid := fakeProc(t, goodStatus, "0::/ns/run1\n", loOnly)
	a, err := ReadAttestation(pid)
	if err != nil {
		t.Fatal(err)
	}
	p := wantPolicy
	p.PidsMax = 64
	if err := sandbox.CheckAttestation(a, p); err == nil || !strings.Contains(err.Error(), "pids.max") {
		t.Fatalf("got %v", err)
	}
}

// A container left in the host's user namespace runs the agent as host UID 2000, shared with
// every other run and any host account of that UID: its per-UID quotas are not its own.
func TestAttestationRefusesAgentSharingTheHostsUID2000(t *testing.T) {
	pid := fakeProc(t, strings.ReplaceAll(goodStatus, "2147485648", "2000"), "0::/ns/run1\n", loOnly)
	writeProc(t, "uid_map", "         0          0 4294967295\n")
	writeProc(t, "gid_map", "         0          0 4294967295\n")
	a, err := ReadAttestation(pid)
	if err != nil {
		t.Fatal(err)
	}
	if a.UID != 2000 || a.HostUID != 2000 {
		t.Fatalf("read uid %d host uid %d, want 2000 and 2000", a.UID, a.HostUID)
	}
	if err := sandbox.CheckAttestation(a, wantPolicy); err == nil || !strings.Contains(err.Error(), "uid_map") || !strings.Contains(err.Error(), "gid_map") {
		t.Fatalf("want refusal naming uid_map and gid_map, got %v", err)
	}
}

// Another run's range (or a namespace runc made with the spec's mappings altered) is not
// the one this run was allocated.
func TestAttestationRefusesAnotherRunsIDRange(t *testing.T) {
	other := strings.ReplaceAll(goodStatus, "2147485648", "2147551184") // 2^31 + 65536 + 2000
	pid := fakeProc(t, other, "0::/ns/run1\n", loOnly)
	writeProc(t, "uid_map", "         0 2147549184      65536\n")
	writeProc(t, "gid_map", "         0 2147549184      65536\n")
	a, err := ReadAttestation(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := sandbox.CheckAttestation(a, wantPolicy); err == nil || !strings.Contains(err.Error(), "uid_map") {
		t.Fatalf("want refusal naming uid_map, got %v", err)
	}
}

func TestAttestationRefusesAnAgentItsMappingDoesNotCover(t *testing.T) {
	pid := fakeProc(t, goodStatus, "0::/ns/run1\n", loOnly)
	writeProc(t, "uid_map", "         0 2147483648       1000\n")
	if _, err := ReadAttestation(pid); err == nil || !strings.Contains(err.Error(), "not mapped") {
		t.Fatalf("want an unmapped agent UID refused, got %v", err)
	}
}

// runc's own rlimits need CAP_SYS_RESOURCE over the run's namespace; they are lowered from
// outside instead, and a run whose lowering did not take is refused.
func TestAttestationRefusesRlimitsNotLowered(t *testing.T) {
	pid := fakeProc(t, goodStatus, "0::/ns/run1\n", loOnly)
	writeProc(t, "limits", strings.Replace(strings.Replace(goodLimits, "1024                 1024", "20000                20000", 1), "file size        0                    0", "file size        unlimited            unlimited", 1))
	a, err := ReadAttestation(pid)
	if err != nil {
		t.Fatal(err)
	}
	err = sandbox.CheckAttestation(a, wantPolicy)
	if err == nil || !strings.Contains(err.Error(), "RLIMIT_NOFILE") || !strings.Contains(err.Error(), "RLIMIT_CORE") {
		t.Fatalf("want refusal naming RLIMIT_NOFILE and RLIMIT_CORE, got %v", err)
	}
}
