package wasm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultCacheDir returns $XDG_CACHE_HOME/ceval/wasm, else ~/.cache/ceval/wasm.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("wasm cache: %w", err)
	}
	return filepath.Join(base, "ceval", "wasm"), nil
}

// openCacheDirs checks the cache root and opens the worker's own directory below it,
// creating both as needed. The root must be a directory (not a link) owned by ceval's user
// with no group or other access: it holds native code that gets executed. The worker's
// directory, worker-UID, is owned by the worker's UID, mode 0700, and reached by the worker
// only through the returned descriptor, since it cannot traverse the root.
func openCacheDirs(root string, workerUID, workerGID int, unmappedChecked bool) (*os.File, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("wasm cache %s: not an absolute path", root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("wasm cache: %w", err)
	}
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("wasm cache %s: open without following links: %w", root, err)
	}
	defer unix.Close(rootFD)
	if err := checkPrivateDir(rootFD, root, os.Geteuid()); err != nil {
		return nil, err
	}
	if err := checkAncestors(root, unmappedChecked); err != nil {
		return nil, err
	}

	name := "worker-" + strconv.Itoa(workerUID)
	sub := filepath.Join(root, name)
	if err := unix.Mkdirat(rootFD, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("wasm cache: mkdir %s: %w", sub, err)
	}
	fd, err := unix.Openat(rootFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("wasm cache %s: open without following links: %w", sub, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("wasm cache %s: %w", sub, err)
	}
	// Only root can hand a directory to another UID; it does so once, on creation.
	if int(st.Uid) != workerUID && os.Geteuid() == 0 {
		if err := unix.Fchown(fd, workerUID, workerGID); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("wasm cache %s: chown to %d: %w", sub, workerUID, err)
		}
		if err := unix.Fchmod(fd, 0o700); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("wasm cache %s: %w", sub, err)
		}
	}
	if err := checkPrivateDir(fd, sub, workerUID); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), sub), nil
}

// checkPrivateDir insists that the open directory fd is owned by uid and that no one else
// can write (or, for the cache, read) it.
func checkPrivateDir(fd int, name string, uid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("wasm cache %s: %w", name, err)
	}
	perm := st.Mode & 0o7777
	if int(st.Uid) != uid || perm&0o077 != 0 {
		fix := "chmod 0700 " + name
		if int(st.Uid) != uid {
			fix = fmt.Sprintf("chown %d %s && %s", uid, name, fix)
		}
		return fmt.Errorf("wasm cache %s is mode %04o owned by uid %d; it holds native code ceval executes, so only uid %d may write it: run `%s`",
			name, perm, st.Uid, uid, fix)
	}
	return nil
}

// CheckCacheAncestors is the check NewExecutor makes of the cache directory's ancestors, for
// a process about to enter a user namespace where their owners are unmapped (see
// Options.AncestorsCheckedOutside).
func CheckCacheAncestors(dir string) error { return checkAncestors(dir, false) }

// checkAncestors refuses a cache whose path someone else could swap: an ancestor writable
// by group or other without the sticky bit, or owned by another user than root or us. With
// unmappedChecked, an owner this user namespace does not map (it reads as the overflow UID)
// passes: CheckCacheAncestors saw the real owners before the process entered it.
func checkAncestors(dir string, unmappedChecked bool) error {
	euid := os.Geteuid()
	overflow := -1
	if unmappedChecked {
		overflow = overflowUID()
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return fmt.Errorf("wasm cache: %s: %w", p, err)
		}
		if int(st.Uid) != 0 && int(st.Uid) != euid && int(st.Uid) != overflow {
			return fmt.Errorf("wasm cache %s: its ancestor %s belongs to uid %d, who could replace the cache; use a cache directory on a path only root and uid %d control",
				dir, p, st.Uid, euid)
		}
		if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
			return fmt.Errorf("wasm cache %s: its ancestor %s is mode %04o, writable by others; run `chmod go-w %s`",
				dir, p, st.Mode&0o7777, p)
		}
		if p == "/" {
			return nil
		}
	}
}

// overflowUID is the UID unmapped owners read as in a user namespace.
func overflowUID() int {
	b, err := os.ReadFile("/proc/sys/kernel/overflowuid")
	if err != nil {
		return 65534
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 65534
	}
	return n
}
