package clientbin

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

//go:embed ceval-mock
var binary []byte

var digest = sync.OnceValue(func() [sha256.Size]byte { return sha256.Sum256(binary) })

// Bytes returns the embedded static mock client. Callers must not modify it.
func Bytes() []byte { return binary }

// SHA256 returns the hex SHA-256 digest of Bytes.
func SHA256() string {
	d := digest()
	return hex.EncodeToString(d[:])
}

// fileName is content-addressed, so the clients of different ceval builds can share a directory.
func fileName() string { return "ceval-mock-" + SHA256()[:12] }

// Install makes sure dir (created 0755 if missing) holds the client as ceval-mock-<first 12 hex
// digits of SHA256>, a regular file of mode 0555 owned by the caller with exactly the
// embedded content, and returns its path.
// A file already there is kept only if it passes all of those checks (read through a
// descriptor opened without following symlinks); anything else at that name, a planted
// symlink included, is replaced atomically by rename. Concurrent callers are safe: each
// writes its own temporary file, and every rename puts identical bytes in place.
// It costs one hash of the existing file (~3 MB), or one write when replacing it.
func Install(dir string) (string, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// MkdirAll applies the umask; the promise is 0755 whatever it is.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("install ceval-mock: %w", err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return "", fmt.Errorf("install ceval-mock: %w", err)
		}
	}
	path := filepath.Join(dir, fileName())
	if installed(path) {
		return path, nil
	}
	if err := replace(dir, path); err != nil {
		return "", fmt.Errorf("install ceval-mock %s: %w", path, err)
	}
	return path, nil
}

// installed reports whether path already is exactly what Install would write.
func installed(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o555 || fi.Size() != int64(len(binary)) {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	// A second hard link would be a name we do not control for the same inode.
	if !ok || st.Uid != uint32(os.Geteuid()) || st.Nlink != 1 {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	d := digest()
	return bytes.Equal(h.Sum(nil), d[:])
}

// replace writes the client to a fresh temporary file in dir and renames it over path; rename
// replaces whatever path was (a symlink itself, never its target) in one step.
func replace(dir, path string) (err error) {
	f, err := os.CreateTemp(dir, ".ceval-mock-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(binary)
	if err == nil {
		err = f.Chmod(0o555)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// No re-check afterwards: a concurrent caller may already have renamed its identical
	// copy over ours, leaving our inode unlinked.
	return os.Rename(tmp, path)
}
