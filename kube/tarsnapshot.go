package kube

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"ceval.dev/ceval/internal/kubeproto"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/snapshot"
)

// SnapshotTar makes the snapshot of a workspace that arrives as a tar stream out of a Pod,
// with the rules of a local one: the stream is hostile, so it is first unpacked into a
// private staging directory beside dst where nothing can escape (every entry's parent must
// be a directory the stream itself made, so no path runs through a link; absolute and ".."
// names are refused; entries must come in the walk's order; symlinks are made as links and
// never resolved; hard links only to files already unpacked; no special file is ever made),
// then snapshot.TakeStaged copies the staging tree into dst under lim exactly as Take copies
// a local workspace, and the staging directory is removed. What the stream holds but staging
// cannot (a file or directory the init could not open, a file whose bytes a cap left out, a
// FIFO, socket or device) is a stand-in that TakeStaged records as Take records the same
// entry found locally. A refused entry marks its directory's listing incomplete; a stream cut
// (a cap, an error) marks every directory whose listing it had not finished, so no name ever
// looks absent because of the transport. It reads at most lim's bytes, entries and paths
// (plus tar's headers): past them it stops reading and returns, and the caller ends the stream.
func SnapshotTar(r io.Reader, dst string, lim snapshot.Limits) (_ *snapshot.Snapshot, err error) {
	lim, err = lim.WithDefaults()
	if err != nil {
		return nil, err
	}
	// Made and removed as ceval's other temporary directories are (internal/tempdir): a
	// second signal's exit removes it too, and a removal that fails is said, not dropped.
	staging, err := tempdir.Make(filepath.Dir(dst), "ceval-tar-staging-")
	if err != nil {
		return nil, fmt.Errorf("snapshot of tar stream: %w", err)
	}
	defer func() {
		if rerr := tempdir.Remove(staging); rerr != nil {
			err = errors.Join(err, fmt.Errorf("snapshot of tar stream: its staging directory: %w", rerr))
		}
	}()
	u, err := unpack(&boundedReader{r: r, left: streamBound(lim)}, staging, lim)
	if err != nil {
		return nil, err
	}
	s, err := snapshot.TakeStaged(staging, dst, lim, u.staged)
	if err != nil {
		return nil, err
	}
	s.Notes = append(s.Notes, u.notes...)
	s.Truncated = s.Truncated || u.cut
	return s, nil
}

// CopyLimits are lim (defaults filled) as the init applies them at the source.
func CopyLimits(lim snapshot.Limits) (*kubeproto.CopyLimits, error) {
	lim, err := lim.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &kubeproto.CopyLimits{MaxFileBytes: lim.MaxFileBytes, MaxTotalBytes: lim.MaxTotalBytes, MaxEntries: lim.MaxEntries, MaxDepth: lim.MaxDepth, MaxPathBytes: lim.MaxPathBytes}, nil
}

// streamBound is the most a stream within lim can take: the bytes of the files, plus per
// entry a header, a PAX header and their blocks, plus the names twice (long names go in PAX).
func streamBound(lim snapshot.Limits) int64 {
	return lim.MaxTotalBytes + int64(lim.MaxEntries+2)*4096 + 2*lim.MaxPathBytes + 1<<20
}

// errStreamBound is the stream going past streamBound: a forged one.
var errStreamBound = errors.New("the stream is larger than the snapshot caps allow")

// boundedReader fails once more than left bytes were read.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errStreamBound
	}
	n, err := b.r.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	return n, err
}

// unpacked is what unpack could not reproduce.
type unpacked struct {
	notes  []snapshot.Note
	staged snapshot.Staged
	dirs   map[string]bool // made by the stream: the only valid parents
	cut    bool            // a cap or an error stopped reading the stream
}

// nearestDir is the deepest directory of the stream on name's way ("" for the root).
func (u *unpacked) nearestDir(name string) string {
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		if u.dirs[p] {
			return p
		}
	}
	return ""
}

// refuse notes a stream entry that is not reproduced and marks the listing of the directory
// it was in incomplete.
func (u *unpacked) refuse(name, reason string) {
	u.notes = append(u.notes, snapshot.Note{Path: strings.ToValidUTF8(name, "\uFFFD"), Reason: reason})
	dir := ""
	if c, ok := kubeproto.TarName(name); ok && c != "." {
		dir = u.nearestDir(c)
	}
	u.incomplete(dir, "holds an entry the workspace stream could not reproduce (see notes); other names may exist")
}

func (u *unpacked) incomplete(dir, reason string) {
	if _, ok := u.staged.Incomplete[dir]; !ok {
		u.staged.Incomplete[dir] = reason
	}
}

// stop ends the stream after last (the last entry read, "" for none; inDir when last is a
// directory whose listing was under way): every directory whose listing it had not finished
// is incomplete. atCap: the stream went one entry past a cap, which the walk then reaches;
// unfinished, when it is the init's PAXUnfinished for last, says which directories on
// last's way had names left (without it, all of them may have).
func (u *unpacked) stop(last string, inDir, atCap bool, unfinished, reason string) {
	if !atCap {
		u.notes = append(u.notes, snapshot.Note{Path: ".", Reason: reason})
	}
	why := "listing cut: " + reason
	if last != "" && inDir {
		u.incomplete(last, why)
	}
	var way []string // the directories on last's way, root first
	if last != "" {
		for p := path.Dir(last); p != "."; p = path.Dir(p) {
			way = append([]string{p}, way...)
		}
	}
	way = append([]string{""}, way...)
	known := len(unfinished) == len(way) && strings.Trim(unfinished, "01") == ""
	for i, dir := range way {
		if !known || unfinished[i] == '1' || i == len(way)-1 {
			u.incomplete(dir, why)
		}
	}
	u.cut, u.staged.Cut = true, atCap
}

// unpack writes the stream's directories, regular files, symlinks and hard links into
// staging, and a stand-in for the rest. Only a failure writing staging is an error; the
// stream's own faults are notes and incomplete listings.
func unpack(r io.Reader, staging string, lim snapshot.Limits) (*unpacked, error) {
	root, err := os.OpenRoot(staging)
	if err != nil {
		return nil, fmt.Errorf("snapshot of tar stream: %w", err)
	}
	defer root.Close()
	u := &unpacked{
		staged: snapshot.Staged{StandIns: map[string]snapshot.StandIn{}, Incomplete: map[string]string{}},
		dirs:   map[string]bool{".": true},
	}
	files := map[string]bool{}    // regular files made by the stream: the only link targets
	belowCap := map[string]bool{} // directories at the depth cap given their one placeholder
	var entries int
	var pathBytes, written int64
	var last string // the previous entry: names must come in the walk's order
	lastDir := false
	buf := make([]byte, 256<<10)
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return u, nil
		}
		if err != nil {
			u.stop(last, lastDir, false, "", fmt.Sprintf("workspace stream unreadable (%v)", err))
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
		if strings.Count(name, "/") >= lim.MaxDepth {
			// Below the depth cap the walk only sees whether a directory is empty: one
			// placeholder tells it, and nothing there is counted.
			parent := path.Dir(name)
			if u.dirs[parent] && !belowCap[parent] && namesFit(name) && walkOrder(last, name) {
				belowCap[parent], last, lastDir = true, name, false
				if err := placeholder(root, name, false); err != nil {
					return nil, stagingErr(name, err)
				}
			}
			continue
		}
		entries++
		pathBytes += int64(len(name))
		if entries > lim.MaxEntries || pathBytes > lim.MaxPathBytes {
			// One past the cap: staged as an empty placeholder, so the walk reaches the cap
			// right there and says so in its own words.
			if u.dirs[path.Dir(name)] && namesFit(name) && walkOrder(last, name) {
				if err := placeholder(root, name, h.Typeflag == tar.TypeDir); err != nil {
					return nil, stagingErr(name, err)
				}
			}
			u.stop(name, false, true, h.PAXRecords[kubeproto.PAXUnfinished], "the snapshot caps were reached in the workspace stream")
			return u, nil
		}
		switch {
		case !namesFit(name):
			u.refuse(name, "a path component longer than 255 bytes (no filesystem holds it); refused")
			continue
		case h.Typeflag == tar.TypeSymlink && (h.Linkname == "" || len(h.Linkname) >= 4096 || strings.ContainsRune(h.Linkname, 0)):
			u.refuse(name, "a symbolic link with an empty, overlong or NUL-holding target (no filesystem holds it); refused")
			continue
		case !walkOrder(last, name):
			u.refuse(name, "out of the walk's order (or twice) in the stream; refused")
			continue
		case !u.dirs[path.Dir(name)]:
			u.refuse(name, "its parent is not a directory of the stream (a path through a link, or out of order); refused")
			continue
		}
		last, lastDir = name, false
		size := h.Size
		if v, ok := h.PAXRecords[kubeproto.PAXSize]; ok {
			if size, err = strconv.ParseInt(v, 10, 64); err != nil || size < 0 || h.Size != 0 {
				u.refuse(name, fmt.Sprintf("bad %s record %q; refused", kubeproto.PAXSize, v))
				continue
			}
		}
		omitted, denied := h.PAXRecords[kubeproto.PAXOmitted]
		denied = denied && omitted == kubeproto.OmittedDenied
		if omitted != "" && omitted != kubeproto.OmittedDenied && omitted != kubeproto.OmittedSize {
			u.refuse(name, fmt.Sprintf("unknown %s record %q; refused", kubeproto.PAXOmitted, omitted))
			continue
		}
		standIn := func(kind snapshot.Kind) error {
			u.staged.StandIns[name] = snapshot.StandIn{Kind: kind, Size: size, Exec: h.Mode&0o100 != 0, Denied: denied}
			return placeholder(root, name, kind == snapshot.KindDir)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if denied {
				err = standIn(snapshot.KindDir) // its listing is not in the stream
				break
			}
			if err = root.Mkdir(name, 0o700); err == nil {
				u.dirs[name], lastDir = true, true
			}
		case tar.TypeReg:
			switch {
			case size < 0:
				u.refuse(name, "negative size; refused")
				continue
			case omitted != "", size > lim.MaxFileBytes, written+size > lim.MaxTotalBytes:
				err = standIn(snapshot.KindFile) // a forged stream's data is skipped by Next
			default:
				n, rerr, werr := unpackFile(root, name, h, tr, buf)
				if werr != nil {
					return nil, stagingErr(name, werr)
				}
				written += n
				if rerr != nil {
					// never a partial file in the snapshot: its bytes would pass for the agent's
					if err := root.Remove(name); err != nil {
						return nil, stagingErr(name, err)
					}
					u.stop(name, false, false, "", fmt.Sprintf("workspace stream cut inside %s (%v)", name, rerr))
					return u, nil
				}
				files[name] = true
			}
		case tar.TypeSymlink:
			err = root.Symlink(h.Linkname, name)
		case tar.TypeLink:
			target, ok := kubeproto.TarName(h.Linkname)
			if !ok || !files[target] {
				u.refuse(name, fmt.Sprintf("hard link to %q, which is not a regular file of the stream; refused", h.Linkname))
				continue
			}
			err = root.Link(target, name)
		case tar.TypeFifo:
			err = standIn(snapshot.KindFIFO)
		case kubeproto.TarTypeSocket:
			err = standIn(snapshot.KindSocket)
		case tar.TypeChar:
			err = standIn(snapshot.KindCharDevice)
		case tar.TypeBlock:
			err = standIn(snapshot.KindBlockDevice)
		default:
			u.refuse(name, fmt.Sprintf("tar entry type %q is not one the init writes; refused", h.Typeflag))
			continue
		}
		if err != nil {
			return nil, stagingErr(name, err)
		}
	}
}

// walkOrder reports whether name comes after prev in the order the init's walk (and Take's)
// visits a tree: segment by segment, a directory before what is below it. A stream in that
// order tells where it was cut: only the directories on the way to its last entry are
// unfinished.
func walkOrder(prev, name string) bool {
	if prev == "" {
		return true
	}
	p, n := strings.Split(prev, "/"), strings.Split(name, "/")
	for i := 0; i < len(p) && i < len(n); i++ {
		if p[i] != n[i] {
			return p[i] < n[i]
		}
	}
	return len(n) > len(p)
}

// placeholder makes the empty directory or file that stands in for an entry at name.
func placeholder(root *os.Root, name string, dir bool) error {
	if dir {
		return root.Mkdir(name, 0o700)
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
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

// unpackFile makes a regular file of the stream and copies its bytes (the caller checked
// its size against the caps), telling a read failure (the stream's) from a write failure
// (staging's).
func unpackFile(root *os.Root, name string, h *tar.Header, r io.Reader, buf []byte) (n int64, rerr, werr error) {
	mode := os.FileMode(0o600)
	if h.Mode&0o100 != 0 {
		mode = 0o700
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
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

func stagingErr(name string, err error) error {
	return fmt.Errorf("snapshot of tar stream: unpack %s into staging: %w", name, err)
}
