package images

import (
	"context"
	"fmt"
	"io"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images/archive"
	"github.com/containerd/platforms"
)

// Export writes image name (this platform's manifest and layers) to w as an OCI image layout
// tarball whose index names it (io.containerd.image.name; no docker manifest.json): what Import and `ctr images
// import` read back under the same name, for example into a Kubernetes node's containerd
// (namespace k8s.io), and what registry tools push. A missing image is a *NotFoundError.
func Export(ctx context.Context, c *client.Client, name string, w io.Writer) (Image, error) {
	img, err := Lookup(ctx, c, name)
	if err != nil {
		return Image{}, err
	}
	if err := c.Export(ctx, w, archive.WithImage(c.ImageService(), img.Name), archive.WithPlatform(platforms.DefaultStrict()), archive.WithSkipDockerManifest()); err != nil {
		return Image{}, fmt.Errorf("export image %s: %w", img.Name, err)
	}
	return img, nil
}
