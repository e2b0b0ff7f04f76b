package supervisor

import (
	"context"
	"io"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/task"
)

// ResolveTaskImage is ResolveImage for a task's sandbox: when the task asks for packages
// (sandbox.packages, sandbox.pip) and named no image of its own, the package image is
// built first (kept when containerd has it with the same inputs, imported from the image
// cache when that has it; mmdebstrap's progress goes to log). Either way the image then
// passes the same preflight as any other.
func ResolveTaskImage(ctx context.Context, c *client.Client, sb task.Sandbox, pc *images.PreflightCache, busybox string, log io.Writer) (images.Image, error) {
	if name := sb.PackageImage(); name != "" && sb.Image == name {
		_, err := images.BuildPackages(ctx, c, images.PackageOptions{
			Name: name, Packages: sb.Packages, Pip: sb.Pip, PipFindLinks: sb.PipFindLinks, Log: log,
		})
		if err != nil {
			return images.Image{}, err
		}
	}
	return ResolveImage(ctx, c, sb.Image, pc, busybox)
}
