package images

import (
	"context"
	"fmt"
	"sync"

	"github.com/containerd/containerd/v2/client"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// configs are the image configs this process read and checked against their digests, by
// digest: a blob's digest names its content, so one read serves every later run of the image
// (a run resolves its image, then reads its config, chain ID and WorkingDir).
var configs sync.Map // digest.Digest -> ocispec.Image

// remember keeps r's config for ConfigOf.
func (r *resolved) remember() {
	if r.configDesc.Digest != "" {
		configs.Store(r.configDesc.Digest, r.config)
	}
}

// ConfigOf returns the config of digest d (an Image's ConfigDigest, as Resolve returned it):
// the one this process read already, else read from the content store and checked against d.
// Unlike RunConfig it never looks a name up again, so what a run uses is the config of the
// image it resolved and preflighted, even if the name was retagged since.
func ConfigOf(ctx context.Context, c *client.Client, d digest.Digest) (ocispec.Image, error) {
	if v, ok := configs.Load(d); ok {
		return v.(ocispec.Image), nil
	}
	if err := d.Validate(); err != nil {
		return ocispec.Image{}, fmt.Errorf("image config %q: %w", d, err)
	}
	info, err := c.ContentStore().Info(ctx, d)
	if err != nil {
		return ocispec.Image{}, fmt.Errorf("image config %s: %w", d, err)
	}
	var cfg ocispec.Image
	if err := readJSON(ctx, c.ContentStore(), ocispec.Descriptor{Digest: d, Size: info.Size}, &cfg); err != nil {
		return ocispec.Image{}, fmt.Errorf("image config %s: %w", d, err)
	}
	configs.Store(d, cfg)
	return cfg, nil
}

// ChainID is the chain ID of cfg's layers: the key of the image's unpacked snapshot.
func ChainID(cfg ocispec.Image) digest.Digest { return identity.ChainID(cfg.RootFS.DiffIDs) }
