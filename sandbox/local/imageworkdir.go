package local

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/containerd/containerd/v2/client"
	"github.com/opencontainers/image-spec/identity"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/busy"
	"ceval.dev/ceval/task"
)

// ImageWorkdirAuto is sandbox.Config.ImageWorkdir for a task that did not set
// sandbox.image_workdir: the image's working directory is copied when the image names one
// other than "/".
const ImageWorkdirAuto = "auto"

// ImageWorkdirMode is the sandbox.Config.ImageWorkdir of a task's agent sandbox.
func ImageWorkdirMode(sb task.Sandbox) string {
	if sb.ImageWorkdir == "" {
		return ImageWorkdirAuto
	}
	return sb.ImageWorkdir
}

// imageWorkdirCopy is what copyImageWorkdir copied.
type imageWorkdirCopy struct {
	Dir     string   // the image's WorkingDir; "" when nothing was copied
	Entries int64    // files, directories and links
	Bytes   int64    // of regular files
	Skipped []string // devices, FIFOs, sockets left out: "PATH (KIND)"
}

// emptyWorkdirs remembers, per image content (the chain ID of its layers: a committed
// snapshot's tree never changes) and working directory, a tree copyImageWorkdir found
// nothing in (no such directory, or an empty one), so the next run over the same image
// mounts no view of it: a view is a lease, a snapshot made and removed, a mount and an
// unmount, containerd metadata writes each run paid for an empty /workspace (the default
// image's). Later processes learn it from images' empty-directory cache on disk (same key).
// A tree with anything in it is copied afresh for every run.
var emptyWorkdirs sync.Map // chainID + "\x00" + rel -> imageWorkdirCopy

// workdirViews counts the views copyImageWorkdir mounted, for tests.
var workdirViews atomic.Int64

// copyImageWorkdir fills the fresh workspace ws with the tree at wd, the WorkingDir of image
// name's config, read from a read-only view of its unpacked snapshot, when mode (ImageWorkdirAuto,
// task.ImageWorkdirCopy or task.ImageWorkdirIgnore; "" is ignore) asks for it. The tree is
// copied as a template_dir is (no link followed, special files skipped) under the
// workspace's caps: a cap hit is an error naming the image, as the image is the task
// author's and a silently partial workspace would grade the agent on the wrong input.
//
// chain is the chain ID of the image's layers as the run resolved them ("" looks the name up):
// the tree is remembered by it, and viewed from it.
func copyImageWorkdir(ctx context.Context, c *client.Client, name string, chain digest.Digest, wd, mode, ws string, diskMB int64) (imageWorkdirCopy, error) {
	var out imageWorkdirCopy
	if mode == "" || mode == task.ImageWorkdirIgnore {
		return out, nil
	}
	rel := strings.TrimPrefix(path.Clean("/"+wd), "/")
	if wd == "" || rel == "" {
		if mode == task.ImageWorkdirCopy {
			return out, fmt.Errorf("sandbox.image_workdir is copy but image %s names no working directory (its config's WorkingDir is %q): set WORKDIR in the image or drop sandbox.image_workdir", name, wd)
		}
		return out, nil
	}
	var keyErr error
	if chain == "" {
		chain, keyErr = imageChainID(ctx, c, name)
	}
	key := chain.String() + "\x00" + rel
	if keyErr == nil {
		if known, ok := emptyWorkdirs.Load(key); ok {
			return known.(imageWorkdirCopy), nil
		}
		if images.KnownEmptyDir(chain, rel) {
			known := imageWorkdirCopy{Dir: "/" + rel}
			emptyWorkdirs.Store(key, known)
			return known, nil
		}
	}
	tc := &treeCopy{
		maxBytes: diskMB << 20, maxEntries: workspaceInodes(diskMB),
		capErr: func(what string) error {
			return fmt.Errorf("image %s: its working directory %s holds %s, over the workspace's cap (sandbox.limits.disk_mb %d): raise sandbox.limits.disk_mb, make the image's %s smaller, or set sandbox.image_workdir: ignore", name, "/"+rel, what, diskMB, "/"+rel)
		},
	}
	workdirViews.Add(1)
	err := withImageRootOf(ctx, c, name, chain, func(r *os.Root) error {
		sub, err := openImageDir(r, rel, "make WORKDIR a real directory or set sandbox.image_workdir: ignore")
		if err != nil || sub == nil {
			return err
		}
		defer sub.Close()
		out.Dir = "/" + rel
		return copyTree(sub, ws, tc)
	})
	out.Entries, out.Bytes, out.Skipped = tc.entries, tc.bytes, tc.skipped
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return out, fmt.Errorf("image %s: its working directory /%s does not fit the workspace (sandbox.limits.disk_mb %d): %w; raise sandbox.limits.disk_mb or set sandbox.image_workdir: ignore", name, rel, diskMB, err)
		}
		if strings.HasPrefix(err.Error(), "image ") {
			return out, err
		}
		return out, fmt.Errorf("image %s: working directory /%s: %w", name, rel, err)
	}
	if keyErr == nil && tc.entries == 0 && len(tc.skipped) == 0 {
		emptyWorkdirs.Store(key, imageWorkdirCopy{Dir: out.Dir})
		_ = images.RememberEmptyDir(chain, rel) // a cache: a write that fails costs the next process a view
	}
	return out, nil
}

// imageChainID is the chain ID of image name's layers (read from its manifest and config, no
// snapshot).
func imageChainID(ctx context.Context, c *client.Client, name string) (digest.Digest, error) {
	img, err := c.GetImage(ctx, name)
	if err != nil {
		return "", err
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return "", err
	}
	return identity.ChainID(diffIDs), nil
}

// withImageRootOf is withImageRoot of the layers with chain ID chain, when it is not "": the
// very layers the caller keys what it learns by. When they are not unpacked, the image is
// looked up and unpacked, and must still have those layers.
func withImageRootOf(ctx context.Context, c *client.Client, name string, chain digest.Digest, f func(*os.Root) error) error {
	if chain == "" {
		return withImageRoot(ctx, c, name, f)
	}
	if _, err := c.SnapshotService(images.Snapshotter).Stat(ctx, chain.String()); err != nil {
		if !errdefs.IsNotFound(err) {
			return fmt.Errorf("image %s: %w", name, err)
		}
		got, err := imageChainID(ctx, c, name)
		if err != nil {
			return fmt.Errorf("image %s: %w", name, err)
		}
		if got != chain {
			return fmt.Errorf("image %s changed while the run started (its layers are now %s, resolved as %s): run again", name, got, chain)
		}
		return withImageRoot(ctx, c, name, f)
	}
	return viewLayers(ctx, c, name, chain, f)
}

// withImageRoot calls f with a read-only view of image name's unpacked rootfs.
func withImageRoot(ctx context.Context, c *client.Client, name string, f func(*os.Root) error) error {
	img, err := c.GetImage(ctx, name)
	if err != nil {
		return fmt.Errorf("image %s: %w", name, err)
	}
	if ok, err := img.IsUnpacked(ctx, images.Snapshotter); err != nil {
		return fmt.Errorf("image %s: %w", name, err)
	} else if !ok {
		if err := busy.Retry(ctx, func() error { return img.Unpack(ctx, images.Snapshotter) }); err != nil {
			return fmt.Errorf("unpack image %s: %w", name, err)
		}
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return fmt.Errorf("image %s: %w", name, err)
	}
	return viewLayers(ctx, c, name, identity.ChainID(diffIDs), f)
}

// viewLayers calls f with a read-only view of the unpacked layers with chain ID chain (of
// image name, for errors).
func viewLayers(ctx context.Context, c *client.Client, name string, chain digest.Digest, f func(*os.Root) error) error {
	lctx, done, err := c.WithLease(ctx)
	if err != nil {
		return err
	}
	defer done(context.WithoutCancel(ctx))
	sn := c.SnapshotService(images.Snapshotter)
	key := "ceval-workdir-" + rand.Text()
	mounts, err := sn.View(lctx, key, chain.String())
	if err != nil {
		return fmt.Errorf("image %s: view of its snapshot: %w", name, err)
	}
	defer sn.Remove(context.WithoutCancel(lctx), key)
	return busy.WithTempMount(lctx, mounts, true, func(root string) error {
		r, err := os.OpenRoot(root)
		if err != nil {
			return err
		}
		defer r.Close()
		return f(r)
	})
}

// openImageDir opens the directory rel of an image's rootfs r, every component of it a real
// directory of the image: none is followed as a link (even one that stays in the image), and
// a missing one is nil, an empty tree. fix says what to do about a component that is not a
// directory.
func openImageDir(r *os.Root, rel, fix string) (*os.Root, error) {
	p := ""
	for _, seg := range strings.Split(rel, "/") {
		p = path.Join(p, seg)
		fi, err := r.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("/%s is not a directory (%s); ceval does not follow links into the image: %s", p, fi.Mode().Type(), fix)
		}
	}
	return r.OpenRoot(rel)
}

// copyImageOutputs fills each output's fresh host directory (dirs[i] for outputs[i]) with
// what image name holds at that path, as the workspace gets the WORKDIR's tree (no link
// followed, special files skipped, the output's cap an error): an output declared over a
// directory the image fills (reference data beside the answers) keeps its files.
func copyImageOutputs(ctx context.Context, c *client.Client, name string, outputs, dirs []string, diskMB int64) ([]string, error) {
	if len(outputs) == 0 {
		return nil, nil
	}
	var skipped []string
	err := withImageRoot(ctx, c, name, func(r *os.Root) error {
		for i, o := range outputs {
			rel := strings.TrimPrefix(path.Clean(o), "/")
			sub, err := openImageDir(r, rel, "declare another output path")
			if err != nil {
				return fmt.Errorf("image %s: output %s: %w", name, o, err)
			}
			if sub == nil {
				continue
			}
			tc := &treeCopy{maxBytes: diskMB << 20, maxEntries: workspaceInodes(diskMB), capErr: func(what string) error {
				return fmt.Errorf("image %s: its %s holds %s, over the output's cap (sandbox.limits.disk_mb %d): raise sandbox.limits.disk_mb or make the image's %s smaller", name, o, what, diskMB, o)
			}}
			err = copyTree(sub, dirs[i], tc)
			sub.Close()
			for _, sk := range tc.skipped {
				skipped = append(skipped, o+"/"+sk)
			}
			if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
				return fmt.Errorf("image %s: its %s does not fit the output (sandbox.limits.disk_mb %d): %w", name, o, diskMB, err)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return skipped, err
}
