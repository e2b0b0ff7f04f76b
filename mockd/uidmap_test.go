package mockd

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestHostUID(t *testing.T) {
	multi := []specs.LinuxIDMapping{
		{ContainerID: 0, HostID: 100000, Size: 1000},
		{ContainerID: 1000, HostID: 5000, Size: 1},
		{ContainerID: 2000, HostID: 300000, Size: 65536},
	}
	for _, tt := range []struct {
		name string
		uid  uint32
		maps []specs.LinuxIDMapping
		want uint32
		err  string
	}{
		{"no user namespace: itself", 2000, nil, 2000, ""},
		{"first range, first ID", 0, multi, 100000, ""},
		{"first range, last ID", 999, multi, 100999, ""},
		{"single-ID range", 1000, multi, 5000, ""},
		{"between ranges", 1001, multi, 0, "none of"},
		{"just below a range", 1999, multi, 0, "none of"},
		{"third range, first ID", 2000, multi, 300000, ""},
		{"third range, last ID", 2000 + 65535, multi, 300000 + 65535, ""},
		{"just past the last range", 2000 + 65536, multi, 0, "none of"},
		{"empty ranges map nothing", 5, []specs.LinuxIDMapping{{ContainerID: 5, HostID: 7, Size: 0}}, 0, "none of"},
		{"first matching range wins", 10, []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 100}, {ContainerID: 10, HostID: 9, Size: 1}}, 1010, ""},
		{"overflow past the 32-bit range", 10, []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1<<32 - 5, Size: 100}}, 0, "past the host's UID range"},
		{"(uid_t)-1 is no UID", 4, []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1<<32 - 5, Size: 100}}, 0, "past the host's UID range"},
		{"range end near 2^32 does not wrap", 1<<32 - 2, []specs.LinuxIDMapping{{ContainerID: 1<<32 - 10, HostID: 50, Size: 100}}, 58, ""},
	} {
		got, err := HostUID(tt.uid, tt.maps)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: HostUID(%d) = %d, %v; want an error with %q", tt.name, tt.uid, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: HostUID(%d) = %d, %v; want %d", tt.name, tt.uid, got, err, tt.want)
		}
	}
}

func TestStartRefusesAnAgentUIDTheMappingsLeaveOut(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(Config{Socket: dir + "/" + SocketName, Tools: map[string]Tool{}, AllowUID: 2000, LogPath: dir + "/log",
		UIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 100000, Size: 2000}}})
	if err == nil || !strings.Contains(err.Error(), "container UID 2000") {
		t.Fatalf("Start with an unmapped agent UID: %v", err)
	}
}

// userns runs the client in a new user namespace that maps the given container UIDs (and the
// same GIDs) to host IDs, as container UID uid: what SO_PEERCRED then shows the server is the
// host ID, as with a container that has its own user namespace.
func userns(uid uint32, maps []specs.LinuxIDMapping) *syscall.SysProcAttr {
	var ids []syscall.SysProcIDMap
	for _, m := range maps {
		ids = append(ids, syscall.SysProcIDMap{ContainerID: int(m.ContainerID), HostID: int(m.HostID), Size: int(m.Size)})
	}
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: ids, GidMappings: ids,
		Credential: &syscall.Credential{Uid: uid, Gid: uid, NoSetGroups: true},
	}
}

func TestPeerInAUserNamespaceIsServedOnlyAsItsMappedUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating user namespaces with arbitrary host mappings needs root")
	}
	const agent = 2000
	// The agent's container: 2000 is host 3456; the image's root and another user map elsewhere.
	maps := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 3000, Size: 1}, {ContainerID: agent, HostID: 3456, Size: 2}}
	agentProc := userns(agent, maps)

	// The server knows the container's mappings: it serves host UID 3456.
	s, cfg := startServer(t, func(c *Config) { c.AllowUID = agent; c.UIDMappings = maps })
	out, stderr, code := runClientWith(t, cfg, agentProc, nil, "pr", "list")
	if code != 0 || out != "#1 fix the bug\n" {
		t.Fatalf("the agent (container UID %d, host UID 3456) was not served: exit %d stdout %q stderr %q", agent, code, out, stderr)
	}
	// Another UID of the same container (2001 -> host 3457) is refused.
	out, stderr, code = runClientWith(t, cfg, userns(agent+1, maps), nil, "pr", "list")
	if code != ExitUnavailable || out != "" || strings.Contains(stderr, "fix the bug") {
		t.Errorf("container UID %d (host 3457): exit %d stdout %q stderr %q, want refused", agent+1, code, out, stderr)
	}
	// So is the container's root (host 3000).
	if _, _, code := runClientWith(t, cfg, userns(0, maps), nil, "pr", "list"); code != ExitUnavailable {
		t.Errorf("container root (host 3000): exit %d, want refused", code)
	}
	if st := s.Stats(); st.Calls != 1 || st.Refused != 2 {
		t.Errorf("stats %+v", st)
	}
	s.Close()
	calls, _ := ReadCalls(cfg.LogPath)
	if len(calls) != 3 || calls[1].PeerUID == nil || *calls[1].PeerUID != 3457 || !strings.Contains(calls[1].Error, "2000 in the container") {
		t.Errorf("log %+v", calls)
	}

	// A server that takes the container's UID for the host's (no mappings) refuses the agent:
	// the kernel reports 3456, not 2000.
	_, naive := startServer(t, func(c *Config) { c.AllowUID = agent })
	if _, _, code := runClientWith(t, naive, agentProc, nil, "pr", "list"); code != ExitUnavailable {
		t.Errorf("server expecting host UID %d served a peer that is host UID 3456: exit %d", agent, code)
	}
	// And one whose mappings put the agent elsewhere (2000 -> 3457) refuses it too.
	_, other := startServer(t, func(c *Config) {
		c.AllowUID = agent
		c.UIDMappings = []specs.LinuxIDMapping{{ContainerID: agent, HostID: 3457, Size: 1}}
	})
	if _, _, code := runClientWith(t, other, agentProc, nil, "pr", "list"); code != ExitUnavailable {
		t.Errorf("server expecting host UID 3457 served host UID 3456: exit %d", code)
	}
}

// The supervisor reads the live container's mappings from its init before the agent starts:
// from here, a process in a user namespace that maps 2000 to 3456 shows exactly that, and the
// server then serves the agent at 3456 and nobody at 2000.
func TestUIDMapReadFromALiveProcessDecidesThePeer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating user namespaces with arbitrary host mappings needs root")
	}
	self, err := ReadUIDMap(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if uid, err := HostUID(2000, self); err != nil || uid != 2000 {
		t.Fatalf("our own namespace %v: HostUID(2000) = %d, %v; want itself", self, uid, err)
	}

	maps := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 3000, Size: 1}, {ContainerID: 2000, HostID: 3456, Size: 2}}
	cmd := exec.Command("/bin/sleep", "30")
	cmd.SysProcAttr = userns(2000, maps)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	got, err := ReadUIDMap(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != maps[0] || got[1] != maps[1] {
		t.Fatalf("read %v, want %v", got, maps)
	}

	s, cfg := startServer(t, func(c *Config) { c.AllowUID = 2000 })
	if err := s.UseUIDMappings(got); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := runClientWith(t, cfg, userns(2000, maps), nil, "pr", "list"); code != 0 || out != "#1 fix the bug\n" {
		t.Fatalf("the mapped agent was not served: exit %d %q %q", code, out, stderr)
	}
	if _, _, code := runClientWith(t, cfg, nil, nil, "pr", "list"); code != ExitUnavailable {
		t.Fatalf("host UID 0 (no namespace) was served after the mappings were applied: exit %d", code)
	}
	// Mappings that leave the agent out refuse everyone from then on.
	if err := s.UseUIDMappings([]specs.LinuxIDMapping{{ContainerID: 0, HostID: 3000, Size: 1}}); err == nil {
		t.Fatal("an unmapped agent UID was accepted")
	}
	if _, _, code := runClientWith(t, cfg, userns(2000, maps), nil, "pr", "list"); code != ExitUnavailable {
		t.Fatalf("served after the mappings left the agent out: exit %d", code)
	}
}
