package supervisor

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
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
)

// RootVerifierSupported says whether SandboxConfig.Root is possible here: not with a
// rootless daemon, whose user namespace cannot idmap the image's layers.
func RootVerifierSupported() bool { return rootlessRuns() == nil }

// VerifierInfo is result.json's verifier for the user's verifier_network and the task's
// container criteria.
func VerifierInfo(network string, t *task.Task) *record.VerifierResult {
	uid := "uid " + strconv.Itoa(int(policy.GraderUID))
	v := &record.VerifierResult{User: uid, Network: policy.NetworkNone}
	if RootVerifierSupported() {
		v.User = "root in its own user namespace"
		for i := range t.Criteria {
			if c := &t.Criteria[i]; c.Verifier != nil && c.SharesNoPrivilegeWithItsTests() {
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

// mountRootOverlay makes the writable root of a SandboxConfig.Root container: a read-only
// view of the image's snapshot, held by a lease of its own, under a launcher.RootOverlay
// idmapped to the user namespace at usernsPath (root hostID), capped at diskMB. It lies in a
// directory of its own under the system's temporary directory: the namespace's root must
// search every directory above the rootfs (runc binds it onto itself as that root), which
// a run's or a test's private directory (0700) does not allow. The returned close unmounts
// it, removes the directory and drops the view.
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
	parent, err := os.MkdirTemp("", launcher.RootOverlayPrefix)
	if err == nil {
		err = os.Chmod(parent, 0o711)
	}
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
