package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/internal/busy"
)

// RootOverlayPrefix starts the name of the directory that holds a RootOverlay's dir
// (supervisor.RootOverlayBase/ceval-root-*): GC finds a dead verifier's overlay by it.
const RootOverlayPrefix = "ceval-root-"

// RootOverlay is a writable root filesystem for a container whose process is root in its
// own user namespace: the image's layers, each an idmapped read-only mount (the image's
// root-owned files are the namespace's root's, nothing on the host is), under an upper
// directory on a capped tmpfs that takes every write. Root inside may rewrite /usr of its
// copy (an apt-get or a pip install at test time); the image's layers and the host's
// files stay untouched, and the writes cannot fill the host's disk.
type RootOverlay struct {
	// Path is the root filesystem, for the container spec's root.path.
	Path string
	undo []func() error
}

// MountRootOverlay mounts a RootOverlay under dir (made here) over layers, the mounts of
// a read-only view of the image's snapshot (one bind or one overlay of lowerdirs), idmapped
// through the user namespace at usernsPath, whose root is host ID hostID; the tmpfs holds
// sizeMB MiB and inodes files. Close undoes it.
func MountRootOverlay(dir string, layers []mount.Mount, usernsPath string, hostID uint32, sizeMB, inodes int64) (_ *RootOverlay, err error) {
	lowers, err := layerDirs(layers)
	if err != nil {
		return nil, err
	}
	o := &RootOverlay{Path: filepath.Join(dir, "rootfs")}
	defer func() {
		if err != nil {
			err = errors.Join(err, o.Close())
		}
	}()
	// Search-only for the user namespace, whose root (runc's init) binds the rootfs onto
	// itself; the layers and the tmpfs beside it stay host root's alone.
	for _, d := range []string{dir, o.Path} {
		if err := os.Mkdir(d, 0o711); err != nil {
			return nil, fmt.Errorf("root overlay: %w", err)
		}
		if err := os.Chmod(d, 0o711); err != nil { // past the umask
			return nil, fmt.Errorf("root overlay: %w", err)
		}
	}
	ns, err := unix.Open(usernsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("root overlay: user namespace: %w", err)
	}
	defer unix.Close(ns)
	var mapped []string
	for i, l := range lowers {
		target := filepath.Join(dir, "lower-"+strconv.Itoa(i))
		if err := os.Mkdir(target, 0o700); err != nil {
			return nil, fmt.Errorf("root overlay: %w", err)
		}
		if err := idmapBind(l, target, ns); err != nil {
			return nil, fmt.Errorf("root overlay: image layer %s: %w", l, err)
		}
		o.undo = append(o.undo, func() error { return unmount(target) })
		mapped = append(mapped, target)
	}
	rw := filepath.Join(dir, "rw")
	if err := os.Mkdir(rw, 0o700); err != nil {
		return nil, fmt.Errorf("root overlay: %w", err)
	}
	unmountRW, err := MountScratch(rw, sizeMB, inodes, int(hostID), int(hostID))
	if err != nil {
		return nil, fmt.Errorf("root overlay: %w", err)
	}
	o.undo = append(o.undo, unmountRW)
	upper, work := filepath.Join(rw, "upper"), filepath.Join(rw, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("root overlay: %w", err)
		}
		if err := os.Lchown(d, int(hostID), int(hostID)); err != nil {
			return nil, fmt.Errorf("root overlay: %w", err)
		}
	}
	opts := "lowerdir=" + strings.Join(mapped, ":") + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("ceval-root", o.Path, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("root overlay: mount overlay on %s: %w", o.Path, err)
	}
	o.undo = append(o.undo, func() error { return unmount(o.Path) })
	return o, nil
}

// Close unmounts the overlay, its tmpfs and the idmapped layers, last made first;
// idempotent.
func (o *RootOverlay) Close() error {
	var errs []error
	for i := len(o.undo) - 1; i >= 0; i-- {
		errs = append(errs, o.undo[i]())
	}
	o.undo = nil
	return errors.Join(errs...)
}

// layerDirs reads the lower directories, top first, from a view's mounts.
func layerDirs(ms []mount.Mount) ([]string, error) {
	if len(ms) != 1 {
		return nil, fmt.Errorf("root overlay: the image's view is %d mounts, want 1", len(ms))
	}
	m := ms[0]
	switch m.Type {
	case "bind", "rbind":
		return []string{m.Source}, nil
	case "overlay":
		for _, o := range m.Options {
			if v, ok := strings.CutPrefix(o, "lowerdir="); ok {
				return strings.Split(v, ":"), nil
			}
		}
		return nil, errors.New("root overlay: the image's overlay view names no lowerdir")
	}
	return nil, fmt.Errorf("root overlay: the image's view is a %s mount; only the overlayfs snapshotter's are supported", m.Type)
}

// idmapBind mounts a detached clone of src on target, read-only, nosuid, nodev and idmapped
// through the user namespace ns: a file host root owns is the namespace's root's there.
func idmapBind(src, target string, ns int) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(ns)}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("idmap (mount_setattr; kernel 5.12+ and a filesystem that supports idmapped mounts): %w", err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

func unmount(dir string) error {
	if err := busy.Unmount(context.Background(), dir); err != nil {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}
