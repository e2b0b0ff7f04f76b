package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/internal/phasetime"
	"ceval.dev/ceval/internal/rootfs"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/task"
)

// Resolve makes sure an image is present (building the default one on first use) and
// passes the preflight: an image without the isolation label is refused, with the fix.
func Resolve(ctx context.Context, c *client.Client, name string, pc *PreflightCache, busybox string) (Image, error) {
	var img Image
	var err error
	endLookup := phasetime.Span("resolve: ensure/lookup")
	if name == DefaultName {
		img, err = EnsureDefault(ctx, c, DefaultOptions{Busybox: busybox})
	} else {
		img, err = Lookup(ctx, c, name)
	}
	endLookup()
	if err != nil {
		return img, err
	}
	endTouch := phasetime.Span("resolve: label write")
	TouchOnce(ctx, c, img.Name)
	endTouch()
	defer phasetime.Span("resolve: preflight")()
	var rep *Report
	if pc != nil {
		rep, err = pc.PreflightOf(ctx, c, img) // img was resolved just now: no second lookup
	} else {
		rep, err = Preflight(ctx, c, name)
	}
	if err != nil {
		return img, err
	}
	return img, rep.RunnableImage(img)
}

// ResolvePinned is Resolve of the digest pins pinned name to (see Pinner), recorded in the
// image as its reference and digest; an image pins does not pin (ceval's own), or a nil
// pins, is Resolve of name.
func ResolvePinned(ctx context.Context, c *client.Client, name string, pins *Pinner, pc *PreflightCache, busybox string) (Image, error) {
	if pins == nil || !Pinnable(name) {
		return Resolve(ctx, c, name, pc, busybox)
	}
	local, pin, err := pins.Local(ctx, c, name)
	if err != nil {
		return Image{Name: name}, err
	}
	img, err := Resolve(ctx, c, local, pc, busybox)
	img.Reference, img.Digest = pin.Reference, pin.Digest
	if errors.Is(err, ErrNotRunnable) {
		// The fix (images label, a rebuild) is for the name the task gives, not the digest's.
		err = &renamedError{strings.ReplaceAll(err.Error(), local, name), err}
	}
	return img, err
}

// renamedError is err with another text.
type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

// ResolveSandbox is ResolvePinned for a task's sandbox: when the task asks for packages
// (sandbox.packages, sandbox.pip) and named no image of its own, the package image is
// built first (kept when containerd has it with the same inputs, imported from the image
// cache when that has it; mmdebstrap's progress goes to log). Either way the image then
// passes the same preflight as any other.
func ResolveSandbox(ctx context.Context, c *client.Client, sb task.Sandbox, pins *Pinner, pc *PreflightCache, busybox string, log io.Writer) (Image, error) {
	if name := sb.PackageImage(); name != "" && sb.Image == name {
		opts := PackageOptions{Name: name, Packages: sb.Packages, Pip: sb.Pip, Log: log}
		if sb.PipFindLinks != nil {
			wheels, err := tempdir.Make("", "ceval-wheels-")
			if err != nil {
				return Image{}, err
			}
			defer tempdir.Remove(wheels)
			if err := copyWheels(sb.PipFindLinks, wheels); err != nil {
				return Image{}, fmt.Errorf("sandbox.pip_find_links %s: %w", sb.PipFindLinks.Path, err)
			}
			opts.PipFindLinks = wheels
		}
		if _, err := BuildPackages(ctx, c, opts); err != nil {
			return Image{}, err
		}
	}
	return ResolvePinned(ctx, c, sb.Image, pins, pc, busybox)
}

// copyWheels copies the regular files at the top of the task's wheel directory, through
// the handle held since load, into dst (private to ceval): the image build reads (as root,
// with cp) only that copy, never a path a task author could swap for a link to the host.
func copyWheels(src *task.Dir, dst string) error {
	ents, err := fs.ReadDir(rootfs.NonBlocking(src.Root()), ".")
	if err != nil {
		return err
	}
	out, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := rootfs.CopyFile(src.Root(), out, e.Name(), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
