package wasm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

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

// OpenCacheDir creates the cache directory dir as needed and opens it, checked as NewExecutor
// checks it: a directory (not a link) owned by this process's user, closed to everyone else,
// on a path no one but root and this user could swap. It is for a process about to enter a
// user namespace where the owners of dir's ancestors are unmapped (root's /, /home read as the
// overflow UID there, as any other user's would): opened and checked before, it is passed on
// as Options.CacheRoot, and the cache is then reached only through it, never by path.
func OpenCacheDir(dir string) (*os.File, error) {
	fd, err := openCacheRoot(dir)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// openCacheRoot creates, opens and checks the cache root (see OpenCacheDir).
func openCacheRoot(root string) (int, error) {
	if !filepath.IsAbs(root) {
		return -1, fmt.Errorf("wasm cache %s: not an absolute path", root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return -1, fmt.Errorf("wasm cache: %w", err)
	}
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("wasm cache %s: open without following links: %w", root, err)
	}
	if err := checkPrivateDir(rootFD, root, os.Geteuid()); err != nil {
		unix.Close(rootFD)
		return -1, err
	}
	if err := checkAncestors(root); err != nil {
		unix.Close(rootFD)
		return -1, err
	}
	return rootFD, nil
}

// openCacheDirs opens the worker's own directory below the cache root (opened by path, or
// given as checked by OpenCacheDir), creating it as needed. The root holds native code that
// gets executed (see openCacheRoot). The worker's directory, worker-UID, is owned by the
// worker's UID, mode 0700, and reached by the worker only through the returned descriptor,
// since it cannot traverse the root.
func openCacheDirs(root string, given *os.File, workerUID, workerGID int) (*os.File, error) {
	var rootFD int
	if given != nil {
		// Checked again where it can be: its owner is this user in any namespace that maps it.
		root, rootFD = given.Name(), int(given.Fd())
		if err := checkPrivateDir(rootFD, root, os.Geteuid()); err != nil {
			return nil, err
		}
	} else {
		var err error
		if rootFD, err = openCacheRoot(root); err != nil {
			return nil, err
		}
		defer unix.Close(rootFD)
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

// checkAncestors refuses a cache whose path someone else could swap: an ancestor writable
// by group or other without the sticky bit, or owned by another user than root or us.
func checkAncestors(dir string) error {
	euid := os.Geteuid()
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return fmt.Errorf("wasm cache: %s: %w", p, err)
		}
		if int(st.Uid) != 0 && int(st.Uid) != euid {
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
