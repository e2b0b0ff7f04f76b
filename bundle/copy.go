package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// IsBundleRoot is IsBundle of a directory held open.
func IsBundleRoot(root *os.Root) bool {
	fi, err := root.Lstat(ManifestFile)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	fi, err = root.Lstat(TreeDir)
	return err == nil && fi.IsDir()
}

// CopyFrom verifies the built bundle held open as root (name names it in errors) against its
// manifest, as Verify does, and copies it to out, which must not exist or be an empty
// directory: every entry of the manifest, read through root without following a link, each
// file hashed as it is copied. A copy whose tree differs from the manifest (the source
// changed while it was copied) is a *DriftError and nothing is left at out. The copy is
// written read-only like Build's output, under a temporary name renamed into place when
// complete.
func CopyFrom(root *os.Root, name, out string) (*Manifest, error) {
	m, err := verifyRoot(root, name)
	if err != nil {
		return nil, err
	}
	if err := checkOut(out); err != nil {
		return nil, &InputError{err}
	}
	tree, err := root.OpenRoot(TreeDir + "/.") // a FIFO swapped in fails, never blocks
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", name, err)
	}
	defer tree.Close()
	plan := make([]planned, 0, len(m.Entries))
	for _, e := range m.Entries {
		p := planned{Entry: e}
		if e.Kind == KindFile {
			if p.info, err = tree.Lstat(e.Path); err != nil {
				return nil, fmt.Errorf("bundle %s: %w", name, err)
			}
			p.exec = e.Mode == fmt.Sprintf("%04o", ExecFileMode)
		}
		plan = append(plan, p)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if tmp != "" {
			_ = removeReadOnly(tmp)
		}
	}()
	got, err := write(tree, plan, tmp)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: copy: %w", name, err)
	}
	if got.TreeSHA256 != m.TreeSHA256 {
		return nil, &DriftError{Dir: name, Want: m.TreeSHA256, Got: got.TreeSHA256,
			Diffs: []Diff{{Path: ".", What: "content", Want: m.TreeSHA256, Got: got.TreeSHA256}}}
	}
	if err := os.Chmod(tmp, DirMode); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, out); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, &InputError{fmt.Errorf("output %s appeared while the bundle was copied", out)}
		}
		return nil, err
	}
	tmp = ""
	return m, nil
}
