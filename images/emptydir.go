package images

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
)

// The empty-directory cache remembers, across processes, a directory of an image's unpacked
// layers found missing or empty (a run's WORKDIR, whose tree starts the workspace): the next
// run over the same layers skips the read-only view of the snapshot it took to find out (a
// lease, a snapshot made and removed, a mount and an unmount). An entry is keyed by the
// chain ID of the layers (a digest of their uncompressed content, which containerd checks
// when it unpacks them) and the path, never by an image's name: an image changed under the
// same name has other layers and is looked at afresh. A directory with anything in it is
// never remembered. The cache is a private directory beside the preflight cache, checked as
// that one is (owned by ceval's user, writable by no one else); an entry that fails the
// checks or does not name its key is ignored.

// emptyDirCache is the cache's directory: DefaultCacheDir's sibling "emptydir".
func emptyDirCache() (string, error) {
	pre, err := DefaultCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(pre), "emptydir"), nil
}

func emptyDirEntry(chainID digest.Digest, rel string) (key, name string) {
	key = chainID.String() + "\x00" + rel + "\n"
	sum := sha256.Sum256([]byte(key))
	return key, hex.EncodeToString(sum[:])
}

// KnownEmptyDir says whether the directory rel (slash-separated, relative to the root) of the
// layers with chain ID chainID was found missing or empty by an earlier run (RememberEmptyDir).
func KnownEmptyDir(chainID digest.Digest, rel string) bool {
	if chainID.Validate() != nil {
		return false
	}
	dir, err := emptyDirCache()
	if err != nil || checkPrivate(dir, true) != nil {
		return false
	}
	key, name := emptyDirEntry(chainID, rel)
	f := filepath.Join(dir, name)
	if checkPrivate(f, false) != nil {
		return false
	}
	b, err := os.ReadFile(f)
	return err == nil && string(b) == key
}

// RememberEmptyDir records that the directory rel of the layers with chain ID chainID is
// missing or empty, for KnownEmptyDir in later processes.
func RememberEmptyDir(chainID digest.Digest, rel string) error {
	if err := chainID.Validate(); err != nil {
		return err
	}
	dir, err := emptyDirCache()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("empty-directory cache: %w", err)
	}
	if err := checkPrivate(dir, true); err != nil {
		return fmt.Errorf("empty-directory cache: %w", err)
	}
	key, name := emptyDirEntry(chainID, rel)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("empty-directory cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(key); err != nil {
		tmp.Close()
		return fmt.Errorf("empty-directory cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("empty-directory cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("empty-directory cache: %w", err)
	}
	return nil
}
