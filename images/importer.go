package images

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"

	"ceval.dev/ceval/internal/busy"
)

// importRepo names what an archive leaves unnamed: a bare OCI tag "v1" becomes
// ceval.local/import:v1, an unnamed manifest ceval.local/import@sha256:....
const importRepo = "ceval.local/import"

// Import reads an OCI image layout tarball or a `docker save` archive from r into ctx's
// namespace, unpacks each image for this platform and returns them. Names come from the
// archive (io.containerd.image.name, org.opencontainers.image.ref.name, or docker's
// RepoTags, normalised to docker.io/library/NAME:TAG); an existing image of the same name
// is replaced.
func Import(ctx context.Context, c *client.Client, r io.Reader) ([]Image, error) {
	imgs, err := importArchive(ctx, c, r)
	if err != nil {
		return nil, fmt.Errorf("import image archive: %w", err)
	}
	return imgs, nil
}

func importArchive(ctx context.Context, c *client.Client, r io.Reader) ([]Image, error) {
	// Hold a lease until the images are unpacked, so GC cannot take content in between.
	ctx, done, err := c.WithLease(ctx)
	if err != nil {
		return nil, err
	}
	defer done(context.WithoutCancel(ctx)) // released when the build is interrupted too
	recs, err := c.Import(ctx, r,
		client.WithImageRefTranslator(func(ref string) string {
			if strings.ContainsAny(ref, "/:@") {
				return ref
			}
			return importRepo + ":" + ref
		}),
		client.WithDigestRef(func(d digest.Digest) string { return importRepo + "@" + d.String() }),
		client.WithSkipDigestRef(func(name string) bool { return name != "" }),
	)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("the archive holds no image for this platform")
	}
	var out []Image
	for _, rec := range recs {
		if err := unpack(ctx, c, rec); err != nil {
			return nil, err
		}
		if err := setSource(ctx, c, rec.Name, SourceImported); err != nil {
			return nil, err
		}
		if rec.Labels == nil {
			rec.Labels = map[string]string{}
		}
		rec.Labels[SourceLabel] = SourceImported // as a Lookup of the record now reads it
		r, err := resolve(ctx, c.ContentStore(), rec)
		if err != nil {
			return nil, err
		}
		out = append(out, r.image)
	}
	return out, nil
}

// unpack makes sure the image's layers are unpacked for Snapshotter.
// unpackResolved is unpack of an image whose config resolve has read already: whether it is
// unpacked is one Stat of the snapshot its layers' chain ID names (what IsUnpacked checks,
// without reading the manifest and config again).
func unpackResolved(ctx context.Context, c *client.Client, r *resolved) error {
	if _, err := c.SnapshotService(Snapshotter).Stat(ctx, identity.ChainID(r.config.RootFS.DiffIDs).String()); err == nil {
		return nil
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("image %s: check unpacked: %w", r.record.Name, err)
	}
	return unpack(ctx, c, r.record)
}

func unpack(ctx context.Context, c *client.Client, rec images.Image) error {
	img := client.NewImage(c, rec)
	ok, err := img.IsUnpacked(ctx, Snapshotter)
	if err != nil {
		return fmt.Errorf("image %s: check unpacked: %w", rec.Name, err)
	}
	if ok {
		return nil
	}
	// Unpack is idempotent: one that failed on a busy temporary mount of containerd's is
	// tried again as a whole.
	if err := busy.Retry(ctx, func() error { return img.Unpack(ctx, Snapshotter) }); err != nil {
		return fmt.Errorf("image %s: unpack for %s: %w", rec.Name, Snapshotter, err)
	}
	return nil
}

// setSource labels image name's record with where it came from (images ls shows it).
func setSource(ctx context.Context, c *client.Client, name, source string) error {
	rec := images.Image{Name: name, Labels: map[string]string{SourceLabel: source}}
	if _, err := c.ImageService().Update(ctx, rec, "labels."+SourceLabel); err != nil {
		return fmt.Errorf("image %s: label its source: %w", name, err)
	}
	return nil
}
