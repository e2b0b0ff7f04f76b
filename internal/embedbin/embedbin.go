// Package embedbin installs a binary embedded in ceval (the containers' init, the mock
// client) as a content-addressed, read-only file owned by ceval's user, ready to be
// bind-mounted into containers. It never follows a link planted where it installs.
package embedbin

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
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

// Binary is one embedded binary and the name it is installed under.
type Binary struct {
	name   string
	data   []byte
	digest func() [sha256.Size]byte
}

// New describes data, installed as name-<first 12 hex digits of its sha256>.
func New(name string, data []byte) *Binary {
	return &Binary{name: name, data: data, digest: sync.OnceValue(func() [sha256.Size]byte { return sha256.Sum256(data) })}
}

// Bytes returns the embedded binary. Callers must not modify it.
func (b *Binary) Bytes() []byte { return b.data }

// SHA256 returns the hex SHA-256 digest of Bytes.
func (b *Binary) SHA256() string {
	d := b.digest()
	return hex.EncodeToString(d[:])
}

// FileName is content-addressed, so the binaries of different ceval builds can share a
// directory.
func (b *Binary) FileName() string { return b.name + "-" + b.SHA256()[:12] }

// Install makes sure dir (created 0755 if missing) holds the binary as FileName(), a regular
// file of mode 0555 owned by the caller with exactly the embedded content, and returns its
// path.
// A file already there is kept only if it passes all of those checks (read through a
// descriptor opened without following symlinks); anything else at that name, a planted
// symlink included, is replaced atomically by rename. Concurrent callers are safe: each
// writes its own temporary file, and every rename puts identical bytes in place.
// It costs one read and comparison of the existing file, or one write when replacing it.
func (b *Binary) Install(dir string) (string, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// MkdirAll applies the umask; the promise is 0755 whatever it is.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("install %s: %w", b.name, err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return "", fmt.Errorf("install %s: %w", b.name, err)
		}
	}
	path := filepath.Join(dir, b.FileName())
	if b.installed(path) {
		return path, nil
	}
	if err := b.replace(dir, path); err != nil {
		return "", fmt.Errorf("install %s %s: %w", b.name, path, err)
	}
	return path, nil
}

// installed reports whether path already is exactly what Install would write.
func (b *Binary) installed(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o555 || fi.Size() != int64(len(b.data)) {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	// A second hard link would be a name we do not control for the same inode.
	if !ok || st.Uid != uint32(os.Geteuid()) || st.Nlink != 1 {
		return false
	}
	// Compared byte for byte with the embedded copy, a chunk at a time: as strict as
	// comparing digests, and several times cheaper than hashing (or reading into a fresh
	// buffer of) 3 MB again on every run.
	buf := make([]byte, 64<<10)
	rest := b.data
	for {
		n, err := f.Read(buf)
		if n > len(rest) || !bytes.Equal(buf[:n], rest[:n]) {
			return false // longer than the embedded copy (grown since Stat), or different
		}
		rest = rest[n:]
		if err == io.EOF {
			return len(rest) == 0
		}
		if err != nil {
			return false
		}
	}
}

// replace writes the binary to a fresh temporary file in dir and renames it over path; rename
// replaces whatever path was (a symlink itself, never its target) in one step.
func (b *Binary) replace(dir, path string) (err error) {
	f, err := os.CreateTemp(dir, "."+b.name+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	_, err = f.Write(b.data)
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

// Check returns an error unless the embedded bytes are a built, statically linked
// executable: what a committed binary must be (a placeholder, or a build that needs a libc,
// would only fail later, inside a container).
func (b *Binary) Check() error {
	if len(b.data) < 100_000 {
		return fmt.Errorf("embedded %s is %d bytes: not a built binary", b.name, len(b.data))
	}
	if err := CheckStatic(b.data); err != nil {
		return fmt.Errorf("embedded %s: %w", b.name, err)
	}
	return nil
}

// CheckStatic returns an error unless data is a statically linked linux/amd64 executable:
// images may have no libc and no dynamic loader, so what ceval mounts into them must be.
func CheckStatic(data []byte) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not ELF: %w", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
		return fmt.Errorf("machine %v type %v, want EM_X86_64 ET_EXEC", f.Machine, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return fmt.Errorf("program header %v: dynamically linked", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) != 0 {
		return fmt.Errorf("imports shared libraries %v", libs)
	}
	return nil
}
