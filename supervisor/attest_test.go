package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodStatus = `Name:	init
Uid:	2000	2000	2000	2000
Gid:	2000	2000	2000	2000
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
	for _, d := range []string{"pids/ns/run1", "ns/run1"} {
		os.MkdirAll(filepath.Join(cgroupRoot, d), 0o755)
		os.WriteFile(filepath.Join(cgroupRoot, d, "pids.max"), []byte("128\n"), 0o644)
	}
	return 42
}

const loOnly = "Inter-|   Receive\n face |bytes\n    lo:       0       0\n"

var policy = Policy{UID: 2000, GID: 2000, PidsMax: 128, Network: "none"}

func TestAttestationOfAHardenedInitPasses(t *testing.T) {
	for name, cg := range map[string]string{"cgroup v1": "12:pids:/ns/run1\n4:memory:/ns/run1\n", "cgroup v2": "0::/ns/run1\n"} {
		pid := fakeProc(t, goodStatus, cg, loOnly)
		a, err := ReadAttestation(pid)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := a.Check(policy); err != nil {
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
		{"root", "Uid:\t2000\t2000\t2000\t2000", "Uid:\t0\t0\t0\t0", loOnly, "uid/gid 0/2000"},
		{"supplementary group", "Groups:\t", "Groups:\t0", loOnly, "supplementary group 0"},
		{"host network", "", "", loOnly + "  eth0:  1 2\n", "network interfaces"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pid := fakeProc(t, strings.Replace(goodStatus, tc.from, tc.to, 1), "12:pids:/ns/run1\n", tc.netDev)
			a, err := ReadAttestation(pid)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Check(policy); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want refusal naming %q, got %v", tc.want, err)
			}
		})
	}
}

func TestAttestationRefusesMixedIdentity(t *testing.T) {
	pid := fakeProc(t, strings.Replace(goodStatus, "Uid:\t2000\t2000\t2000\t2000", "Uid:\t2000\t0\t2000\t2000", 1), "0::/ns/run1\n", loOnly)
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
	p := policy
	p.PidsMax = 64
	if err := a.Check(p); err == nil || !strings.Contains(err.Error(), "pids.max") {
		t.Fatalf("got %v", err)
	}
}
