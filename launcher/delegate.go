package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// v1Hierarchies returns the cgroup v1 hierarchies mounted under root (a hybrid host's
// cgroup v2 mount left out: runc v1 does not use it).
func v1Hierarchies(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var hs []string
	for _, e := range entries {
		h := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(h, "cgroup.controllers")); err == nil {
			continue
		}
		hs = append(hs, e.Name())
	}
	return hs, nil
}

// SetupDelegatedCgroup makes, as root, user's subtree (DelegatedCgroupName) in every cgroup v1
// hierarchy under root and gives it and its files to uid:gid, so a rootless containerd of that
// user can put each run's cgroup under it with pids, memory and cpu limits. A cpuset subtree
// gets its parent's CPUs and memory nodes (it starts with none). It returns the directories.
// On cgroup v2 it refuses: delegate with systemd there.
func SetupDelegatedCgroup(root, user string, uid, gid int) ([]string, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return nil, fmt.Errorf("%s is cgroup v2: delegate a subtree to %s with systemd (Delegate=yes for user@.service) instead", root, user)
	}
	hs, err := v1Hierarchies(root)
	if err != nil {
		return nil, fmt.Errorf("delegate cgroups to %s: %w", user, err)
	}
	for _, need := range limitControllers {
		if !slices.Contains(hs, need) {
			return nil, fmt.Errorf("delegate cgroups to %s: no %s hierarchy under %s (mount it)", user, need, root)
		}
	}
	var made []string
	for _, h := range hs {
		d := filepath.Join(root, h, DelegatedCgroupName(user))
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return made, fmt.Errorf("delegate cgroups to %s: %w", user, err)
		}
		made = append(made, d)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if _, err := os.Stat(filepath.Join(d, f)); err != nil {
				continue
			}
			v, err := os.ReadFile(filepath.Join(root, h, f))
			if err != nil {
				return made, fmt.Errorf("delegate cgroups to %s: %w", user, err)
			}
			if err := os.WriteFile(filepath.Join(d, f), []byte(strings.TrimSpace(string(v))), 0); err != nil {
				return made, fmt.Errorf("delegate cgroups to %s: %w", user, err)
			}
		}
		if err := chownShallow(d, uid, gid); err != nil {
			return made, fmt.Errorf("delegate cgroups to %s: %w", user, err)
		}
	}
	return made, nil
}

// chownShallow gives dir and the files directly in it to uid:gid, following no link.
func chownShallow(dir string, uid, gid int) error {
	if err := unix.Lchown(dir, uid, gid); err != nil {
		return &fs.PathError{Op: "chown", Path: dir, Err: err}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := unix.Lchown(p, uid, gid); err != nil {
			return &fs.PathError{Op: "chown", Path: p, Err: err}
		}
	}
	return nil
}

// TeardownDelegatedCgroup removes user's subtree from every hierarchy under root, deepest
// first. A cgroup that still holds a process cannot go: the error says which.
func TeardownDelegatedCgroup(root, user string) error {
	hs, err := v1Hierarchies(root)
	if err != nil {
		return fmt.Errorf("remove %s's cgroups: %w", user, err)
	}
	var errs []error
	for _, h := range hs {
		d := filepath.Join(root, h, DelegatedCgroupName(user))
		var dirs []string
		werr := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if errors.Is(werr, fs.ErrNotExist) {
			continue
		}
		if werr != nil {
			errs = append(errs, werr)
			continue
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := unix.Rmdir(dirs[i]); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w (a run may still be in it: stop it first)", dirs[i], err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove %s's cgroups: %w", user, errors.Join(errs...))
	}
	return nil
}
