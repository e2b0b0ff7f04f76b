package local

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// RootVerifierSupported says whether sandbox.Config.Root is possible here: not with a
// rootless daemon, whose user namespace cannot idmap the image's layers.
func RootVerifierSupported() bool { return RootlessMode() == nil }

// VerifierInfo is result.json's verifier for the user's verifier_network and the task's
// container criteria.
func VerifierInfo(network string, t *task.Task) *record.VerifierResult {
	uid := "uid " + strconv.Itoa(int(policy.GraderUID))
	v := &record.VerifierResult{User: uid, Network: policy.NetworkNone}
	if RootVerifierSupported() {
		v.User = "root in its own user namespace"
		for i := range t.Criteria {
			if c := &t.Criteria[i]; c.Verifier() != nil && c.SharesNoPrivilegeWithItsTests() {
				v.User += "; " + uid + " for harbor_reward and isolation: process criteria"
				break
			}
		}
	}
	if network == policy.NetworkHost {
		v.Network = network
	}
	return v
}

// RootOverlayBase holds the root overlays' directories: under /run (emptied at boot, as
// their mounts are), not under TMPDIR, which may be a private directory (0700) that the
// verifier's root could not search.
var RootOverlayBase = "/run/ceval/roots"

// rootOverlayDir makes a fresh directory for a root overlay in RootOverlayBase, every
// directory from /run/ceval down searchable by others (search only: nothing is listed).
func rootOverlayDir() (string, error) {
	if err := os.MkdirAll(RootOverlayBase, 0o711); err != nil {
		return "", fmt.Errorf("root overlay: %w", err)
	}
	for _, d := range []string{filepath.Dir(RootOverlayBase), RootOverlayBase} {
		fi, err := os.Stat(d)
		if err != nil {
			return "", fmt.Errorf("root overlay: %w", err)
		}
		if m := fi.Mode().Perm(); m&0o011 != 0o011 {
			if err := os.Chmod(d, m|0o011); err != nil {
				return "", fmt.Errorf("root overlay: %w", err)
			}
		}
	}
	// Named for this process (tempdir's owner tag): ceval gc unmounts and removes the overlay
	// of a ceval killed before its verifier container existed, which no container names.
	parent, err := os.MkdirTemp(RootOverlayBase, launcher.RootOverlayPrefix+tempdir.Owner()+"-")
	if err == nil {
		err = os.Chmod(parent, 0o711)
	}
	return parent, err
}

// mountRootOverlay makes the writable root of a sandbox.Config.Root container: a read-only
// view of the image's snapshot, held by a lease of its own, under a launcher.RootOverlay
// idmapped to the user namespace at usernsPath (root hostID), capped at diskMB, in a
// directory of its own under RootOverlayBase (see there). The returned close unmounts it,
// removes the directory and drops the view.
func mountRootOverlay(ctx context.Context, c *client.Client, image, usernsPath string, hostID uint32, diskMB int64) (string, func() error, error) {
	img, err := c.GetImage(ctx, image)
	if err != nil {
		return "", nil, fmt.Errorf("image %s: %w", image, err)
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("image %s: %w", image, err)
	}
	ls := c.LeasesService()
	bootID, err := launcher.BootID()
	if err != nil {
		return "", nil, err
	}
	key := "ceval-root-" + rand.Text()
	// Labelled as a container's lease is, so ceval gc drops it once this process is gone.
	lease, err := ls.Create(ctx, leases.WithRandomID(), leases.WithExpiration(launcher.DefaultLeaseExpiry),
		leases.WithLabels(map[string]string{"dev.ceval.container": key, oci.LabelPID: strconv.Itoa(os.Getpid()), oci.LabelBootID: bootID}))
	if err != nil {
		return "", nil, fmt.Errorf("root overlay: lease: %w", err)
	}
	sn := c.SnapshotService(images.Snapshotter)
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
	parent, err := rootOverlayDir()
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("root overlay: %w", err), closeAll())
	}
	closeView := closeAll
	closeAll = func() error {
		err := closeView() // unmounts first
		if rerr := os.Remove(filepath.Join(parent, "root", "rootfs")); rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, os.RemoveAll(parent)) // nothing is mounted in it any more
		}
		return err
	}
	if ov, err = launcher.MountRootOverlay(filepath.Join(parent, "root"), mounts, usernsPath, hostID, diskMB, workspaceInodes(diskMB)); err != nil {
		return "", nil, errors.Join(err, closeAll())
	}
	return ov.Path, closeAll, nil
}
