package supervisor

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/launcher"
)

// mountRootOverlay makes the writable root of a SandboxConfig.Root container: a read-only
// view of the image's snapshot, held by a lease of its own, under a launcher.RootOverlay in
// dir idmapped to the user namespace at usernsPath (root hostID), capped at diskMB. The
// returned close unmounts it and drops the view.
func mountRootOverlay(ctx context.Context, c *client.Client, image, dir, usernsPath string, hostID uint32, diskMB int64) (string, func() error, error) {
	img, err := c.GetImage(ctx, image)
	if err != nil {
		return "", nil, fmt.Errorf("image %s: %w", image, err)
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("image %s: %w", image, err)
	}
	ls := c.LeasesService()
	lease, err := ls.Create(ctx, leases.WithRandomID(), leases.WithExpiration(launcher.DefaultLeaseExpiry))
	if err != nil {
		return "", nil, fmt.Errorf("root overlay: lease: %w", err)
	}
	sn := c.SnapshotService(images.Snapshotter)
	key := "ceval-root-" + rand.Text()
	var ov *launcher.RootOverlay
	closeAll := func() error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		var errs []error
		if ov != nil {
			errs = append(errs, ov.Close())
		}
		if err := sn.Remove(leases.WithLease(cctx, lease.ID), key); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("root overlay: remove view %s: %w", key, err))
		}
		if err := ls.Delete(cctx, lease); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("root overlay: delete lease: %w", err))
		}
		return errors.Join(errs...)
	}
	mounts, err := sn.View(leases.WithLease(ctx, lease.ID), key, identity.ChainID(diffIDs).String())
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("image %s: view of its snapshot: %w", image, err), closeAll())
	}
	if ov, err = launcher.MountRootOverlay(dir, mounts, usernsPath, hostID, diskMB, workspaceInodes(diskMB)); err != nil {
		return "", nil, errors.Join(err, closeAll())
	}
	return ov.Path, closeAll, nil
}
