package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"ceval.dev/ceval/internal/rootfs"
)

// Diff is one difference between a manifest and the tree on disk.
type Diff struct {
	Path string `json:"path"`
	What string `json:"what"` // missing, extra, content, target, mode, kind, hard link
	Want string `json:"want,omitempty"`
	Got  string `json:"got,omitempty"`
}

func (d Diff) String() string {
	switch d.What {
	case "missing":
		return fmt.Sprintf("%s: missing (manifest has a %s)", d.Path, d.Want)
	case "extra":
		return fmt.Sprintf("%s: extra %s, not in the manifest", d.Path, d.Got)
	case "hard link":
		return fmt.Sprintf("%s: hard-linked (%s links): its content can change from outside the bundle", d.Path, d.Got)
	}
	return fmt.Sprintf("%s: %s changed: want %s, got %s", d.Path, d.What, d.Want, d.Got)
}

// DriftError says a bundle's tree no longer matches its manifest; it lists every
// difference, each by path.
type DriftError struct {
	Dir   string
	Want  string // the manifest's tree_sha256
	Got   string // the digest of the tree as it is now
	Diffs []Diff
}

func (e *DriftError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bundle %s does not match its manifest (%d difference(s); tree sha256 %s, manifest %s)", e.Dir, len(e.Diffs), e.Got, e.Want)
	for _, d := range e.Diffs {
		b.WriteString("\n  ")
		b.WriteString(d.String())
	}
	return b.String()
}

// IsBundle reports whether dir looks like a built bundle rather than a source tree: a
// regular manifest.json beside a tree/ directory.
func IsBundle(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, ManifestFile))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	fi, err = os.Lstat(filepath.Join(dir, TreeDir))
	return err == nil && fi.IsDir()
}

// Verify recomputes the bundle in dir (manifest.json beside tree/) from disk, never
// following a symlink, and compares it with its manifest in both directions: a missing
// entry, an extra one, a changed byte, link target, mode or kind, and a hard-linked file are
// each reported by path in a *DriftError. It returns the manifest when the tree is identical.
func Verify(dir string) (*Manifest, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	defer root.Close()
	return verifyRoot(root, dir)
}

// verifyRoot is Verify of the bundle held open as root; dir names it in errors.
func verifyRoot(root *os.Root, dir string) (*Manifest, error) {
	data, err := readManifest(root)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	got, issues, err := scanTree(root)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	if diffs := append(compare(m.Entries, got), issues...); len(diffs) > 0 {
		sort.SliceStable(diffs, func(i, j int) bool { return diffs[i].Path < diffs[j].Path })
		return m, &DriftError{Dir: dir, Want: m.TreeSHA256, Got: Digest(got), Diffs: diffs}
	}
	return m, nil
}

func readManifest(root *os.Root) ([]byte, error) {
	fi, err := root.Lstat(ManifestFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no %s: not a built bundle (make one with ceval bundle build)", ManifestFile)
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", ManifestFile)
	}
	f, err := root.OpenFile(ManifestFile, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", ManifestFile, MaxManifestBytes)
	}
	return data, nil
}

// scanTree lists tree/ below root as entries, in path order, without following links: each
// file hashed through a descriptor checked to be the entry it listed. Special files come
// back as entries of their own kind (never in a manifest), hard links as issues.
func scanTree(root *os.Root) ([]Entry, []Diff, error) {
	fi, err := root.Lstat(TreeDir)
	if err != nil {
		return nil, nil, err
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a directory (%s)", TreeDir, kindOf(fi.Mode()))
	}
	tree, err := root.OpenRoot(TreeDir + "/.") // a FIFO swapped in fails, never blocks
	if err != nil {
		return nil, nil, err
	}
	defer tree.Close()
	var entries []Entry
	var issues []Diff
	err = fs.WalkDir(rootfs.NonBlocking(tree), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if len(entries) >= MaxEntries {
			return fmt.Errorf("more than %d entries", MaxEntries)
		}
		fi, err := tree.Lstat(p)
		if err != nil {
			return err
		}
		e := Entry{Path: p, Kind: kindOf(fi.Mode())}
		switch e.Kind {
		case KindDir:
			e.Mode = modeString(fi)
		case KindFile:
			e.Mode = modeString(fi)
			if n := nlink(fi); n > 1 {
				issues = append(issues, Diff{Path: p, What: "hard link", Got: fmt.Sprint(n)})
			}
			e.Size, e.SHA256, err = hashFile(tree, p, fi)
			if err != nil {
				return err
			}
		case KindSymlink:
			if e.Target, err = tree.Readlink(p); err != nil {
				return err
			}
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("scan %s: %w", TreeDir, err)
	}
	return entries, issues, nil
}

// hashFile hashes the regular file at p, opened without following a link and without
// blocking, and checked to be the same file the caller lstat'ed as want.
func hashFile(root *os.Root, p string, want fs.FileInfo) (int64, string, error) {
	f, err := openChecked(root, p, want)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", p, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// openChecked opens the regular file at p without following a link or blocking on a FIFO,
// and refuses it unless it is the very file lstat returned as want.
func openChecked(root *os.Root, p string, want fs.FileInfo) (*os.File, error) {
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(fi, want) {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was read", p)
	}
	return f, nil
}

// compare returns every difference between want (a manifest's entries) and got (the tree),
// both in path order.
func compare(want, got []Entry) []Diff {
	var diffs []Diff
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || i < len(want) && want[i].Path < got[j].Path:
			diffs = append(diffs, Diff{Path: want[i].Path, What: "missing", Want: want[i].Kind})
			i++
		case i == len(want) || got[j].Path < want[i].Path:
			diffs = append(diffs, Diff{Path: got[j].Path, What: "extra", Got: got[j].Kind})
			j++
		default:
			w, g := want[i], got[j]
			switch {
			case w.Kind != g.Kind:
				diffs = append(diffs, Diff{Path: w.Path, What: "kind", Want: w.Kind, Got: g.Kind})
			case w.SHA256 != g.SHA256 || w.Size != g.Size:
				diffs = append(diffs, Diff{Path: w.Path, What: "content", Want: fmt.Sprintf("sha256 %s (%d bytes)", w.SHA256, w.Size), Got: fmt.Sprintf("sha256 %s (%d bytes)", g.SHA256, g.Size)})
			case w.Target != g.Target:
				diffs = append(diffs, Diff{Path: w.Path, What: "target", Want: w.Target, Got: g.Target})
			}
			if w.Kind == g.Kind && w.Mode != g.Mode {
				diffs = append(diffs, Diff{Path: w.Path, What: "mode", Want: w.Mode, Got: g.Mode})
			}
			i++
			j++
		}
	}
	return diffs
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return KindDir
	case m.IsRegular():
		return KindFile
	case m&fs.ModeSymlink != 0:
		return KindSymlink
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// modeString is the permission bits with setuid, setgid and sticky, in octal.
func modeString(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%04o", st.Mode&0o7777)
	}
	return fmt.Sprintf("%04o", fi.Mode().Perm())
}

func nlink(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
