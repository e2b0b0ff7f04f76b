package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

const (
	dirMode  fs.FileMode = 0o755
	fileMode fs.FileMode = 0o644
	execMode fs.FileMode = 0o755

	// Flags for every open of an agent-written name: never follow the last component,
	// never block on a FIFO, never become our controlling terminal, never leak to a child.
	srcOpenFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	dirOpenFlags = srcOpenFlags | unix.O_DIRECTORY

	// Below this size a plain read/write pair beats copy_file_range's setup cost.
	copyRangeMin = 64 << 10
)

// testHook, when a test sets it, runs at "lstat" (between an entry's lstat and its open)
// and at "fstat" (between a file's fstat and its copy), so the test can swap or grow the
// entry exactly where a racing agent would.
var testHook func(at string, dirFD int, name string)

// walker is the state of one Take.
type walker struct {
	lim      Limits
	dst      string
	s        *Snapshot
	examined int
	stopped  bool
	dbuf     []byte // getdents buffer, shared: a directory is fully listed before descending
	cbuf     []byte // read/write copy buffer, allocated on first use
}

// walkDir captures the children of the directory open as srcFD, whose copy is open as
// dstFD; rel is its path ("" for the root) and depth its segment count.
func (w *walker) walkDir(srcFD, dstFD int, rel string, depth int) error {
	if depth >= w.lim.MaxDepth {
		names, err := w.readNames(srcFD, 1)
		if err == nil && len(names) > 0 {
			w.note(rel, fmt.Sprintf("directory at depth %d is at the depth cap %d; its contents were not captured", depth, w.lim.MaxDepth))
		}
		return nil
	}
	names, err := w.readNames(srcFD, w.lim.MaxEntries-w.examined)
	if err != nil {
		w.note(rel, fmt.Sprintf("cannot list directory (%v); its contents were left out", errText(err)))
		return nil
	}
	for _, name := range names {
		if w.examined >= w.lim.MaxEntries {
			w.stop(join(rel, name), fmt.Sprintf("entry cap %d reached; snapshot stopped", w.lim.MaxEntries))
			return nil
		}
		w.examined++
		if err := w.entry(srcFD, dstFD, rel, name, depth+1); err != nil {
			return err
		}
		if w.stopped {
			return nil
		}
	}
	return nil
}

// entry captures one directory entry. Agent-side trouble becomes a note; only failures
// writing the snapshot are returned.
func (w *walker) entry(srcFD, dstFD int, parent, name string, depth int) error {
	rel := join(parent, name)
	if !utf8.ValidString(name) {
		w.note(strings.ToValidUTF8(rel, "\uFFFD"), fmt.Sprintf("name %s is not valid UTF-8; skipped", strconv.QuoteToASCII(name)))
		return nil
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstatat(srcFD, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		w.sourceError(rel, err)
		return nil
	}
	if testHook != nil {
		testHook("lstat", srcFD, name)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return w.file(srcFD, dstFD, rel, name, st.Mode)
	case unix.S_IFDIR:
		return w.dir(srcFD, dstFD, rel, name, depth)
	case unix.S_IFLNK:
		w.symlink(srcFD, rel, name)
		return nil
	default:
		w.note(rel, typeName(st.Mode)+" skipped")
		return nil
	}
}

func (w *walker) dir(srcFD, dstFD int, rel, name string, depth int) error {
	childSrc, err := openDir(srcFD, name)
	if err != nil {
		w.sourceError(rel, err)
		return nil
	}
	defer unix.Close(childSrc)
	if err := unix.Mkdirat(dstFD, name, uint32(dirMode)); err != nil {
		return w.writeError("mkdir", rel, err)
	}
	childDst, err := openDir(dstFD, name)
	if err != nil {
		return w.writeError("open", rel, err)
	}
	defer unix.Close(childDst)
	if err := unix.Fchmod(childDst, uint32(dirMode)); err != nil {
		return w.writeError("chmod", rel, err)
	}
	w.s.Entries = append(w.s.Entries, Entry{Path: rel, Kind: KindDir, Mode: dirMode})
	return w.walkDir(childSrc, childDst, rel, depth)
}

func (w *walker) symlink(srcFD int, rel, name string) {
	buf := w.dbuf[:unix.PathMax] // free: the parent's names are already parsed
	var n int
	err := ignoringEINTR(func() (err error) { n, err = unix.Readlinkat(srcFD, name, buf); return err })
	if err != nil {
		w.sourceError(rel, err)
		return
	}
	target := strings.ToValidUTF8(string(buf[:n]), "\uFFFD")
	w.s.Entries = append(w.s.Entries, Entry{Path: rel, Kind: KindSymlink, Size: int64(n), Target: target})
}

// file copies one regular file. The type and size that count are those fstat reports on
// the descriptor actually read, never those of the earlier lstat.
func (w *walker) file(srcFD, dstFD int, rel, name string, lstatMode uint32) error {
	var src int
	err := ignoringEINTR(func() (err error) { src, err = unix.Openat(srcFD, name, srcOpenFlags, 0); return err })
	if err != nil {
		w.sourceError(rel, err)
		return nil
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		w.sourceError(rel, err)
		return nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		w.note(rel, fmt.Sprintf("changed from a regular file to a %s during the snapshot; skipped", typeName(st.Mode)))
		return nil
	}
	if st.Size > w.lim.MaxFileBytes {
		w.note(rel, fmt.Sprintf("file is %s, over the %s per-file cap; left out", human(st.Size), human(w.lim.MaxFileBytes)))
		return nil
	}
	room := w.lim.MaxTotalBytes - w.s.Bytes
	if st.Size > room {
		w.stop(rel, fmt.Sprintf("total byte cap %s reached (file is %s, %s left); snapshot stopped", human(w.lim.MaxTotalBytes), human(st.Size), human(room)))
		return nil
	}
	if testHook != nil {
		testHook("fstat", srcFD, name)
	}
	mode := fileMode
	if st.Mode&unix.S_IXUSR != 0 {
		mode = execMode
	}

	var dst int
	err = ignoringEINTR(func() (err error) {
		dst, err = unix.Openat(dstFD, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode))
		return err
	})
	if err != nil {
		return w.writeError("create", rel, err)
	}
	limit := min(w.lim.MaxFileBytes, room)
	n, rerr, werr := w.copy(dst, src, limit+1, st.Size)
	if werr == nil {
		// The create mode went through the umask; set exactly what Entry says.
		werr = unix.Fchmod(dst, uint32(mode))
	}
	if cerr := unix.Close(dst); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return w.writeError("write", rel, werr)
	}
	if rerr != nil || n > limit {
		if err := unix.Unlinkat(dstFD, name, 0); err != nil {
			return w.writeError("remove", rel, err)
		}
		switch {
		case rerr != nil:
			w.note(rel, fmt.Sprintf("read failed (%v); left out", errText(rerr)))
		case n > w.lim.MaxFileBytes:
			w.note(rel, fmt.Sprintf("file grew past the %s per-file cap while being copied; left out", human(w.lim.MaxFileBytes)))
		default:
			w.stop(rel, fmt.Sprintf("total byte cap %s reached (file grew while being copied); snapshot stopped", human(w.lim.MaxTotalBytes)))
		}
		return nil
	}
	w.s.Bytes += n
	w.s.Entries = append(w.s.Entries, Entry{Path: rel, Kind: KindFile, Size: n, Mode: mode})
	return nil
}

// copy moves at most max bytes from src to dst, starting at both current offsets. It
// reports read-side and write-side failures apart: the first are the agent's, the second
// ceval's.
func (w *walker) copy(dst, src int, max, sizeHint int64) (n int64, rerr, werr error) {
	if sizeHint >= copyRangeMin {
		for n < max {
			c, err := unix.CopyFileRange(src, nil, dst, nil, int(min(max-n, 1<<30)), 0)
			if err != nil {
				if err == unix.EINTR {
					continue
				}
				// Unsupported here, or a failure we cannot attribute to either side: the
				// read/write loop below resumes from the current offsets and tells.
				break
			}
			if c == 0 {
				return n, nil, nil
			}
			n += int64(c)
		}
		if n >= max {
			return n, nil, nil
		}
	}
	if w.cbuf == nil {
		w.cbuf = make([]byte, 256<<10)
	}
	for n < max {
		buf := w.cbuf[:min(int64(len(w.cbuf)), max-n)]
		var r int
		if err := ignoringEINTR(func() (err error) { r, err = unix.Read(src, buf); return err }); err != nil {
			return n, err, nil
		}
		if r == 0 {
			break
		}
		for off := 0; off < r; {
			var m int
			if err := ignoringEINTR(func() (err error) { m, err = unix.Write(dst, buf[off:r]); return err }); err != nil {
				return n, nil, err
			}
			off += m
		}
		n += int64(r)
	}
	return n, nil, nil
}

// readNames lists the directory open as fd, sorted and without duplicates. It stops once
// it holds more than want names, so a huge directory costs memory bounded by the entry
// cap; the caller then hits that cap.
func (w *walker) readNames(fd, want int) ([]string, error) {
	var names []string
	for len(names) <= want {
		var n int
		if err := ignoringEINTR(func() (err error) { n, err = unix.Getdents(fd, w.dbuf); return err }); err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(w.dbuf[:n], -1, names)
	}
	slices.Sort(names)
	// A directory renamed into during listing can yield a name twice.
	return slices.Compact(names), nil
}

func (w *walker) note(rel, reason string) {
	w.s.Notes = append(w.s.Notes, Note{Path: rel, Reason: reason})
}

func (w *walker) stop(rel, reason string) {
	w.note(rel, reason)
	w.s.Truncated = true
	w.stopped = true
}

// sourceError notes a failure on the agent's side of the copy.
func (w *walker) sourceError(rel string, err error) {
	switch {
	case errors.Is(err, unix.ENOENT):
		w.note(rel, "vanished during the snapshot; skipped")
	case errors.Is(err, unix.ELOOP):
		w.note(rel, "was replaced by a symlink during the snapshot; skipped")
	case errors.Is(err, unix.ENOTDIR):
		w.note(rel, "changed type during the snapshot; skipped")
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		w.note(rel, "permission denied; left out")
	default:
		w.note(rel, fmt.Sprintf("cannot read (%v); left out", errText(err)))
	}
}

func (w *walker) writeError(op, rel string, err error) error {
	return fmt.Errorf("snapshot: %s %s in %s: %w", op, rel, w.dst, err)
}

// openDir opens name under dirFD as a directory, refusing a symlink in its last component.
// O_DIRECTORY makes Linux report a symlink as ENOTDIR; openDir reports it as ELOOP.
func openDir(dirFD int, name string) (int, error) {
	var fd int
	err := ignoringEINTR(func() (err error) { fd, err = unix.Openat(dirFD, name, dirOpenFlags, 0); return err })
	if err == unix.ENOTDIR {
		var st unix.Stat_t
		if unix.Fstatat(dirFD, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP
		}
	}
	return fd, err
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "/" + name
}

func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return fmt.Sprintf("file of unknown type %#o", mode&unix.S_IFMT)
}

// errText is an errno's message without the syscall wrapping.
func errText(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// human formats a byte count the way notes speak: "16 MiB", "1 GiB", "1.5 KiB", "12 bytes".
func human(n int64) string {
	units := []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n >= u.size {
			if n%u.size == 0 {
				return fmt.Sprintf("%d %s", n/u.size, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.name)
		}
	}
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}
