package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Limits caps what Take copies. A zero field means its default (see DefaultLimits).
type Limits struct {
	// MaxFileBytes is the largest regular file copied; a larger one is left out and noted.
	MaxFileBytes int64 `json:"max_file_bytes"`
	// MaxTotalBytes caps the bytes of all copied files; reaching it stops the snapshot.
	MaxTotalBytes int64 `json:"max_total_bytes"`
	// MaxEntries caps the directory entries examined (captured or skipped); reaching it
	// stops the snapshot.
	MaxEntries int `json:"max_entries"`
	// MaxDepth is the deepest entry captured, counted in path segments ("a/b" is 2).
	MaxDepth int `json:"max_depth"`
	// MaxPathBytes caps the summed length of the paths of the entries examined, so memory
	// and manifest size are bounded by entries times a typical path, never by entries times
	// depth times name length; reaching it stops the snapshot.
	MaxPathBytes int64 `json:"max_path_bytes"`
}

// DefaultLimits returns 16 MiB per file, 1 GiB in all, 100,000 entries, depth 64 and
// 8 MiB of paths (an average of 83 bytes at the entry cap). The path cap also bounds what
// grading costs: a sandboxed criterion that walks the tree spends about a second per MiB
// of paths.
func DefaultLimits() Limits {
	return Limits{
		MaxFileBytes:  16 << 20,
		MaxTotalBytes: 1 << 30,
		MaxEntries:    100_000,
		MaxDepth:      64,
		MaxPathBytes:  8 << 20,
	}
}

// WithDefaults fills zero fields from DefaultLimits and refuses negative ones.
func (l Limits) WithDefaults() (Limits, error) {
	d := DefaultLimits()
	if l.MaxFileBytes < 0 || l.MaxTotalBytes < 0 || l.MaxEntries < 0 || l.MaxDepth < 0 || l.MaxPathBytes < 0 {
		return l, fmt.Errorf("snapshot limits must not be negative: %+v", l)
	}
	if l.MaxFileBytes == 0 {
		l.MaxFileBytes = d.MaxFileBytes
	}
	if l.MaxTotalBytes == 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxEntries == 0 {
		l.MaxEntries = d.MaxEntries
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxPathBytes == 0 {
		l.MaxPathBytes = d.MaxPathBytes
	}
	return l, nil
}

// Kind is the type of a captured entry.
type Kind string

// The kinds of entry a snapshot holds. Symlinks exist only in Entries, never on disk; so
// do the special files (FIFOs, sockets, devices), which are never opened and always
// Omitted.
const (
	KindFile        Kind = "file"
	KindDir         Kind = "dir"
	KindSymlink     Kind = "symlink"
	KindFIFO        Kind = "fifo"
	KindSocket      Kind = "socket"
	KindCharDevice  Kind = "char-device"
	KindBlockDevice Kind = "block-device"
)

// Entry is one captured workspace entry.
type Entry struct {
	// Path is slash-separated and relative to the workspace root ("src/main.go").
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// Size is the byte count of a file as copied; 0 for dirs, the target length for links.
	Size int64 `json:"size"`
	// Mode is the permission bits as stored in the snapshot: 0644 or 0755 for files, 0755
	// for dirs, 0 for symlinks. Setuid, setgid and sticky bits are never kept.
	Mode fs.FileMode `json:"mode"`
	// Target is a symlink's target string, recorded and never followed.
	Target string `json:"target,omitempty"`
	// Omitted, when set, says why content is missing. For a file or special file: its bytes
	// are not in the snapshot (Size is its real size) and every read of it must fail. For a
	// directory: its listing is incomplete, so a name not captured below it may still exist
	// and must never be reported absent.
	Omitted string `json:"omitted,omitempty"`
}

// Note explains why a workspace path is missing from, or incomplete in, the snapshot.
type Note struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Snapshot is a private copy of a workspace. Dir holds only regular files and directories
// owned by the ceval process; Entries, in lexical walk order, also lists symlinks, special
// files, and the files whose content a cap or an error left out (Omitted). A cap never makes
// an entry look absent: what it leaves out is either an Omitted entry or below a directory
// whose listing is Omitted (RootOmitted for the root), and Unvouched tells the two apart.
type Snapshot struct {
	Dir       string  `json:"-"`
	Entries   []Entry `json:"entries"`
	Notes     []Note  `json:"notes"`
	Truncated bool    `json:"truncated"`
	Bytes     int64   `json:"bytes"`
	Limits    Limits  `json:"limits"`
	// RootOmitted says why the root's own listing is incomplete; "" when it is complete.
	RootOmitted string `json:"root_omitted,omitempty"`
	// LimitsHit names every cap the snapshot reached, one line each, for result.json.
	LimitsHit []string `json:"limits_hit,omitempty"`
	// Outputs are the copies of the task's sandbox.outputs, taken with the workspace's
	// (Resolve finds a criterion's absolute path in them); never in the manifest.
	Outputs []Output `json:"-"`

	indexOnce sync.Once
	byPath    map[string]int
	noteBy    map[string]int
}

// Take copies the workspace at src into dst, which must not exist and is created 0700.
// It never follows a symlink below src and refuses a src that is itself a symlink. What
// it skips or leaves out under lim is noted; the error is for ceval-side failures only
// (src missing or not a directory, dst not creatable, a write to dst failing), in which
// case dst is removed.
func Take(src, dst string, lim Limits) (*Snapshot, error) {
	return takeFrom(src, dst, lim, nil)
}

// takeFrom is Take, and TakeStaged when st is set.
func takeFrom(src, dst string, lim Limits, st *Staged) (*Snapshot, error) {
	lim, err := lim.WithDefaults()
	if err != nil {
		return nil, err
	}
	srcFD, err := openRoot(src)
	if err != nil {
		return nil, err
	}
	defer unix.Close(srcFD)
	return takeInto(srcFD, dst, lim, st)
}

// takeInto creates dst and copies the open directory srcFD into it; on error dst is removed.
func takeInto(srcFD int, dst string, lim Limits, st *Staged) (*Snapshot, error) {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return nil, fmt.Errorf("snapshot: create %w", err)
	}
	s, err := take(srcFD, dst, lim, st)
	if err != nil {
		if rmErr := os.RemoveAll(dst); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("snapshot: remove partial %s: %w", dst, rmErr))
		}
		return nil, err
	}
	return s, nil
}

// TakeAt is Take of the directory rel below root, reached without following a symlink in
// any of rel's components (an agent-written home may plant one anywhere). A missing or
// non-directory component is reported as fs.ErrNotExist.
func TakeAt(root, rel string, dst string, lim Limits) (*Snapshot, error) {
	lim, err := lim.WithDefaults()
	if err != nil {
		return nil, err
	}
	fd, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	for _, c := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
		if c == "" || c == "." || c == ".." {
			unix.Close(fd)
			return nil, fmt.Errorf("snapshot: %q is not a relative path below %s", rel, root)
		}
		next, err := openDir(fd, c)
		unix.Close(fd)
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
			return nil, fmt.Errorf("snapshot: %s in %s: %w (%v)", rel, root, fs.ErrNotExist, err)
		case err != nil:
			return nil, fmt.Errorf("snapshot: open %s in %s: %w", rel, root, err)
		}
		fd = next
	}
	defer unix.Close(fd)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return nil, fmt.Errorf("snapshot: create %w", err)
	}
	return takeInto(fd, dst, lim, nil)
}

// openRoot opens the workspace root without following a symlink in its last component.
func openRoot(src string) (int, error) {
	fd, err := openDir(unix.AT_FDCWD, src)
	switch {
	case errors.Is(err, unix.ELOOP):
		return -1, fmt.Errorf("snapshot: workspace %s is a symlink; refusing to follow it", src)
	case errors.Is(err, unix.ENOTDIR):
		return -1, fmt.Errorf("snapshot: workspace %s is not a directory", src)
	case err != nil:
		return -1, fmt.Errorf("snapshot: open workspace %s: %w", src, err)
	}
	return fd, nil
}

func take(srcFD int, dst string, lim Limits, st *Staged) (*Snapshot, error) {
	dstFD, err := openDir(unix.AT_FDCWD, dst)
	if err != nil {
		return nil, fmt.Errorf("snapshot: open %s: %w", dst, err)
	}
	defer unix.Close(dstFD)
	// Mkdir's mode passes through the umask; make the root exactly 0700.
	if err := unix.Fchmod(dstFD, 0o700); err != nil {
		return nil, fmt.Errorf("snapshot: chmod %s: %w", dst, err)
	}
	w := &walker{
		lim:    lim,
		dst:    dst,
		s:      &Snapshot{Dir: dst, Entries: []Entry{}, Notes: []Note{}, Limits: lim},
		dbuf:   make([]byte, 32<<10),
		staged: st,
	}
	if err := w.walkDir(srcFD, dstFD, "", 0, rootIndex); err != nil {
		return nil, err
	}
	w.markIncomplete(st)
	w.s.LimitsHit = w.limitsHit()
	return w.s, nil
}
