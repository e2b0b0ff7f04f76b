package launcher

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// nsGetOwnerUID is ioctl NS_GET_OWNER_UID (linux/nsfs.h): the owner of a user namespace.
const nsGetOwnerUID = 0xb704

// The kernel charges inotify instances and message-queue bytes of everything inside a user
// namespace to its owner too: a namespace owned by root (as runc makes them) would make all
// runs share root's quota. NewUserNS's namespace is owned by the run's own first host ID.
func TestUserNSIsOwnedByItsOwnHostIDNotRoot(t *testing.T) {
	const host = 0xE1000000 // apart from every other test range
	u, err := NewUserNS(host, 65536)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	f, err := os.Open(u.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	owner, err := unix.IoctlGetUint32(int(f.Fd()), nsGetOwnerUID)
	if err != nil {
		t.Fatal(err)
	}
	if owner != host {
		t.Errorf("namespace owned by UID %d, want %d", owner, host)
	}
	for _, m := range []string{"uid_map", "gid_map"} {
		data, err := os.ReadFile(strings.TrimSuffix(u.Path(), "ns/user") + m)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(strings.Fields(string(data)), " "); got != "0 3774873600 65536" {
			t.Errorf("%s %q, want 0 %d 65536", m, got, host)
		}
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(u.Path()); !os.IsNotExist(err) {
		t.Errorf("the holder still runs after Close (%v)", err)
	}
}

func TestUserNSRefusesHostRootAndRangesPastTheLastID(t *testing.T) {
	for _, tc := range []struct{ host, size uint32 }{{0, 65536}, {1<<32 - 65536, 65536}, {1 << 31, 0}} {
		if u, err := NewUserNS(tc.host, tc.size); err == nil {
			u.Close()
			t.Errorf("host %d size %d accepted", tc.host, tc.size)
		}
	}
}

// LowerRlimits needs no capability: it acts as the target's own IDs and only lowers.
func TestLowerRlimitsActsAsTheTargetsOwnIDs(t *testing.T) {
	const id = 0xE1002000
	target := exec.Command("/bin/cat")
	target.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: id, Gid: id, Groups: []uint32{}}}
	in, err := target.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); target.Wait() }()
	pid := uint32(target.Process.Pid)
	rl := []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 64, Hard: 64}, {Type: "RLIMIT_CORE"}}
	if err := LowerRlimits(pid, id, id, rl); err != nil {
		t.Fatal(err)
	}
	limits, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/limits")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Max open files            64                   64", "Max core file size        0                    0"} {
		if !strings.Contains(string(limits), want) {
			t.Errorf("limits lack %q:\n%s", want, limits)
		}
	}
	if err := LowerRlimits(pid, id+1, id+1, rl); err == nil {
		t.Error("another UID changed the process's limits")
	}
	if err := LowerRlimits(pid, id, id, []specs.POSIXRlimit{{Type: "RLIMIT_BOGUS"}}); err == nil {
		t.Error("an unknown rlimit was accepted")
	}
}
