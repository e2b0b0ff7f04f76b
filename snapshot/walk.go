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

// rootIndex stands for the root directory where walkDir wants an index into Entries.
const rootIndex = -1

// The caps a snapshot can reach, in the order limits_hit names them.
const (
	capFile = iota
	capTotal
	capDepth
	capEntries
	capPath
	numCaps
)

// capHit counts what one cap left out and remembers the first path it hit at.
type capHit struct {
	count int
	first string
}

// walker is the state of one Take.
type walker struct {
	lim       Limits
	dst       string
	s         *Snapshot
	examined  int
	pathBytes int64
	stopped   bool
	stopWhy   string // the cap that stopped the snapshot
	hits      [numCaps]capHit
	dbuf      []byte  // getdents buffer, shared: a directory is fully listed before descending
	cbuf      []byte  // read/write copy buffer, allocated on first use
	staged    *Staged // TakeStaged's stand-ins; nil for Take
}

// walkDir captures the children of the directory open as srcFD, whose copy is open as
// dstFD; rel is its path ("" for the root), depth its segment count and idx its index in
// Entries (rootIndex for the root). Whatever of its listing is not captured marks it
// Omitted, so no name below it ever looks absent.
func (w *walker) walkDir(srcFD, dstFD int, rel string, depth, idx int) error {
	if depth >= w.lim.MaxDepth {
		names, err := w.readNames(srcFD, 1)
		switch {
		case err != nil:
			w.omitDir(idx, rel, fmt.Sprintf("cannot be listed (%v); its contents were not captured", errText(err)))
		case len(names) > 0:
			w.omitDir(idx, rel, fmt.Sprintf("at the depth cap %d; its contents were not captured", w.lim.MaxDepth))
			w.hit(capDepth, rel)
		}
		return nil
	}
	// No more names than either cap lets through are read (each child's path is at least
	// len(rel)+2 bytes); one more is, so the cap that stops the walk is seen.
	want := w.lim.MaxEntries - w.examined
	if fit := (w.lim.MaxPathBytes - w.pathBytes) / int64(len(rel)+2); fit < int64(want) {
		want = int(fit)
	}
	names, err := w.readNames(srcFD, want)
	if err != nil {
		w.omitDir(idx, rel, fmt.Sprintf("cannot be listed (%v); its contents were not captured", errText(err)))
		return nil
	}
	for i, name := range names {
		child := join(rel, name)
		switch {
		case w.examined >= w.lim.MaxEntries:
			w.stop(idx, rel, child, capEntries, fmt.Sprintf("entry cap %d reached; snapshot stopped", w.lim.MaxEntries))
			return nil
		case w.pathBytes+int64(len(child)) > w.lim.MaxPathBytes:
			w.stop(idx, rel, child, capPath, fmt.Sprintf("path cap %s (the summed length of entry paths) reached; snapshot stopped", human(w.lim.MaxPathBytes)))
			return nil
		}
		w.examined++
		w.pathBytes += int64(len(child))
		if err := w.entry(srcFD, dstFD, idx, rel, child, name, depth+1); err != nil {
			return err
		}
		if w.stopped {
			if i < len(names)-1 {
				w.omitDir(idx, rel, "listing cut where the snapshot stopped ("+w.stopWhy+")")
			}
			return nil
		}
	}
	return nil
}

// entry captures one directory entry, the child rel named name of the directory at index
// parent. Agent-side trouble becomes a note (and an Omitted entry where the entry exists);
// only failures writing the snapshot are returned.
func (w *walker) entry(srcFD, dstFD, parent int, parentRel, rel, name string, depth int) error {
	if !utf8.ValidString(name) {
		shown := strings.ToValidUTF8(rel, "\uFFFD")
		w.note(shown, fmt.Sprintf("name %s is not valid UTF-8; skipped", strconv.QuoteToASCII(name)))
		w.omitDir(parent, parentRel, fmt.Sprintf("holds a name that is not valid UTF-8 (%s), not captured", strconv.QuoteToASCII(name)))
		return nil
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstatat(srcFD, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		w.sourceError(rel, err)
		if !errors.Is(err, unix.ENOENT) {
			// The name is listed but cannot be examined: it may be anything.
			w.omitDir(parent, parentRel, fmt.Sprintf("holds %s, which cannot be examined (%v)", shortPath(name), errText(err)))
		}
		return nil
	}
	if testHook != nil {
		testHook("lstat", srcFD, name)
	}
	if w.staged != nil {
		if si, ok := w.staged.StandIns[rel]; ok {
			return w.standIn(srcFD, dstFD, parent, parentRel, rel, name, depth, si)
		}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return w.file(srcFD, dstFD, rel, name, &st)
	case unix.S_IFDIR:
		return w.dir(srcFD, dstFD, rel, name, depth, false)
	case unix.S_IFLNK:
		w.symlink(srcFD, rel, name)
		return nil
	default:
		w.special(rel, st.Mode, st.Size)
		return nil
	}
}

// special records a FIFO, socket or device (its type in mode's S_IFMT bits), never opened.
func (w *walker) special(rel string, mode uint32, size int64) {
	w.note(rel, typeName(mode)+" skipped")
	w.s.Entries = append(w.s.Entries, Entry{Path: rel, Kind: specialKind(mode), Size: size, Omitted: typeName(mode) + "; never opened"})
}

// dir captures the directory rel named name; denied records it as one the copier may not
// open (a remote stand-in), as the local open's EACCES does.
func (w *walker) dir(srcFD, dstFD int, rel, name string, depth int, denied bool) error {
	childSrc, err := openDir(srcFD, name)
	if err == nil && denied {
		unix.Close(childSrc)
		err = unix.EACCES
	}
	if err != nil && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
		w.sourceError(rel, err)
		return nil
	}
	if err == nil {
		defer unix.Close(childSrc)
	}
	if err := unix.Mkdirat(dstFD, name, uint32(dirMode)); err != nil {
		return w.writeError("mkdir", rel, err)
	}
	childDst, derr := openDir(dstFD, name)
	if derr != nil {
		return w.writeError("open", rel, derr)
	}
	defer unix.Close(childDst)
	if err := unix.Fchmod(childDst, uint32(dirMode)); err != nil {
		return w.writeError("chmod", rel, err)
	}
	w.s.Entries = append(w.s.Entries, Entry{Path: rel, Kind: KindDir, Mode: dirMode})
	idx := len(w.s.Entries) - 1
	if err != nil {
		w.omitDir(idx, rel, "permission denied; its contents were not captured")
		return nil
	}
	return w.walkDir(childSrc, childDst, rel, depth, idx)
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

// omitFile records a regular file whose bytes are not in the snapshot: it keeps its name,
// type and size, and every read of it fails with reason.
func (w *walker) omitFile(rel string, size int64, mode fs.FileMode, reason string) {
	w.note(rel, reason)
	w.s.Entries = append(w.s.Entries, Entry{Path: rel, Kind: KindFile, Size: size, Mode: mode, Omitted: reason})
}

// file copies one regular file. The type and size that count are those fstat reports on
// the descriptor actually read, never those of the earlier lstat.
func (w *walker) file(srcFD, dstFD int, rel, name string, lst *unix.Stat_t) error {
	var src int
	err := ignoringEINTR(func() (err error) { src, err = unix.Openat(srcFD, name, srcOpenFlags, 0); return err })
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		w.omitFile(rel, lst.Size, modeOf(lst.Mode), "permission denied; left out")
		return nil
	}
	if err != nil {
		w.sourceError(rel, err)
		return nil
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		w.omitFile(rel, lst.Size, modeOf(lst.Mode), fmt.Sprintf("cannot read (%v); left out", errText(err)))
		return nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		w.note(rel, fmt.Sprintf("changed from a regular file to a %s during the snapshot; skipped", typeName(st.Mode)))
		return nil
	}
	mode := modeOf(st.Mode)
	if st.Size > w.lim.MaxFileBytes {
		w.omitFile(rel, st.Size, mode, fmt.Sprintf("over the %s per-file cap (file is %s); left out", human(w.lim.MaxFileBytes), human(st.Size)))
		w.hit(capFile, rel)
		return nil
	}
	room := w.lim.MaxTotalBytes - w.s.Bytes
	if st.Size > room {
		w.omitFile(rel, st.Size, mode, fmt.Sprintf("over the %s total cap (file is %s, %s left); left out", human(w.lim.MaxTotalBytes), human(st.Size), human(room)))
		w.hit(capTotal, rel)
		return nil
	}
	if testHook != nil {
		testHook("fstat", srcFD, name)
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
		size := max(n, st.Size)
		switch {
		case rerr != nil:
			w.omitFile(rel, size, mode, fmt.Sprintf("read failed (%v); left out", errText(rerr)))
		case n > w.lim.MaxFileBytes:
			w.omitFile(rel, size, mode, fmt.Sprintf("over the %s per-file cap (grew while being copied); left out", human(w.lim.MaxFileBytes)))
			w.hit(capFile, rel)
		default:
			w.omitFile(rel, size, mode, fmt.Sprintf("over the %s total cap (grew while being copied); left out", human(w.lim.MaxTotalBytes)))
			w.hit(capTotal, rel)
		}
		return nil
	}
	w.s.Bytes += n
	w.s.Entries = append(w.s.Entries, Entry{Path: rel, Kind: KindFile, Size: n, Mode: mode})
	return nil
}

// modeOf is the mode a copied file gets: 0755 when its owner may execute it, else 0644.
func modeOf(stMode uint32) fs.FileMode {
	if stMode&unix.S_IXUSR != 0 {
		return execMode
	}
	return fileMode
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

// omitDir marks the directory at idx (rootIndex for the root) as having an incomplete
// listing, keeping the first reason, and notes it.
func (w *walker) omitDir(idx int, rel, reason string) {
	at := &w.s.RootOmitted
	if idx != rootIndex {
		at = &w.s.Entries[idx].Omitted
	}
	if *at == "" {
		*at = reason
		if rel == "" {
			rel = "."
		}
		w.note(rel, "directory "+reason)
	}
}

// stop ends the snapshot at child, the first name of the directory at idx not captured.
func (w *walker) stop(idx int, rel, child string, c int, reason string) {
	w.stopWhy = strings.TrimSuffix(reason, "; snapshot stopped")
	w.omitDir(idx, rel, "listing cut: "+w.stopWhy)
	w.note(child, reason) // last: NoteFor explains what was never reached with it
	w.hit(c, child)
	w.s.Truncated = true
	w.stopped = true
}

func (w *walker) hit(c int, rel string) {
	if w.hits[c].count == 0 {
		w.hits[c].first = rel
	}
	w.hits[c].count++
}

// limitsHit names each cap reached, with what it left out, for the run's limits_hit.
func (w *walker) limitsHit() []string {
	var out []string
	for c, h := range w.hits {
		if h.count == 0 {
			continue
		}
		at := shortPath(h.first)
		switch c {
		case capFile:
			out = append(out, fmt.Sprintf("snapshot per-file cap %s: %d file(s) omitted (visible, unreadable), first %s", human(w.lim.MaxFileBytes), h.count, at))
		case capTotal:
			out = append(out, fmt.Sprintf("snapshot total cap %s: %d file(s) omitted (visible, unreadable), first %s", human(w.lim.MaxTotalBytes), h.count, at))
		case capDepth:
			out = append(out, fmt.Sprintf("snapshot depth cap %d: %d directory(ies) not listed, first %s", w.lim.MaxDepth, h.count, at))
		case capEntries:
			out = append(out, fmt.Sprintf("snapshot entry cap %d: stopped at %s; the directories it was in are incomplete", w.lim.MaxEntries, at))
		case capPath:
			out = append(out, fmt.Sprintf("snapshot path cap %s: stopped at %s; the directories it was in are incomplete", human(w.lim.MaxPathBytes), at))
		}
	}
	return out
}

// shortPath quotes a path for a one-line message, cut to its first 120 bytes.
func shortPath(p string) string {
	const max = 120
	if len(p) <= max {
		return strconv.Quote(p)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(p[cut]) {
		cut--
	}
	return strconv.Quote(p[:cut]) + fmt.Sprintf("… (%d bytes)", len(p))
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

// specialKind is the Kind of a FIFO, socket or device.
func specialKind(mode uint32) Kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return KindFIFO
	case unix.S_IFSOCK:
		return KindSocket
	case unix.S_IFBLK:
		return KindBlockDevice
	}
	return KindCharDevice
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
