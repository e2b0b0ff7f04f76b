package main

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

// Each run's container starts in a user namespace of its own, whose root is an
// unprivileged UID on the host: runc there must traverse containerd's state directory to
// the bundle's rootfs. A state path with a directory closed to others (a 0700 temp dir)
// fails every run with "error preparing rootfs: permission denied".

// containerdDirs finds the root and state directories of the containerd listening at
// address: the listening process from /proc/net/unix and the /proc/PID/fd links, then its
// --root/--state flags, else its config file's root = and state =, else the defaults.
func containerdDirs(address string) (root, state string, err error) {
	pid, err := socketOwner(address)
	if err != nil {
		return "", "", err
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return "", "", fmt.Errorf("containerd (pid %d): %w", pid, err)
	}
	root, state, config := containerdFlags(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"))
	if root == "" || state == "" {
		if data, err := os.ReadFile(config); err == nil {
			cr, cs := containerdConfigDirs(data)
			root, state = orElse(root, cr), orElse(state, cs)
		}
	}
	return orElse(root, "/var/lib/containerd"), orElse(state, "/run/containerd"), nil
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

// containerdConfigDirs reads the top-level root = and state = of a containerd config.
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
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "root":
			root = v
		case "state":
			state = v
		}
	}
	return root, state
}

// socketOwner is the PID of the process listening on the Unix socket at address.
func socketOwner(address string) (int, error) {
	abs, err := filepath.Abs(address)
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return 0, err
	}
	inode := ""
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		// Num RefCount Protocol Flags Type St Inode Path; flags 00010000: listening
		if len(f) == 8 && f[7] == abs && f[3] == "00010000" {
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
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); l == want {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process holds the socket %s (inode %s)", abs, inode)
}

// closedToOthers returns the first directory on path (from / down, path included) that
// others cannot search, with its mode; "" when every one can be traversed.
func closedToOthers(path string) (string, fs.FileMode, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", 0, err
	}
	dir := "/"
	for _, part := range append([]string{""}, strings.Split(strings.Trim(abs, "/"), "/")...) {
		dir = filepath.Join(dir, part)
		fi, err := os.Stat(dir)
		if err != nil {
			return "", 0, err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return dir, fi.Mode().Perm(), nil
		}
	}
	return "", 0, nil
}

// stateDirCheck says whether the runs' user namespaces can traverse containerd's state
// directory, and how to fix it when they cannot.
func stateDirCheck(address string) check {
	root, state, err := containerdDirs(address)
	if err != nil {
		return check{"containerd dirs", "note", "not checked: " + err.Error(), ""}
	}
	dir, mode, err := closedToOthers(state)
	switch {
	case err != nil:
		return check{"containerd dirs", "FAIL", "state " + state + ": " + err.Error(), ""}
	case dir != "":
		return check{"containerd dirs", "FAIL", fmt.Sprintf("%s (on the state path %s) is %04o: runc in each run's user namespace cannot traverse it to the rootfs, so every run fails \"error preparing rootfs: permission denied\"", dir, state, mode),
			fmt.Sprintf("chmod o+x %s (scripts/containerd.sh start makes its directory 0711), or give containerd a state directory others can traverse", dir)}
	}
	return check{"containerd dirs", "ok", fmt.Sprintf("state %s traversable by the runs' user namespaces (root %s)", state, root), ""}
}
