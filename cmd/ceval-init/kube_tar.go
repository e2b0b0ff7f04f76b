package main

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"ceval.dev/ceval/internal/kubeproto"
)

// copyIn serves FrameCopyIn: the FrameData frames up to FrameEnd are a tar stream unpacked
// into the named directory; the reply is FrameOK or FrameError. The stream is read to its
// FrameEnd whatever happens, so the channel stays in step.
func (c *control) copyIn(f frame) {
	var d kubeproto.Dir
	derr := kubeproto.DecodeJSON(f.typ, f.payload, &d)
	pr, pw := io.Pipe()
	result := make(chan error, 1)
	go func() {
		err := derr
		if err == nil {
			err = unpackTar(pr, d.Dir)
		}
		pr.CloseWithError(errors.New("unpacking ended")) // the rest of the stream is drained
		result <- err
	}()
	for {
		f := <-c.frames
		switch f.typ {
		case kubeproto.FrameData:
			_, _ = pw.Write(f.payload)
			continue
		case kubeproto.FrameEnd:
			pw.Close()
			if err := <-result; err != nil {
				c.failed("copy in to "+d.Dir, err)
				return
			}
			_ = c.send(kubeproto.FrameOK, nil)
		default:
			pw.CloseWithError(errors.New("the stream was cut by another frame"))
			<-result
			c.unexpected(f, "inside a CopyIn stream (the copy failed)")
		}
		return
	}
}

// unpackTar unpacks a tar stream into dir, confined to it by os.Root (no name, link or
// symlink resolves outside); absolute and ".." names, devices and other special files are
// refused. Permission bits are kept (never set-id bits), as are modification times.
func unpackTar(r io.Reader, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	type dirEntry struct {
		name  string
		perm  os.FileMode
		mtime time.Time
	}
	var dirs []dirEntry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("tar stream: %w", err)
		}
		name, ok := kubeproto.TarName(h.Name)
		if !ok {
			return fmt.Errorf("tar entry %q: absolute or outside the directory; refused", h.Name)
		}
		perm := os.FileMode(h.Mode) & os.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if name != "." {
				if err := root.Mkdir(name, 0o700); err != nil {
					if fi, lerr := root.Lstat(name); lerr != nil || !fi.IsDir() {
						return err
					}
				}
			}
			dirs = append(dirs, dirEntry{name, perm, h.ModTime})
		case tar.TypeReg:
			if err := unpackFile(root, name, tr, perm, h.ModTime); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, name); err != nil {
				return err
			}
		case tar.TypeLink:
			target, ok := kubeproto.TarName(h.Linkname)
			if !ok || target == "." {
				return fmt.Errorf("tar entry %q: hard link to %q outside the directory; refused", h.Name, h.Linkname)
			}
			if err := root.Link(target, name); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tar entry %q: type %q is never unpacked (devices and special files are refused)", h.Name, h.Typeflag)
		}
	}
	for _, d := range slices.Backward(dirs) { // children first: a read-only directory is set last
		if err := root.Chmod(d.name, d.perm); err != nil {
			return err
		}
		if err := root.Chtimes(d.name, d.mtime, d.mtime); err != nil {
			return err
		}
	}
	return nil
}

func unpackFile(root *os.Root, name string, r io.Reader, perm os.FileMode, mtime time.Time) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := root.Chmod(name, perm); err != nil {
		return err
	}
	return root.Chtimes(name, mtime, mtime)
}

// copyOut serves FrameCopyOut: a tar of the named directory as FrameData frames and
// FrameEnd, or FrameError (after some data if it failed midway). The request's limits bound
// the stream at its source (a sparse 16 TiB file costs a header, not 16 TiB of zeros).
func (c *control) copyOut(f frame) {
	var d kubeproto.Dir
	if err := kubeproto.DecodeJSON(f.typ, f.payload, &d); err != nil {
		c.failed("copy out", err)
		return
	}
	bw := bufio.NewWriterSize(&frameWriter{c: c, typ: kubeproto.FrameData}, kubeproto.DataChunk)
	if err := writeTar(bw, d.Dir, d.Limits); err != nil {
		_ = bw.Flush()
		c.failed("copy out "+d.Dir, err)
		return
	}
	if err := bw.Flush(); err != nil {
		return // the control connection is gone: the reader abandons
	}
	_ = c.send(kubeproto.FrameEnd, nil)
}

// frameWriter writes its bytes as frames of one type, DataChunk at most each.
type frameWriter struct {
	c   *control
	typ byte
}

func (w *frameWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		m := min(len(p), kubeproto.DataChunk)
		if err := w.c.send(w.typ, p[:m]); err != nil {
			return n, err
		}
		n, p = n+m, p[m:]
	}
	return n, nil
}

// writeTar writes dir as a tar stream without ever following a symbolic link: the walk
// goes from directory descriptor to directory descriptor; each entry is lstat'ed, opened
// O_NOFOLLOW|O_NONBLOCK (a FIFO never blocks it) and fstat'ed, and it must be the same
// directory or regular file the lstat saw, or the stream fails. Symlinks are recorded as
// symlinks; FIFOs, devices and sockets as their type with no data; what the init may not
// open (the agent, as the same UID, took its permissions away), and files over lim's caps,
// as headers with no data and kubeproto's PAX records, so the controller records each as
// the local snapshot does. The walk stops where lim's entry or path cap does (nil: no caps).
func writeTar(w io.Writer, dir string, lim *kubeproto.CopyLimits) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	if lim == nil {
		lim = &kubeproto.CopyLimits{MaxFileBytes: math.MaxInt64, MaxTotalBytes: math.MaxInt64, MaxEntries: math.MaxInt, MaxDepth: math.MaxInt, MaxPathBytes: math.MaxInt64}
	}
	t := &tarWalk{tw: tar.NewWriter(w), lim: lim}
	if err := t.dir(fd, dir, "", 0); err != nil {
		return err
	}
	return t.tw.Close()
}

// tarWalk is the state of one writeTar.
type tarWalk struct {
	tw        *tar.Writer
	lim       *kubeproto.CopyLimits
	entries   int
	pathBytes int64
	written   int64
	stopped   bool   // an entry or path cap was passed
	more      []byte // per directory on the walk's way, root first: '1' when it has names left
}

// dir writes the entries of the directory open at fd (it closes fd) under prefix; depth is
// the directory's own depth ("" is 0).
func (t *tarWalk) dir(fd int, path, prefix string, depth int) error {
	d := os.NewFile(uintptr(fd), path)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	slices.Sort(names)
	t.more = append(t.more, '0')
	defer func() { t.more = t.more[:len(t.more)-1] }()
	for i, name := range names {
		rel := prefix + name
		t.more[len(t.more)-1] = "01"[min(len(names)-1-i, 1)]
		if depth >= t.lim.MaxDepth {
			// the reader only learns that the directory is not empty
			return t.tw.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: 0o600, Format: tar.FormatPAX})
		}
		t.entries++
		t.pathBytes += int64(len(rel))
		if t.entries > t.lim.MaxEntries || t.pathBytes > t.lim.MaxPathBytes {
			// one past the cap, without data: the reader reaches the cap there and stops
			t.stopped = true
			return t.tw.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: 0o600, Format: tar.FormatPAX,
				PAXRecords: map[string]string{kubeproto.PAXUnfinished: string(t.more)}})
		}
		if err := t.entry(fd, path+"/"+name, name, rel, depth+1); err != nil || t.stopped {
			return err
		}
	}
	return nil
}

// omitted writes h as a header with no data, saying why and the entry's real size.
func (t *tarWalk) omitted(h *tar.Header, why string, size int64) error {
	h.Size, h.Format = 0, tar.FormatPAX
	h.PAXRecords = map[string]string{kubeproto.PAXOmitted: why, kubeproto.PAXSize: strconv.FormatInt(size, 10)}
	return t.tw.WriteHeader(h)
}

func (t *tarWalk) entry(dirfd int, path, name, rel string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	h := &tar.Header{Name: rel, Mode: int64(st.Mode & 0o7777), ModTime: time.Unix(st.Mtim.Unix())}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		h.Typeflag, h.Name = tar.TypeDir, rel+"/"
		fd, err := openSame(dirfd, name, path, &st, unix.O_DIRECTORY)
		if errors.Is(err, unix.EACCES) {
			return t.omitted(h, kubeproto.OmittedDenied, 0)
		}
		if err != nil {
			return err
		}
		if err := t.tw.WriteHeader(h); err != nil {
			unix.Close(fd)
			return err
		}
		return t.dir(fd, path, rel+"/", depth)
	case unix.S_IFREG:
		h.Typeflag = tar.TypeReg
		// opened first, as the local snapshot does: an unreadable file is omitted as such
		fd, err := openSame(dirfd, name, path, &st, 0)
		if errors.Is(err, unix.EACCES) {
			return t.omitted(h, kubeproto.OmittedDenied, st.Size)
		}
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), path)
		defer f.Close()
		if st.Size > t.lim.MaxFileBytes || st.Size > t.lim.MaxTotalBytes-t.written {
			return t.omitted(h, kubeproto.OmittedSize, st.Size) // the reader omits it for the cap it is over
		}
		h.Size = st.Size
		if err := t.tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.CopyN(t.tw, f, st.Size); err != nil {
			return fmt.Errorf("%s: %w (its size changed while it was read)", path, err)
		}
		t.written += st.Size
		return nil
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return &os.PathError{Op: "readlink", Path: path, Err: err}
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, string(buf[:n])
	case unix.S_IFIFO:
		h.Typeflag = tar.TypeFifo
	case unix.S_IFCHR, unix.S_IFBLK:
		h.Typeflag = tar.TypeChar
		if st.Mode&unix.S_IFMT == unix.S_IFBLK {
			h.Typeflag = tar.TypeBlock
		}
		h.Devmajor, h.Devminor = int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
	default:
		h.Typeflag = kubeproto.TarTypeSocket
	}
	return t.tw.WriteHeader(h)
}

// openSame opens name in dirfd without following a link or blocking, and checks that it is
// the entry st described (same device, inode and type): a swap after the lstat fails.
func openSame(dirfd int, name, path string, st *unix.Stat_t, flags int) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if fst.Dev != st.Dev || fst.Ino != st.Ino || fst.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		unix.Close(fd)
		return -1, errors.New(path + ": changed between its lstat and its open; refused")
	}
	return fd, nil
}
