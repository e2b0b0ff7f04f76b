// Package busy retries an operation that fails because something else holds one of ceval's
// mounts for a moment (EBUSY): a host tool that walks every mount (stress-ng --io's syncfs,
// updatedb, a backup agent, a find) keeps an fd on each while it works, and while it does the
// mount cannot be unmounted, nor a container's task or a snapshot that unmounts one deleted.
// It never retries another error and never waits past its bound.
package busy

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"
)

// Bound is how long Retry keeps trying: a syncfs on a loaded disk takes seconds, containerd's
// own unmount gives up after 2.5 s (50 x 50 ms). Half of launcher.CleanupContext's minute, so
// a teardown still has time for its next steps.
const Bound = 30 * time.Second

const (
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = time.Second
)

// Is says whether err is EBUSY: the errno itself, or its text as containerd's gRPC and
// ttrpc errors carry it ("device or resource busy"), which loses the errno on the way.
func Is(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, unix.EBUSY) || strings.Contains(err.Error(), unix.EBUSY.Error())
}

// Retry calls op until it returns anything but a busy error (Is), backing off from 50 ms to
// 1 s between calls, for at most Bound or until ctx ends; it returns op's last error (a busy
// one once the bound passed). op must be safe to call again after failing busy.
func Retry(ctx context.Context, op func() error) error {
	return retry(ctx, Bound, op)
}

func retry(ctx context.Context, bound time.Duration, op func() error) error {
	deadline := time.Now().Add(bound)
	wait := firstBackoff
	for {
		err := op()
		if !Is(err) {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, maxBackoff)
	}
}

// Unmount unmounts dir, retrying while it is busy (Retry), and detaches it (MNT_DETACH) once
// the bound passed or ctx ended: what holds it then keeps it until it lets go, and ceval goes
// on. Not mounted (EINVAL) is success.
func Unmount(ctx context.Context, dir string) error {
	err := Retry(ctx, func() error { return unix.Unmount(dir, 0) })
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(dir, unix.MNT_DETACH)
	}
	if errors.Is(err, unix.EINVAL) {
		return nil
	}
	return err
}

// WithTempMount mounts mounts on a temporary directory (read-only if readonly), calls f with
// it, and unmounts them with Unmount before containerd's mount.WithTempMount would: that one
// gives up on a busy mount after 2.5 s and leaves it mounted.
func WithTempMount(ctx context.Context, mounts []mount.Mount, readonly bool, f func(root string) error) error {
	with := mount.WithTempMount
	if readonly {
		with = mount.WithReadonlyTempMount
	}
	return with(ctx, mounts, func(root string) error {
		err := f(root)
		for i := len(mounts) - 1; i >= 0; i-- {
			if uerr := Unmount(context.WithoutCancel(ctx), filepath.Join(root, mounts[i].Target)); uerr != nil {
				err = errors.Join(err, fmt.Errorf("unmount %s: %w", root, uerr))
			}
		}
		return err
	})
}
