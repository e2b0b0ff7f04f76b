package launcher

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Each run's container joins a user namespace of its own whose root is an unprivileged host
// UID: runc there must traverse containerd's state directory to the bundle's rootfs. A state
// path with a directory closed to others (Debian's system service keeps /run/containerd
// 0700; a mktemp -d parent) fails every run with "error preparing rootfs: permission denied".

// StateDir is what ceval knows of the state path of the containerd at an address, as that
// daemon sees its file system (through /proc/PID/root: a daemon in another mount namespace
// is judged by its own view).
type StateDir struct {
	Address     string      // the daemon's socket
	PID         int         // the process listening on it
	Root, State string      // its --root and --state, from its flags, its config file, or the defaults
	Closed      string      // the first directory on State that others cannot search; "" when none
	Mode        fs.FileMode // Closed's permission bits
}

// StateDirClosedError refuses a daemon whose state path the runs' user namespaces cannot
// traverse; its message is one line that names the fix.
type StateDirClosedError struct{ StateDir }

func (e *StateDirClosedError) Error() string {
	return fmt.Sprintf("containerd at %s keeps its state in %s, and %s is %04o: runc in each run's user namespace cannot traverse it, so every run would fail with \"error preparing rootfs: permission denied\"; fix: %s",
		e.Address, e.State, e.Closed, e.Mode, e.Fix())
}

// Fix is what opens a closed state path to the runs.
func (s StateDir) Fix() string {
	return fmt.Sprintf("chmod o+x %s (or give containerd a state directory others can search: state = in its config, or --state)", s.Closed)
}

// Err is a *StateDirClosedError when the state path is closed to the runs, else nil.
func (s StateDir) Err() error {
	if s.Closed == "" {
		return nil
	}
	return &StateDirClosedError{s}
}

// CheckStateDir refuses, before a run creates anything, the containerd at address when every
// run there would fail on its state path. What cannot be determined (no listener found here,
// /proc unreadable) is not refused: the daemon then says what is wrong itself.
func CheckStateDir(address string) error {
	s, err := InspectStateDir(address)
	if err != nil {
		return nil
	}
	return s.Err()
}

// InspectStateDir finds the daemon listening at address (/proc/net/unix and the /proc/PID/fd
// links), its root and state (its --root/--state flags, else its config file's root = and
// state =, else containerd's defaults), and the first directory on the state path that others
// cannot search.
func InspectStateDir(address string) (StateDir, error) {
	s := StateDir{Address: address}
	pid, err := socketOwner(address)
	if err != nil {
		return s, err
	}
	s.PID = pid
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
	if err != nil {
		return s, fmt.Errorf("containerd (pid %d): %w", pid, err)
	}
	root, state, config := containerdFlags(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"))
	// The daemon's own view: its root directory, and its working directory for a relative -c.
	fsRoot := filepath.Join(proc, "root")
	if _, err := os.Stat(fsRoot + "/"); err != nil {
		fsRoot = "/"
	}
	if root == "" || state == "" {
		cfg := filepath.Join(fsRoot, config)
		if !filepath.IsAbs(config) {
			cfg = filepath.Join(proc, "cwd", config)
		}
		if data, err := os.ReadFile(cfg); err == nil {
			cr, cs := containerdConfigDirs(data)
			root, state = orElse(root, cr), orElse(state, cs)
		}
	}
	s.Root, s.State = orElse(root, "/var/lib/containerd"), orElse(state, "/run/containerd")
	closed, mode, err := closedToOthers(fsRoot, s.State)
	if err != nil {
		return s, fmt.Errorf("containerd (pid %d) state %s: %w", pid, s.State, err)
	}
	s.Closed, s.Mode = closed, mode
	return s, nil
}

func orElse(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// containerdFlags reads containerd's command line: --root, --state and -c/--config.
func containerdFlags(argv []string) (root, state, config string) {
	config = "/etc/containerd/config.toml"
	for i := 1; i < len(argv); i++ {
		name, val, ok := strings.Cut(argv[i], "=")
		if !ok && i+1 < len(argv) {
			val = argv[i+1]
		}
		take := func(dst *string) {
			*dst = val
			if !ok {
				i++
			}
		}
		switch strings.TrimLeft(name, "-") {
		case "c", "config":
			take(&config)
		case "root":
			take(&root)
		case "state":
			take(&state)
		}
	}
	return root, state, config
}

// containerdConfigDirs reads the top-level root = and state = of a containerd config (TOML:
// basic or literal strings, a trailing comment).
func containerdConfigDirs(data []byte) (root, state string) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			break // the top-level keys come before the first table
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch strings.Trim(strings.TrimSpace(k), `"'`) {
		case "root":
			root = tomlString(v)
		case "state":
			state = tomlString(v)
		}
	}
	return root, state
}

// tomlString is the string a TOML value starts with ("..." or '...'), "" for anything else.
func tomlString(v string) string {
	v = strings.TrimSpace(v)
	if len(v) < 2 || (v[0] != '"' && v[0] != '\'') {
		return ""
	}
	end := strings.IndexByte(v[1:], v[0])
	if end < 0 {
		return ""
	}
	s := v[1 : 1+end]
	if v[0] == '"' {
		if u, err := strconv.Unquote(v[:end+2]); err == nil {
			s = u
		}
	}
	return s
}

// socketOwner is the PID of the process listening on the Unix socket at address.
func socketOwner(address string) (int, error) {
	abs, err := filepath.Abs(address)
	if err != nil {
		return 0, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return 0, err
	}
	inode := ""
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		// Num RefCount Protocol Flags Type St Inode Path; flags 00010000: listening
		if len(f) >= 8 && strings.Join(f[7:], " ") == abs && f[3] == "00010000" {
			inode = f[6]
		}
	}
	if inode == "" {
		return 0, fmt.Errorf("no process listens on %s", abs)
	}
	want := "socket:[" + inode + "]"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	// Processes named containerd first: the fd links of every process on a busy host cost.
	var pids, others []string
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		if comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm")); strings.HasPrefix(string(comm), "containerd") {
			pids = append(pids, p.Name())
		} else {
			others = append(others, p.Name())
		}
	}
	for _, pid := range append(pids, others...) {
		fds, _ := os.ReadDir(filepath.Join("/proc", pid, "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join("/proc", pid, "fd", fd.Name())); l == want {
				return strconv.Atoi(pid)
			}
		}
	}
	return 0, fmt.Errorf("no process holds the socket %s (inode %s)", abs, inode)
}

// closedToOthers returns the first directory on path (from / down, path included), looked up
// under fsRoot, that others cannot search, with its mode; "" when every one can be traversed.
func closedToOthers(fsRoot, path string) (string, fs.FileMode, error) {
	if !filepath.IsAbs(path) {
		return "", 0, fmt.Errorf("%s is not an absolute path", path)
	}
	dir := "/"
	for _, part := range append([]string{""}, strings.Split(strings.Trim(filepath.Clean(path), "/"), "/")...) {
		dir = filepath.Join(dir, part)
		fi, err := os.Stat(filepath.Join(fsRoot, dir))
		if err != nil {
			return "", 0, fmt.Errorf("%s: %w", dir, err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return dir, fi.Mode().Perm(), nil
		}
	}
	return "", 0, nil
}
