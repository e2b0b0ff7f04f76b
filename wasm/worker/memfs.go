package worker

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// memFS is the guest's filesystem: an in-memory tree that never touches a host path. It
// implements wazero's experimental sys.FS. Symlinks are inert strings: Lstat and Readlink
// show them, but no lookup ever follows one, so a link planted in the workspace (or made in
// /tmp by the guest) leads nowhere. There are no hard links. A read-only memFS (the
// workspace, the reference) is immutable once built and may be shared by runs; a writable
// one (/tmp) caps the bytes and nodes it holds, answering EIO when full (WASI has no
// ENOSPC) and remembering that it was.
//
// A view of a snapshot also holds what the snapshot left out, so that nothing looks absent
// that may exist: an omitted file (or FIFO, socket, device) stats with its real type and
// size but every read of it fails with EIO, and a directory whose listing is incomplete
// fails every listing and every lookup of a name it does not hold with EIO. Either records
// the first such touch (Touched), which the run reports: a guest can ignore an I/O error,
// and a "test ! -e" turns one into success, so the touch itself decides the criterion.
type memFS struct {
	experimentalsys.UnimplementedFS

	dev      uint64
	readOnly bool

	mu       sync.Mutex
	root     *node
	nextIno  uint64
	maxBytes int64 // writable only: file bytes held at most
	maxNodes int   // writable only: nodes held at most
	bytes    int64
	nodes    int
	full     bool   // a write or create was refused for lack of room
	touched  string // the first omitted path a guest reached, and why it is omitted
}

type node struct {
	mode     fs.FileMode // type bits plus permissions
	ino      uint64
	mtim     int64
	data     []byte           // regular file
	target   string           // symlink
	children map[string]*node // directory
	omitted  string           // why a file's bytes or a directory's listing are not here
	size     int64            // an omitted file's real size
}

func (n *node) isDir() bool     { return n.mode.IsDir() }
func (n *node) isSymlink() bool { return n.mode&fs.ModeSymlink != 0 }

func newMemFS(dev uint64, readOnly bool) *memFS {
	m := &memFS{dev: dev, readOnly: readOnly}
	m.root = m.newNode(fs.ModeDir | 0o755)
	m.nodes = 1
	return m
}

// newTmpFS returns an empty writable memFS holding at most maxBytes of file data.
func newTmpFS(dev uint64, maxBytes int64) *memFS {
	m := newMemFS(dev, false)
	m.root.mode = fs.ModeDir | fs.ModeSticky | 0o777
	m.maxBytes = maxBytes
	m.maxNodes = tmpMaxNodes
	return m
}

// tmpMaxNodes caps the files, directories and links in /tmp, so empty files cannot exhaust
// the worker's memory where the byte cap does not reach.
const tmpMaxNodes = 100_000

// viewEpoch is the modification time of every file of a view: snapshots keep no times.
var viewEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

func (m *memFS) newNode(mode fs.FileMode) *node {
	m.nextIno++
	n := &node{mode: mode, ino: m.nextIno, mtim: viewEpoch}
	if mode.IsDir() {
		n.children = map[string]*node{}
	}
	return n
}

// split cleans p as an absolute path inside this filesystem and returns its components:
// ".." stops at the root, so no name can leave the tree.
func split(p string) []string {
	c := path.Clean("/" + p)
	if c == "/" {
		return nil
	}
	return strings.Split(c[1:], "/")
}

// lookup finds the node at p without following any symlink, the last component included.
// A name missing from a directory with an incomplete listing may exist: EIO, not ENOENT.
func (m *memFS) lookup(p string) (*node, experimentalsys.Errno) {
	n := m.root
	parts := split(p)
	for i, name := range parts {
		switch {
		case n.isDir():
		case n.isSymlink():
			return nil, experimentalsys.ENOENT // never followed: the link leads nowhere
		default:
			return nil, experimentalsys.ENOTDIR
		}
		child, ok := n.children[name]
		if !ok {
			if n.omitted != "" {
				m.touch(strings.Join(parts[:i+1], "/"), "its directory's listing is incomplete: "+n.omitted)
				return nil, experimentalsys.EIO
			}
			return nil, experimentalsys.ENOENT
		}
		n = child
	}
	return n, 0
}

// viewPath is p as a guest-facing path relative to the view's root, "." for the root.
func viewPath(p string) string {
	if c := path.Clean("/" + p); c != "/" {
		return c[1:]
	}
	return "."
}

// touch records the first time a guest reached content the view does not hold.
func (m *memFS) touch(p, why string) {
	if m.touched == "" {
		m.touched = fmt.Sprintf("%q (%s)", p, why)
	}
}

// Touched returns the first omitted path a guest reached since the last ResetTouched, and
// why it was omitted; "" when none was.
func (m *memFS) Touched() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.touched
}

// ResetTouched forgets earlier touches: a shared view starts each run clean.
func (m *memFS) ResetTouched() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.touched = ""
}

// parent finds the directory that holds p, and p's last name.
func (m *memFS) parent(p string) (*node, string, experimentalsys.Errno) {
	parts := split(p)
	if len(parts) == 0 {
		return nil, "", experimentalsys.EINVAL // the root has no parent here
	}
	dir, errno := m.lookup(strings.Join(parts[:len(parts)-1], "/"))
	if errno != 0 {
		return nil, "", errno
	}
	if !dir.isDir() {
		return nil, "", experimentalsys.ENOTDIR
	}
	return dir, parts[len(parts)-1], 0
}

func (m *memFS) stat(n *node) sys.Stat_t {
	st := sys.Stat_t{Dev: m.dev, Ino: n.ino, Mode: n.mode, Nlink: 1, Atim: n.mtim, Mtim: n.mtim, Ctim: n.mtim}
	switch {
	case n.isDir():
		st.Nlink = 2
	case n.isSymlink():
		st.Size = int64(len(n.target))
	case n.omitted != "":
		st.Size = n.size
	default:
		st.Size = int64(len(n.data))
	}
	return st
}

// addNode links a new node under dir, within the node cap.
func (m *memFS) addNode(dir *node, name string, mode fs.FileMode) (*node, experimentalsys.Errno) {
	if m.maxNodes > 0 && m.nodes >= m.maxNodes {
		m.full = true
		return nil, experimentalsys.EIO
	}
	n := m.newNode(mode)
	dir.children[name] = n
	m.nodes++
	return n, 0
}

// resize sets a file's length, within the byte cap.
func (m *memFS) resize(n *node, size int64) experimentalsys.Errno {
	grow := size - int64(len(n.data))
	if grow > 0 && m.maxBytes > 0 && m.bytes+grow > m.maxBytes {
		m.full = true
		return experimentalsys.EIO
	}
	if size <= int64(cap(n.data)) {
		old := len(n.data)
		n.data = n.data[:size]
		if size > int64(old) {
			clear(n.data[old:])
		}
	} else {
		n.data = append(n.data, make([]byte, size-int64(len(n.data)))...)
	}
	m.bytes += grow
	return 0
}

// OpenFile implements sys.FS.
func (m *memFS) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	m.mu.Lock()
	defer m.mu.Unlock()
	access := flag & (experimentalsys.O_RDONLY | experimentalsys.O_RDWR | experimentalsys.O_WRONLY)
	write := access == experimentalsys.O_RDWR || access == experimentalsys.O_WRONLY
	n, errno := m.lookup(p)
	switch {
	case errno == experimentalsys.ENOENT && flag&experimentalsys.O_CREAT != 0:
		if m.readOnly {
			return nil, experimentalsys.EROFS
		}
		dir, name, errno := m.parent(p)
		if errno != 0 {
			return nil, errno
		}
		if _, exists := dir.children[name]; exists {
			return nil, experimentalsys.ENOENT // a link in the last place: not followed
		}
		if n, errno = m.addNode(dir, name, perm.Perm()); errno != 0 {
			return nil, errno
		}
	case errno != 0:
		return nil, errno
	case flag&experimentalsys.O_CREAT != 0 && flag&experimentalsys.O_EXCL != 0:
		return nil, experimentalsys.EEXIST
	case n.isSymlink():
		if flag&experimentalsys.O_NOFOLLOW != 0 {
			return nil, experimentalsys.ELOOP
		}
		return nil, experimentalsys.ENOENT
	}
	if write && m.readOnly {
		return nil, experimentalsys.EROFS
	}
	if n.isDir() {
		if write {
			return nil, experimentalsys.EISDIR
		}
	} else if flag&experimentalsys.O_DIRECTORY != 0 {
		return nil, experimentalsys.ENOTDIR
	}
	if flag&experimentalsys.O_TRUNC != 0 && write && !n.isDir() {
		if errno := m.resize(n, 0); errno != 0 {
			return nil, errno
		}
	}
	return &memFile{
		fs: m, n: n, path: viewPath(p),
		read:   access != experimentalsys.O_WRONLY,
		write:  write,
		append: flag&experimentalsys.O_APPEND != 0,
	}, 0
}

// Lstat implements sys.FS.
func (m *memFS) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, errno := m.lookup(p)
	if errno != 0 {
		return sys.Stat_t{}, errno
	}
	return m.stat(n), 0
}

// Stat implements sys.FS. A symlink is never followed, so it stats as missing.
func (m *memFS) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, errno := m.lookup(p)
	if errno != 0 {
		return sys.Stat_t{}, errno
	}
	if n.isSymlink() {
		return sys.Stat_t{}, experimentalsys.ENOENT
	}
	return m.stat(n), 0
}

// Readlink implements sys.FS: it returns the recorded target, which names nothing here.
func (m *memFS) Readlink(p string) (string, experimentalsys.Errno) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, errno := m.lookup(p)
	if errno != 0 {
		return "", errno
	}
	if !n.isSymlink() {
		return "", experimentalsys.EINVAL
	}
	return n.target, 0
}

// Mkdir implements sys.FS.
func (m *memFS) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readOnly {
		return experimentalsys.EROFS
	}
	dir, name, errno := m.parent(p)
	if errno != 0 {
		if errno == experimentalsys.EINVAL {
			return experimentalsys.EEXIST // the root
		}
		return errno
	}
	if _, exists := dir.children[name]; exists {
		return experimentalsys.EEXIST
	}
	_, errno = m.addNode(dir, name, fs.ModeDir|perm.Perm())
	return errno
}

// Chmod implements sys.FS.
func (m *memFS) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readOnly {
		return experimentalsys.EROFS
	}
	n, errno := m.lookup(p)
	if errno != 0 {
		return errno
	}
	if n.isSymlink() {
		return experimentalsys.ENOENT
	}
	n.mode = n.mode.Type() | perm.Perm()
	return 0
}

// Rename implements sys.FS.
func (m *memFS) Rename(from, to string) experimentalsys.Errno {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readOnly {
		return experimentalsys.EROFS
	}
	fromDir, fromName, errno := m.parent(from)
	if errno != 0 {
		return errno
	}
	n, ok := fromDir.children[fromName]
	if !ok {
		return experimentalsys.ENOENT
	}
	toDir, toName, errno := m.parent(to)
	if errno != 0 {
		return errno
	}
	if n.isDir() && (to == from || isBelow(split(to), split(from))) {
		return experimentalsys.EINVAL
	}
	if old, exists := toDir.children[toName]; exists {
		if old == n {
			return 0
		}
		switch {
		case n.isDir() && !old.isDir():
			return experimentalsys.ENOTDIR
		case !n.isDir() && old.isDir():
			return experimentalsys.EISDIR
		case old.isDir() && len(old.children) > 0:
			return experimentalsys.ENOTEMPTY
		}
		m.release(old)
	}
	delete(fromDir.children, fromName)
	toDir.children[toName] = n
	return 0
}

// isBelow reports whether the path p lies strictly below dir.
func isBelow(p, dir []string) bool {
	return len(p) > len(dir) && slices.Equal(p[:len(dir)], dir)
}

// release gives back the room a removed node held.
func (m *memFS) release(n *node) {
	m.bytes -= int64(len(n.data))
	m.nodes--
}

// Rmdir implements sys.FS.
func (m *memFS) Rmdir(p string) experimentalsys.Errno {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readOnly {
		return experimentalsys.EROFS
	}
	dir, name, errno := m.parent(p)
	if errno != 0 {
		return errno
	}
	n, ok := dir.children[name]
	switch {
	case !ok:
		return experimentalsys.ENOENT
	case !n.isDir():
		return experimentalsys.ENOTDIR
	case len(n.children) > 0:
		return experimentalsys.ENOTEMPTY
	}
	delete(dir.children, name)
	m.release(n)
	return 0
}

// Unlink implements sys.FS.
func (m *memFS) Unlink(p string) experimentalsys.Errno {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readOnly {
		return experimentalsys.EROFS
	}
	dir, name, errno := m.parent(p)
	if errno != 0 {
		return errno
	}
	n, ok := dir.children[name]
	switch {
	case !ok:
		return experimentalsys.ENOENT
	case n.isDir():
		return experimentalsys.EISDIR
	}
	delete(dir.children, name)
	m.release(n)
	return 0
}

// Link implements sys.FS: there are no hard links in a view.
func (m *memFS) Link(_, _ string) experimentalsys.Errno {
	if m.readOnly {
		return experimentalsys.EROFS
	}
	return experimentalsys.EPERM
}

// Symlink implements sys.FS: the link is recorded as a string and never followed.
func (m *memFS) Symlink(target, p string) experimentalsys.Errno {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readOnly {
		return experimentalsys.EROFS
	}
	dir, name, errno := m.parent(p)
	if errno != 0 {
		return errno
	}
	if _, exists := dir.children[name]; exists {
		return experimentalsys.EEXIST
	}
	if m.maxBytes > 0 && m.bytes+int64(len(target)) > m.maxBytes {
		m.full = true
		return experimentalsys.EIO
	}
	n, errno := m.addNode(dir, name, fs.ModeSymlink|0o777)
	if errno != 0 {
		return errno
	}
	n.target = target
	m.bytes += int64(len(target))
	return 0
}

// Utimens implements sys.FS.
func (m *memFS) Utimens(p string, _, mtim int64) experimentalsys.Errno {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.readOnly {
		return experimentalsys.EROFS
	}
	n, errno := m.lookup(p)
	if errno != 0 {
		return errno
	}
	setMtim(n, mtim)
	return 0
}

func setMtim(n *node, mtim int64) {
	if mtim != experimentalsys.UTIME_OMIT {
		n.mtim = mtim
	}
}

// Full reports whether the filesystem refused a write for lack of room.
func (m *memFS) Full() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.full
}

// putOmitted adds, while a view is built, a file (or special file) of the given type and
// size whose content the view does not hold.
func (m *memFS) putOmitted(p string, mode fs.FileMode, size int64, why string) error {
	if mode.IsDir() || mode&fs.ModeSymlink != 0 || why == "" || size < 0 {
		return errViewPath(p)
	}
	if err := m.put(p, mode, nil, ""); err != nil {
		return err
	}
	n, _ := m.lookup(p)
	n.omitted, n.size = why, size
	return nil
}

// markIncomplete marks, while a view is built, the directory at p ("" for the root) as one
// whose listing is incomplete.
func (m *memFS) markIncomplete(p, why string) error {
	n, errno := m.lookup(p)
	if errno != 0 || !n.isDir() || why == "" {
		return errViewPath(p)
	}
	n.omitted = why
	return nil
}

// put adds a node while a view is built: the parents are made as needed. It refuses to
// place anything below a symlink or a file.
func (m *memFS) put(p string, mode fs.FileMode, data []byte, target string) error {
	parts := split(p)
	if len(parts) == 0 {
		return errViewPath(p)
	}
	dir := m.root
	for _, name := range parts[:len(parts)-1] {
		child, ok := dir.children[name]
		if !ok {
			child = m.newNode(fs.ModeDir | 0o755)
			dir.children[name] = child
			m.nodes++
		}
		if !child.isDir() {
			return errViewPath(p)
		}
		dir = child
	}
	name := parts[len(parts)-1]
	if old, ok := dir.children[name]; ok {
		if old.isDir() && mode.IsDir() {
			return nil
		}
		return errViewPath(p)
	}
	n := m.newNode(mode)
	n.data = data
	n.target = target
	dir.children[name] = n
	m.nodes++
	m.bytes += int64(len(data))
	return nil
}

// memFile is an open file or directory of a memFS.
type memFile struct {
	experimentalsys.UnimplementedFile

	fs                  *memFS
	n                   *node
	path                string // as opened, for Touched
	read, write, append bool
	off                 int64
	dirents             []experimentalsys.Dirent // directory listing, taken at the first Readdir
	listed              bool
	closed              bool
}

func (f *memFile) Dev() (uint64, experimentalsys.Errno)    { return f.fs.dev, 0 }
func (f *memFile) Ino() (sys.Inode, experimentalsys.Errno) { return f.n.ino, 0 }
func (f *memFile) IsDir() (bool, experimentalsys.Errno)    { return f.n.isDir(), 0 }
func (f *memFile) IsAppend() bool                          { return f.append }

func (f *memFile) SetAppend(enable bool) experimentalsys.Errno {
	if f.n.isDir() {
		return experimentalsys.EISDIR
	}
	f.append = enable
	return 0
}

func (f *memFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	if f.closed {
		return sys.Stat_t{}, experimentalsys.EBADF
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.fs.stat(f.n), 0
}

func (f *memFile) Read(buf []byte) (int, experimentalsys.Errno) {
	n, errno := f.Pread(buf, f.off)
	f.off += int64(n)
	return n, errno
}

func (f *memFile) Pread(buf []byte, off int64) (int, experimentalsys.Errno) {
	switch {
	case f.closed || !f.read:
		return 0, experimentalsys.EBADF
	case f.n.isDir():
		return 0, experimentalsys.EISDIR
	case off < 0:
		return 0, experimentalsys.EINVAL
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.n.omitted != "" {
		f.fs.touch(f.path, f.n.omitted)
		return 0, experimentalsys.EIO
	}
	if off >= int64(len(f.n.data)) {
		return 0, 0
	}
	return copy(buf, f.n.data[off:]), 0
}

// fileOffset is int64 under another name: vet's stdmethods check takes any Seek for an
// io.Seeker, but sys.File's Seek must return an Errno, not an error.
type fileOffset = int64

func (f *memFile) Seek(offset fileOffset, whence int) (int64, experimentalsys.Errno) {
	if f.closed {
		return 0, experimentalsys.EBADF
	}
	if f.n.isDir() {
		if offset != 0 || whence != io.SeekStart {
			return 0, experimentalsys.EINVAL
		}
		f.listed, f.dirents = false, nil
		return 0, 0
	}
	f.fs.mu.Lock()
	size := int64(len(f.n.data))
	f.fs.mu.Unlock()
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = f.off + offset
	case io.SeekEnd:
		abs = size + offset
	default:
		return 0, experimentalsys.EINVAL
	}
	if abs < 0 {
		return 0, experimentalsys.EINVAL
	}
	f.off = abs
	return abs, 0
}

func (f *memFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	if f.closed || !f.n.isDir() {
		return nil, experimentalsys.EBADF
	}
	if !f.listed {
		f.fs.mu.Lock()
		if f.n.omitted != "" {
			f.fs.touch(f.path, "listing incomplete: "+f.n.omitted)
			f.fs.mu.Unlock()
			return nil, experimentalsys.EIO
		}
		names := make([]string, 0, len(f.n.children))
		for name := range f.n.children {
			names = append(names, name)
		}
		slices.Sort(names)
		f.dirents = make([]experimentalsys.Dirent, len(names))
		for i, name := range names {
			c := f.n.children[name]
			f.dirents[i] = experimentalsys.Dirent{Name: name, Ino: c.ino, Type: c.mode.Type()}
		}
		f.fs.mu.Unlock()
		f.listed = true
	}
	if n <= 0 || n > len(f.dirents) {
		n = len(f.dirents)
	}
	out := f.dirents[:n]
	f.dirents = f.dirents[n:]
	return out, 0
}

func (f *memFile) Write(buf []byte) (int, experimentalsys.Errno) {
	if f.append {
		f.fs.mu.Lock()
		f.off = int64(len(f.n.data))
		f.fs.mu.Unlock()
	}
	n, errno := f.Pwrite(buf, f.off)
	f.off += int64(n)
	return n, errno
}

func (f *memFile) Pwrite(buf []byte, off int64) (int, experimentalsys.Errno) {
	switch {
	case f.closed || !f.write:
		return 0, experimentalsys.EBADF
	case f.n.isDir():
		return 0, experimentalsys.EISDIR
	case off < 0:
		return 0, experimentalsys.EINVAL
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if end := off + int64(len(buf)); end > int64(len(f.n.data)) {
		if errno := f.fs.resize(f.n, end); errno != 0 {
			return 0, errno
		}
	}
	f.n.mtim = time.Now().UnixNano()
	return copy(f.n.data[off:], buf), 0
}

func (f *memFile) Truncate(size int64) experimentalsys.Errno {
	switch {
	case f.closed || !f.write:
		return experimentalsys.EBADF
	case f.n.isDir():
		return experimentalsys.EISDIR
	case size < 0:
		return experimentalsys.EINVAL
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.fs.resize(f.n, size)
}

func (f *memFile) Sync() experimentalsys.Errno     { return 0 }
func (f *memFile) Datasync() experimentalsys.Errno { return 0 }

func (f *memFile) Utimens(_, mtim int64) experimentalsys.Errno {
	if f.fs.readOnly {
		return experimentalsys.EROFS
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	setMtim(f.n, mtim)
	return 0
}

func (f *memFile) Close() experimentalsys.Errno {
	f.closed = true
	return 0
}
