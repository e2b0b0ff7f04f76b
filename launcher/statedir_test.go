package launcher

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateDirClosedToOthersIsFound: a 0700 directory anywhere on containerd's state
// path (a mktemp -d parent, as CI made) is named with its mode; 0711 passes.
func TestStateDirClosedToOthersIsFound(t *testing.T) {
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
	dir, mode, err := closedToOthers("/", state)
	if err != nil || dir != parent || mode != 0o700 {
		t.Fatalf("0700 parent: %q %04o %v", dir, mode, err)
	}
	// Under the daemon's root (/proc/PID/root): named as the daemon sees it.
	if dir, _, err := closedToOthers(filepath.Dir(base), "/"+filepath.Base(base)+"/ceval-containerd/state"); err != nil || dir != "/"+filepath.Base(base)+"/ceval-containerd" {
		t.Fatalf("0700 parent under a root: %q %v", dir, err)
	}
	os.Chmod(parent, 0o711)
	if dir, _, err := closedToOthers("/", state); err != nil || dir != "" {
		t.Fatalf("0711 parent: %q %v", dir, err)
	}
	if _, _, err := closedToOthers("/", "relative/state"); err == nil {
		t.Fatal("a relative state path was judged")
	}
}

func TestContainerdsDirsAreReadFromItsFlagsAndConfig(t *testing.T) {
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
	for _, tc := range []struct{ config, root, state string }{
		{"version = 2\nroot = \"/tmp/c/root\"\nstate = '/tmp/c/state'\n[grpc]\n  address = \"/tmp/c/sock\"\n[plugins.x]\n  root = \"/not/this\"\n", "/tmp/c/root", "/tmp/c/state"},
		{"state = \"/s\" # where the sockets go\nroot=\"/r\"#x\n", "/r", "/s"},
		{"\"state\" = \"/s\\u0041\"\n", "", "/sA"},
		{"# state = \"/commented\"\nversion = 2\n", "", ""},
		{"[plugins]\nstate = \"/in/a/table\"\n", "", ""},
		{"state = 42\n", "", ""},
	} {
		root, state := containerdConfigDirs([]byte(tc.config))
		if root != tc.root || state != tc.state {
			t.Errorf("config %q: %q %q, want %q %q", tc.config, root, state, tc.root, tc.state)
		}
	}
}

// TestTheProcessListeningOnASocketIsFound: the daemon behind an address is found from
// /proc/net/unix and the fd links (here: this test process).
func TestTheProcessListeningOnASocketIsFound(t *testing.T) {
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

// TestAClosedStateDirIsRefusedInOneLineNamingTheFix: the refusal every entry point prints.
func TestAClosedStateDirIsRefusedInOneLineNamingTheFix(t *testing.T) {
	open := StateDir{Address: "/run/containerd/containerd.sock", State: "/run/containerd"}
	if err := open.Err(); err != nil {
		t.Fatalf("a traversable state path refused: %v", err)
	}
	closed := open
	closed.Closed, closed.Mode = "/run/containerd", 0o700
	msg := closed.Err().Error()
	for _, want := range []string{"/run/containerd is 0700", "error preparing rootfs: permission denied", "fix: chmod o+x /run/containerd "} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("refusal %q lacks %q or is not one line", msg, want)
		}
	}
}
