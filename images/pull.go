package images

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/internal/busy"
	cevalregistry "ceval.dev/ceval/registry"
)

// Size bounds on what a registry may send before a byte is fetched: a manifest, index or
// config larger than MaxPulledManifestSize, or a layer larger than MaxPulledLayerSize, is
// refused.
var (
	MaxPulledManifestSize int64 = 4 << 20
	MaxPulledLayerSize    int64 = 8 << 30
	// MaxPulledLayers bounds the layers of a pulled manifest (overlayfs stacks at most
	// about 128 lower directories anyway); a manifest with more is refused before any is
	// fetched.
	MaxPulledLayers = 128
)

// PullOptions says how to pull.
type PullOptions struct {
	Resolver remotes.Resolver
	// Platform is an OS/ARCH[/VARIANT] specifier; "" is this host's platform.
	Platform string
	// Log gets one line per layer fetched (nil: none).
	Log io.Writer
	// LeaseLabels go on the lease that holds the pull's content until it is done (the
	// owner labels ceval gc reads to remove a killed pull's lease).
	LeaseLabels map[string]string
}

// Pull fetches ref through containerd's own fetcher, then preflights it as `images check`
// does: an image holding a setuid/setgid file or a file capability is refused (an error
// wrapping ErrNotRunnable) and, like any failed pull, leaves neither its image record nor
// its new content in containerd. A passing image is unpacked for Snapshotter, and its
// record labeled SourceLabel=pulled and ReferenceLabel=ref: a run takes it without the
// isolation label, since it passed the preflight `ceval images label` makes.
func Pull(ctx context.Context, c *client.Client, ref string, o PullOptions) (Image, *Report, error) {
	r, rep, err := pull(ctx, c, ref, o)
	if err != nil {
		return Image{}, nil, err
	}
	return r.image, rep, nil
}

func pull(ctx context.Context, c *client.Client, ref string, o PullOptions) (*resolved, *Report, error) {
	ls := c.LeasesService()
	l, err := ls.Create(ctx, leases.WithRandomID(), leases.WithExpiration(2*time.Hour), leases.WithLabels(o.LeaseLabels))
	if err != nil {
		return nil, nil, err
	}
	// Deleting the lease synchronously collects whatever a failed pull left unreferenced.
	defer ls.Delete(context.WithoutCancel(ctx), l, leases.SynchronousDelete)
	lctx := leases.WithLease(ctx, l.ID)

	match, want := platforms.Default(), platforms.DefaultString()
	if o.Platform != "" {
		p, err := platforms.Parse(o.Platform)
		if err != nil {
			return nil, nil, fmt.Errorf("--platform %q: %w", o.Platform, err)
		}
		match, want = platforms.Only(p), platforms.Format(p)
	}
	prev, getErr := c.ImageService().Get(ctx, ref)
	img, err := c.Pull(lctx, ref,
		client.WithResolver(o.Resolver),
		client.WithPlatformMatcher(match),
		client.WithPullLabels(map[string]string{SourceLabel: SourcePulled, ReferenceLabel: ref}),
		client.WithImageHandlerWrapper(func(h images.Handler) images.Handler {
			return images.HandlerFunc(func(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
				if err := checkPullSize(desc); err != nil {
					return nil, err
				}
				children, err := h.Handle(ctx, desc)
				if err == nil && images.IsManifestType(desc.MediaType) {
					n := 0
					for _, ch := range children {
						if images.IsLayerType(ch.MediaType) {
							n++
						}
					}
					if n > MaxPulledLayers {
						return nil, fmt.Errorf("%w: manifest %s has %d layers, over the bound of %d", cevalregistry.ErrRefused, desc.Digest, n, MaxPulledLayers)
					}
				}
				if err == nil && o.Log != nil && images.IsLayerType(desc.MediaType) {
					fmt.Fprintf(o.Log, "fetched layer %s (%d bytes)\n", desc.Digest, desc.Size)
				}
				return children, err
			})
		}),
	)
	if err != nil {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "unexpected commit digest") || strings.Contains(msg, "unexpected commit size"):
			return nil, nil, fmt.Errorf("pull %s: %w: the registry sent content whose bytes do not match its digest or size; nothing was kept: %w", ref, cevalregistry.ErrRefused, err)
		case strings.Contains(msg, "read exceeds expected size") || strings.Contains(msg, "read past expected size"):
			return nil, nil, fmt.Errorf("pull %s: %w: the registry sent a blob longer than its descriptor says (an endless blob?); nothing was kept: %w", ref, cevalregistry.ErrRefused, err)
		case strings.Contains(msg, "no match for platform"):
			return nil, nil, fmt.Errorf("pull %s: %w: the image index has no manifest for platform %s; give --platform for one it has; nothing was kept: %w", ref, cevalregistry.ErrRefused, want, err)
		}
		return nil, nil, fmt.Errorf("pull %s: %w", ref, err)
	}
	rec := img.Metadata()
	fail := func(err error) (*resolved, *Report, error) {
		var derr error
		if getErr == nil { // the name was there before: point it back where it was
			_, derr = c.ImageService().Update(context.WithoutCancel(ctx), prev, "target")
		} else if derr = c.ImageService().Delete(context.WithoutCancel(ctx), rec.Name, images.SynchronousDelete()); errdefs.IsNotFound(derr) {
			derr = nil
		}
		if derr != nil {
			err = fmt.Errorf("%w (and removing the pulled image record %s failed: %v)", err, rec.Name, derr)
		}
		return nil, nil, err
	}
	r, err := resolveFor(lctx, c.ContentStore(), rec, match, want)
	if err != nil {
		return fail(fmt.Errorf("pull %s: %w", ref, err))
	}
	// The preflight reads the layers while they are unpacked (both only read the content
	// store); a refused image's snapshots go with its record and the lease.
	unpacked := make(chan error, 1)
	go func() {
		img := client.NewImageWithPlatform(c, rec, match)
		unpacked <- busy.Retry(lctx, func() error { return img.Unpack(lctx, Snapshotter) })
	}()
	rep, err := scan(lctx, c.ContentStore(), r)
	uerr := <-unpacked
	if err != nil {
		return fail(fmt.Errorf("pull %s: %w", ref, err))
	}
	if len(rep.Dangerous) > 0 {
		return fail(fmt.Errorf("%w: pulled image %s holds %d setuid/setgid or file-capability file(s): %s; it was removed again; remove them from the image (chmod u-s,g-s FILE; setcap -r FILE) and push it again",
			ErrNotRunnable, ref, len(rep.Dangerous), summarize(rep.Dangerous, 5)))
	}
	if uerr != nil {
		return fail(fmt.Errorf("image %s: unpack for %s: %w", rec.Name, Snapshotter, uerr))
	}
	return r, rep, nil
}

func checkPullSize(desc ocispec.Descriptor) error {
	switch {
	case images.IsLayerType(desc.MediaType):
		if desc.Size > MaxPulledLayerSize {
			return fmt.Errorf("%w: layer %s is %d bytes, over the %d byte bound", cevalregistry.ErrRefused, desc.Digest, desc.Size, MaxPulledLayerSize)
		}
	case desc.Size > MaxPulledManifestSize:
		return fmt.Errorf("%w: %s %s is %d bytes, over the %d byte bound for manifests and configs", cevalregistry.ErrRefused, desc.MediaType, desc.Digest, desc.Size, MaxPulledManifestSize)
	}
	return nil
}

// Push sends image name (this platform's manifest, config and layers) to ref through
// containerd's own pusher and returns the pushed image.
func Push(ctx context.Context, c *client.Client, name, ref string, resolver remotes.Resolver, log io.Writer) (Image, error) {
	rec, err := getRecord(ctx, c, name)
	if err != nil {
		return Image{}, err
	}
	r, err := resolve(ctx, c.ContentStore(), rec)
	if err != nil {
		return Image{}, err
	}
	err = c.Push(ctx, ref, r.manifestDesc,
		client.WithResolver(resolver),
		client.WithPlatformMatcher(platforms.Default()),
		client.WithImageHandlerWrapper(func(h images.Handler) images.Handler {
			return images.HandlerFunc(func(ctx context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
				children, err := h.Handle(ctx, desc)
				if err == nil && log != nil && images.IsLayerType(desc.MediaType) {
					fmt.Fprintf(log, "pushed layer %s (%d bytes)\n", desc.Digest, desc.Size)
				}
				return children, err
			})
		}),
	)
	if err != nil {
		return Image{}, fmt.Errorf("push %s to %s: %w", name, ref, err)
	}
	return r.image, nil
}
