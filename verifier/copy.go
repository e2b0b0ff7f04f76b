package verifier

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// copySnapshot writes the snapshot's files, directories and links into workspace (a fresh
// capped scratch filesystem) through an os.Root, so no entry lands outside it. Links are
// recreated as links: they resolve inside the verifier container, never on the host. What
// the snapshot left out is absent, and a note says so.
func copySnapshot(s *snapshot.Snapshot, workspace string) (notes []string, err error) {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, fmt.Errorf("copy the snapshot: %w", err)
	}
	defer root.Close()
	omitted := 0
	var shadows []string
	for _, e := range s.Entries {
		if shadowsEncodings(e.Path) {
			if len(shadows) < 5 {
				shadows = append(shadows, e.Path)
			}
			continue
		}
		switch e.Kind {
		case snapshot.KindDir:
			err = root.MkdirAll(e.Path, 0o755)
		case snapshot.KindFile:
			if e.Omitted != "" {
				omitted++
				continue
			}
			var data []byte
			if data, err = s.ReadFile(e.Path); err == nil {
				if zipShadowsEncodings(data) {
					if len(shadows) < 5 {
						shadows = append(shadows, e.Path+" (a zip archive holding encodings)")
					}
					continue
				}
				err = root.WriteFile(e.Path, data, e.Mode.Perm()&0o755)
			}
		case snapshot.KindSymlink:
			err = root.Symlink(e.Target, e.Path)
		default:
			omitted++
			continue
		}
		if errors.Is(err, syscall.ENOSPC) {
			return nil, &workspaceTooBig{path: e.Path}
		}
		if err != nil {
			return nil, fmt.Errorf("copy the snapshot: %s: %w", e.Path, err)
		}
	}
	if len(shadows) > 0 {
		notes = append(notes, fmt.Sprintf("left out %s: a Python module named encodings on PYTHONPATH runs before ceval's import guard in every python3", strings.Join(shadows, ", ")))
	}
	if omitted > 0 || s.Truncated {
		notes = append(notes, fmt.Sprintf("the snapshot left out %d entries (see snapshot_notes); the command ran without them", omitted))
	}
	return notes, nil
}

// copyMaterial copies the directories and regular files of task material (the reference,
// grader_files), read through its handle, into dst (links and special files are left out),
// at most max bytes in all.
func copyMaterial(ref *task.Dir, dst string, max int64) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return fmt.Errorf("copy %s: %w", ref.Path, err)
	}
	out, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("copy %s: %w", ref.Path, err)
	}
	defer out.Close()
	in := ref.Root()
	var total int64
	err = fs.WalkDir(in.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case p == ".":
			return nil
		case d.IsDir():
			return out.Mkdir(p, 0o700)
		case !d.Type().IsRegular():
			return nil
		}
		src, err := in.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer src.Close()
		f, err := out.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		n, err := io.Copy(f, io.LimitReader(src, max-total+1))
		total += n
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && total > max {
			err = fmt.Errorf("over %d bytes, the cap of a verifier's copy", max)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("copy %s: %w", ref.Path, err)
	}
	return nil
}

// handTo makes the tree at dir the given host UID's alone and read-only: directories 0500,
// files 0400 (a reference copy holds no links).
func handTo(dir string, uid int) error {
	if err := launcher.ChownTree(dir, uid, uid); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o400)
		if d.IsDir() {
			mode = 0o500
		}
		return root.Chmod(p, mode)
	})
}

// workspaceTooBig is the snapshot not fitting the verifier's capped workspace: the
// workspace's doing (its files or their count), so the criterion fails rather than errs.
type workspaceTooBig struct{ path string }

func (e *workspaceTooBig) Error() string {
	return fmt.Sprintf("the snapshot does not fit the verifier's workspace cap (sandbox.limits.disk_mb and its inodes); it was full at %q; not run", e.path)
}

// copyGraderFiles copies each grader_files entry (a directory tree or one file) through the
// task directory's handle held since load into dst/Rel, within max bytes in all.
func copyGraderFiles(files []task.GraderFile, dst string, max int64) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return fmt.Errorf("copy grader_files: %w", err)
	}
	for _, g := range files {
		target := filepath.Join(dst, filepath.FromSlash(g.Rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return fmt.Errorf("copy grader_files %s: %w", g.Rel, err)
		}
		if g.Dir {
			sub, err := g.Root.Sub(g.Rel)
			if err != nil {
				return fmt.Errorf("copy grader_files %s: %w", g.Rel, err)
			}
			err = copyMaterial(sub, target, max)
			sub.Close()
			if err != nil {
				return err
			}
			continue
		}
		if err := copyOne(g.Root.Root(), g.Rel, target, max); err != nil {
			return fmt.Errorf("copy grader_files %s: %w", g.Rel, err)
		}
	}
	return nil
}

// copyOne copies one regular file (never a link, FIFO or device) out of root.
func copyOne(root *os.Root, rel, dst string, max int64) error {
	src, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	if fi, err := src.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(src, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > max {
		err = fmt.Errorf("over %d bytes, the cap of a verifier's copy", max)
	}
	return err
}

// shadowsEncodings says whether the entry at p (slash-separated, relative) is, or is inside,
// something CPython would import as the top-level encodings package from p's directory: a
// directory, module, bytecode or extension module named encodings. Every CPython imports
// encodings first, before site, from PYTHONPATH's entries ahead of its own standard library,
// so one in a directory of the workspace that a command puts on PYTHONPATH would run the
// agent's code before the Python start guard (pystart.go), which lives in the image's own
// encodings. No program of the agent's can need that name: it would break its own Python.
func shadowsEncodings(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "encodings" {
			return true
		}
		if name, ext, ok := strings.Cut(seg, "."); ok && name == "encodings" && (ext == "py" || ext == "pyc" || ext == "pyw" || strings.HasSuffix(ext, "so")) {
			return true
		}
	}
	return false
}

// zipEOCD is the signature of a zip archive's end-of-central-directory record, which
// CPython's zipimport looks for in a file's last 64 KiB (plus the record's 22 bytes).
var zipEOCD = []byte("PK\x05\x06")

// zipShadowsEncodings says whether data is a zip archive CPython could import the encodings
// package from: zipimport reads any file whose end holds a zip directory, whatever its name
// (a PYTHONPATH entry /workspace/lib.zip, /workspace/x.whl/sub, or the python3N.zip that
// a PYTHONHOME of the workspace puts first in sys.path), so an archive holding an entry
// shadowsEncodings names, at any depth, would run the agent's code before the Python start
// guard as a directory would. An archive Go cannot read but that has the signature and names
// encodings counts too: the decision errs on leaving it out.
func zipShadowsEncodings(data []byte) bool {
	tail := data
	if len(tail) > 65535+22 {
		tail = tail[len(tail)-(65535+22):]
	}
	if !bytes.Contains(tail, zipEOCD) || !bytes.Contains(data, []byte("encodings")) {
		return false
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return true
	}
	for _, f := range zr.File {
		if shadowsEncodings(strings.Trim(f.Name, "/")) {
			return true
		}
	}
	return false
}
