package launcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/internal/busy"
)

// MountScratch mounts a tmpfs of sizeMB MiB and at most inodes files on dir (nosuid,
// nodev), mode 0700, and chowns its root, only its root, to uid:gid; the caller populates
// it. It gives a run a writable directory that cannot fill the host's disk: writes past the
// cap fail with ENOSPC. Its pages are charged to the memory cgroup of whoever writes them
// (the container, for what the agent writes). unmount is idempotent.
func MountScratch(dir string, sizeMB, inodes int64, uid, gid int) (unmount func() error, err error) {
	if sizeMB <= 0 || inodes <= 0 {
		return nil, fmt.Errorf("mount scratch on %s: size %d MiB and inodes %d must be positive", dir, sizeMB, inodes)
	}
	opts := fmt.Sprintf("size=%dm,nr_inodes=%d,mode=0700", sizeMB, inodes)
	if err := unix.Mount("ceval-scratch", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("mount scratch on %s: %w", dir, err)
	}
	var once sync.Once
	var uerr error
	unmount = func() error {
		once.Do(func() {
			if err := busy.Unmount(context.Background(), dir); err != nil {
				uerr = fmt.Errorf("unmount scratch %s: %w", dir, err)
			}
		})
		return uerr
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, errors.Join(fmt.Errorf("mount scratch on %s: %w", dir, err), unmount())
	}
	return unmount, nil
}

// ChownTree hands dir and everything below it to uid:gid without following any symbolic
// link: links are chowned themselves (Lchown), never their targets, and the walk never
// descends through one, also when a component is swapped for a link meanwhile (os.Root).
func ChownTree(dir string, uid, gid int) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("chown tree %s: %w", dir, err)
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return root.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("chown tree %s: %w", dir, err)
	}
	return nil
}

// BootID returns the host's boot id (/proc/sys/kernel/random/boot_id), which tells a
// container made since this boot from one a previous boot left behind.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", errors.New("read boot id: empty")
	}
	return id, nil
}
