package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorFindsAStateDirClosedToOthers: a 0700 directory anywhere on containerd's state
// path (a mktemp -d parent, as CI made) is named with its mode; 0711 passes.
func TestDoctorFindsAStateDirClosedToOthers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the modes of t.TempDir's parents differ for other users")
	}
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o755) // the test's own temp dirs
	os.Chmod(base, 0o755)
	parent := filepath.Join(base, "ceval-containerd")
	state := filepath.Join(parent, "state")
	if err := os.MkdirAll(state, 0o711); err != nil {
		t.Fatal(err)
	}
	os.Chmod(parent, 0o700)
	dir, mode, err := closedToOthers(state)
	if err != nil || dir != parent || mode != 0o700 {
		t.Fatalf("0700 parent: %q %04o %v", dir, mode, err)
	}
	os.Chmod(parent, 0o711)
	if dir, _, err := closedToOthers(state); err != nil || dir != "" {
		t.Fatalf("0711 parent: %q %v", dir, err)
	}
}

func TestDoctorReadsContainerdsDirs(t *testing.T) {
	for _, tc := range []struct {
		argv                []string
		root, state, config string
	}{
		{[]string{"containerd"}, "", "", "/etc/containerd/config.toml"},
		{[]string{"containerd", "-c", "/x/config.toml"}, "", "", "/x/config.toml"},
		{[]string{"containerd", "--config=/y.toml", "--root", "/r", "--state=/s"}, "/r", "/s", "/y.toml"},
	} {
		root, state, config := containerdFlags(tc.argv)
		if root != tc.root || state != tc.state || config != tc.config {
			t.Errorf("%q: %q %q %q", tc.argv, root, state, config)
		}
	}
	root, state := containerdConfigDirs([]byte("version = 2\nroot = \"/tmp/c/root\"\nstate = '/tmp/c/state'\n[grpc]\n  address = \"/tmp/c/sock\"\n[plugins.x]\n  root = \"/not/this\"\n"))
	if root != "/tmp/c/root" || state != "/tmp/c/state" {
		t.Errorf("config: %q %q", root, state)
	}
}

// TestDoctorFindsTheProcessListeningOnASocket: the daemon behind an address is found from
// /proc/net/unix and the fd links (here: this test process).
func TestDoctorFindsTheProcessListeningOnASocket(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if pid, err := socketOwner(p); err != nil || pid != os.Getpid() {
		t.Fatalf("pid %d, %v; want %d", pid, err, os.Getpid())
	}
	if _, err := socketOwner(p + ".none"); err == nil || !strings.Contains(err.Error(), "no process listens") {
		t.Fatalf("no listener: %v", err)
	}
}
