package supervisor

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/rootfs"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/task"
)

// ResolveTaskImage is ResolveImage for a task's sandbox: when the task asks for packages
// (sandbox.packages, sandbox.pip) and named no image of its own, the package image is
// built first (kept when containerd has it with the same inputs, imported from the image
// cache when that has it; mmdebstrap's progress goes to log). Either way the image then
// passes the same preflight as any other.
func ResolveTaskImage(ctx context.Context, c *client.Client, sb task.Sandbox, pins *images.Pinner, pc *images.PreflightCache, busybox string, log io.Writer) (images.Image, error) {
	if name := sb.PackageImage(); name != "" && sb.Image == name {
		opts := images.PackageOptions{Name: name, Packages: sb.Packages, Pip: sb.Pip, Log: log}
		if sb.PipFindLinks != nil {
			wheels, err := tempdir.Make("", "ceval-wheels-")
			if err != nil {
				return images.Image{}, err
			}
			defer tempdir.Remove(wheels)
			if err := copyWheels(sb.PipFindLinks, wheels); err != nil {
				return images.Image{}, fmt.Errorf("sandbox.pip_find_links %s: %w", sb.PipFindLinks.Path, err)
			}
			opts.PipFindLinks = wheels
		}
		if _, err := images.BuildPackages(ctx, c, opts); err != nil {
			return images.Image{}, err
		}
	}
	return ResolvePinned(ctx, c, sb.Image, pins, pc, busybox)
}

// copyWheels copies the regular files at the top of the task's wheel directory, through
// the handle held since load, into dst (private to ceval): the image build reads (as root,
// with cp) only that copy, never a path a task author could swap for a link to the host.
func copyWheels(src *task.Dir, dst string) error {
	ents, err := fs.ReadDir(rootfs.NonBlocking(src.Root()), ".")
	if err != nil {
		return err
	}
	out, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := copyRootFile(src.Root(), out, e.Name(), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
