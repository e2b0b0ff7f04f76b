package launcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/containerd/containerd/v2/core/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"ceval.dev/ceval/internal/busy"
)

// makeMountpoints creates, in the container's rootfs snapshot and as the host's root, every
// mount destination of spec the image lacks: a directory, or an empty file for a bind of a
// file. In the run's user namespace runc makes them as the container's root, whose host UID
// owns nothing in an image's rootfs ("mkdir .../rootfs/run: permission denied"). The rootfs
// is reached through an os.Root, so an image's symbolic link cannot point a mount point out
// of it; what already exists is left alone.
func makeMountpoints(ctx context.Context, mounts []mount.Mount, spec *specs.Spec) error {
	return busy.WithTempMount(ctx, mounts, false, func(rootfs string) error {
		root, err := os.OpenRoot(rootfs)
		if err != nil {
			return err
		}
		defer root.Close()
		for _, m := range spec.Mounts {
			dst := strings.TrimPrefix(path.Clean(m.Destination), "/")
			if dst == "" || dst == "." {
				continue
			}
			if _, err := root.Lstat(dst); err == nil {
				continue
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("mount point %s: %w", m.Destination, err)
			}
			if err := root.MkdirAll(path.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("mount point %s: %w", m.Destination, err)
			}
			if isFileBind(m) {
				f, err := root.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
				if err != nil {
					return fmt.Errorf("mount point %s: %w", m.Destination, err)
				}
				f.Close()
				continue
			}
			if err := root.Mkdir(dst, 0o755); err != nil {
				return fmt.Errorf("mount point %s: %w", m.Destination, err)
			}
		}
		return nil
	})
}

// isFileBind reports whether m binds a host file that is not a directory.
func isFileBind(m specs.Mount) bool {
	if m.Type != "bind" {
		return false
	}
	fi, err := os.Stat(m.Source)
	return err == nil && !fi.IsDir()
}
