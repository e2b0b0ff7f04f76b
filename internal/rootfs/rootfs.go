// Package rootfs gives an os.Root's tree as an fs.FS whose opens never block: a FIFO planted
// (or swapped in while a walk is under way) where a directory or file was is opened without
// waiting for a writer, and reading a directory from it fails. Walks over hostile trees (task
// material, plugin sources) use it so that no tree can hang ceval.
package rootfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// NonBlocking returns r's tree as an fs.FS (for fs.WalkDir, fs.ReadFile) that opens every
// file read-only with O_NONBLOCK, through r, so it never leaves r either.
func NonBlocking(r *os.Root) fs.FS { return nonBlocking{r} }

type nonBlocking struct{ r *os.Root }

func (n nonBlocking) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := n.r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// CopyFile copies the regular file name from src to a new file of the same name in dst
// (perm, at least 0o600), opening it through src without following a link and without
// blocking on a FIFO swapped in; a file that is not regular when opened is refused.
func CopyFile(src, dst *os.Root, name string, perm os.FileMode) error {
	in, err := src.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s changed while being copied", name)
	}
	out, err := dst.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
