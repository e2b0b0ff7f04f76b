package kube

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/internal/kubeproto"
	"ceval.dev/ceval/snapshot"
)

// SnapshotTar makes the snapshot of a workspace that arrives as a tar stream out of a Pod,
// with the rules of a local one: the stream is hostile, so it is first unpacked into a
// private staging directory beside dst where nothing can escape (every entry's parent must
// be a directory the stream itself made, so no path runs through a link; absolute and ".."
// names are refused; symlinks are made as links and never resolved; hard links only to
// files already unpacked; device nodes are never made), then snapshot.Take copies the
// staging tree into dst under lim exactly as it copies a local workspace, and the staging
// directory is removed. A file over the per-file cap is unpacked sparse at its declared
// size (no disk used), so Take omits it with its real size. Whatever the stream held that
// was not reproduced (a refused entry, a device, a stream cut by a cap or an error) marks
// the root Omitted, so no name ever looks absent because of the transport.
func SnapshotTar(r io.Reader, dst string, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	lim, err := lim.WithDefaults()
	if err != nil {
		return nil, err
	}
	staging, err := os.MkdirTemp(filepath.Dir(dst), ".tar-staging-")
	if err != nil {
		return nil, fmt.Errorf("snapshot of tar stream: %w", err)
	}
	defer os.RemoveAll(staging)
	u, err := unpack(r, staging, lim)
	if err != nil {
		return nil, err
	}
	s, err := snapshot.Take(staging, dst, lim)
	if err != nil {
		return nil, err
	}
	s.Notes = append(s.Notes, u.notes...)
	if u.incomplete != "" {
		s.RootOmitted = u.incomplete
		s.Truncated = s.Truncated || u.cut
	}
	if u.limitHit != "" {
		s.LimitsHit = append(s.LimitsHit, u.limitHit)
	}
	return s, nil
}

// unpacked is what unpack could not reproduce.
type unpacked struct {
	notes      []snapshot.Note
	incomplete string // why the staging tree is not the whole stream; "" when it is
	cut        bool   // a cap or an error stopped reading the stream
	limitHit   string
}

func (u *unpacked) refuse(name, reason string) {
	u.notes = append(u.notes, snapshot.Note{Path: strings.ToValidUTF8(name, "\uFFFD"), Reason: reason})
	if u.incomplete == "" {
		u.incomplete = "the workspace stream held entries that were not reproduced (see notes); other names may exist"
	}
}

func (u *unpacked) stop(reason, limitHit string) {
	u.notes = append(u.notes, snapshot.Note{Path: ".", Reason: reason})
	u.incomplete, u.cut, u.limitHit = reason+"; other names may exist", true, limitHit
}

// unpack writes the stream's directories, regular files, symlinks, hard links and FIFOs
// into staging. Only a failure writing staging is an error; the stream's own faults are notes.
func unpack(r io.Reader, staging string, lim snapshot.Limits) (*unpacked, error) {
	root, err := os.OpenRoot(staging)
	if err != nil {
		return nil, fmt.Errorf("snapshot of tar stream: %w", err)
	}
	defer root.Close()
	u := &unpacked{}
	dirs := map[string]bool{".": true} // made by the stream: the only valid parents
	files := map[string]bool{}         // regular files made by the stream: the only link targets
	seen := map[string]bool{}
	var entries int
	var pathBytes, written int64
	buf := make([]byte, 256<<10)
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return u, nil
		}
		if err != nil {
			u.stop(fmt.Sprintf("workspace stream unreadable (%v)", err), "")
			return u, nil
		}
		name, ok := kubeproto.TarName(h.Name)
		switch {
		case !ok:
			u.refuse(h.Name, "name is absolute or leaves the workspace; refused")
			continue
		case name == ".":
			continue
		}
		entries++
		pathBytes += int64(len(name))
		switch {
		case entries > lim.MaxEntries:
			u.stop(fmt.Sprintf("entry cap %d reached in the workspace stream; stopped", lim.MaxEntries), "entries")
			return u, nil
		case pathBytes > lim.MaxPathBytes:
			u.stop(fmt.Sprintf("path cap of %d bytes reached in the workspace stream; stopped", lim.MaxPathBytes), "path_bytes")
			return u, nil
		case !namesFit(name):
			u.refuse(name, "a path component longer than 255 bytes (no filesystem holds it); refused")
			continue
		case h.Typeflag == tar.TypeSymlink && (h.Linkname == "" || len(h.Linkname) >= 4096 || strings.ContainsRune(h.Linkname, 0)):
			u.refuse(name, "a symbolic link with an empty, overlong or NUL-holding target (no filesystem holds it); refused")
			continue
		case seen[name]:
			u.refuse(name, "appears twice in the stream; the later entry refused")
			continue
		case !dirs[path.Dir(name)]:
			u.refuse(name, "its parent is not a directory of the stream (a path through a link, or out of order); refused")
			continue
		}
		seen[name] = true
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.Mkdir(name, 0o700); err != nil {
				return nil, stagingErr(name, err)
			}
			dirs[name] = true
		case tar.TypeReg:
			if h.Size < 0 {
				u.refuse(name, "negative size; refused")
				continue
			}
			if h.Size <= lim.MaxFileBytes && written+h.Size > lim.MaxTotalBytes {
				u.stop(fmt.Sprintf("total cap of %d bytes reached in the workspace stream at %s; stopped", lim.MaxTotalBytes, name), "total_bytes")
				return u, nil
			}
			n, rerr, werr := unpackFile(root, name, h, tr, lim.MaxFileBytes, buf)
			if werr != nil {
				return nil, stagingErr(name, werr)
			}
			written += n
			if rerr != nil {
				// never a partial file in the snapshot: its bytes would pass for the agent's
				if err := root.Remove(name); err != nil {
					return nil, stagingErr(name, err)
				}
				u.stop(fmt.Sprintf("workspace stream cut inside %s (%v)", name, rerr), "")
				return u, nil
			}
			files[name] = true
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, name); err != nil {
				return nil, stagingErr(name, err)
			}
		case tar.TypeLink:
			target, ok := kubeproto.TarName(h.Linkname)
			if !ok || !files[target] {
				u.refuse(name, fmt.Sprintf("hard link to %q, which is not a regular file of the stream; refused", h.Linkname))
				continue
			}
			if err := root.Link(target, name); err != nil {
				return nil, stagingErr(name, err)
			}
		case tar.TypeFifo:
			if err := mkfifo(root, name); err != nil {
				return nil, stagingErr(name, err)
			}
		default:
			u.refuse(name, fmt.Sprintf("tar entry type %q (device or unsupported) is never made; refused", h.Typeflag))
		}
	}
}

// namesFit reports whether every component of the slash path name fits a directory entry
// (NAME_MAX, 255 bytes): a forged stream's longer one is refused as the stream's fault, not
// failed on as staging's.
func namesFit(name string) bool {
	for _, c := range strings.Split(name, "/") {
		if len(c) > 255 {
			return false
		}
	}
	return true
}

// unpackFile makes a regular file of the stream and copies its bytes, telling a read
// failure (the stream's) from a write failure (staging's). One over maxFile gets no bytes: it
// is made sparse at its declared size, so the snapshot omits it with that size; a size the
// filesystem cannot hold is a read failure (the stream lies).
func unpackFile(root *os.Root, name string, h *tar.Header, r io.Reader, maxFile int64, buf []byte) (n int64, rerr, werr error) {
	mode := os.FileMode(0o600)
	if h.Mode&0o100 != 0 {
		mode = 0o700
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	if h.Size > maxFile {
		if err := f.Truncate(h.Size); err != nil {
			return 0, fmt.Errorf("declared size %d: %w", h.Size, err), nil
		}
		return 0, nil, f.Close()
	}
	for n < h.Size {
		m, err := r.Read(buf[:min(int64(len(buf)), h.Size-n)])
		if m > 0 {
			if _, werr := f.Write(buf[:m]); werr != nil {
				return n, nil, werr
			}
			n += int64(m)
		}
		if err == io.EOF && n < h.Size {
			err = io.ErrUnexpectedEOF
		}
		if err != nil && n < h.Size {
			return n, err, nil
		}
	}
	return n, nil, f.Close()
}

// mkfifo makes a FIFO at name below root (its parent is a directory the stream made).
func mkfifo(root *os.Root, name string) error {
	dir, err := root.Open(path.Dir(name))
	if err != nil {
		return err
	}
	defer dir.Close()
	return unix.Mkfifoat(int(dir.Fd()), path.Base(name), 0o600)
}

func stagingErr(name string, err error) error {
	return fmt.Errorf("snapshot of tar stream: unpack %s into staging: %w", name, err)
}
