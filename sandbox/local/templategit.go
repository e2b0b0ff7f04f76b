package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"ceval.dev/ceval/internal/rootfs"
)

// maxGitMetaBytes bounds the small files of a template's .git that ceval reads itself (HEAD,
// config).
const maxGitMetaBytes = 64 << 10

var (
	gitHeadRef    = regexp.MustCompile(`^ref: (refs/heads/[^ \t\n\r\\:~^?*\[]+)\n?$`)
	gitHeadObject = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})\n?$`)
	gitSHA256     = regexp.MustCompile(`(?im)^\s*objectformat\s*=\s*sha256\s*$`)
)

// copyGitDir copies what fetching HEAD needs from the template's repository (gitDir, below
// src) into a new private bare repository at dst: HEAD, packed-refs, shallow, refs/ and
// objects/, reading through src and following no link (a symlink anywhere there is an error;
// validation refuses it first). Alternates, commondir, hooks, config and everything else of
// the template's .git stay behind; dst's config is ceval's own. It returns the branch HEAD
// names ("main" when HEAD is detached).
func copyGitDir(src *os.Root, gitDir, dst string) (string, error) {
	head, err := readGitMeta(src, path.Join(gitDir, "HEAD"))
	if err != nil {
		return "", fmt.Errorf("HEAD: %w", err)
	}
	branch := "main"
	if m := gitHeadRef.FindSubmatch(head); m != nil {
		branch = strings.TrimPrefix(string(m[1]), "refs/heads/")
	} else if !gitHeadObject.Match(head) {
		return "", errors.New("HEAD is neither a branch reference nor an object name")
	}
	config := "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
	if cfg, err := readGitMeta(src, path.Join(gitDir, "config")); err == nil && gitSHA256.Match(cfg) {
		config = "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = sha256\n"
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return "", err
	}
	out, err := os.OpenRoot(dst)
	if err != nil {
		return "", err
	}
	defer out.Close()
	if err := out.WriteFile("HEAD", head, 0o600); err != nil {
		return "", err
	}
	if err := out.WriteFile("config", []byte(config), 0o600); err != nil {
		return "", err
	}
	for _, f := range []string{"packed-refs", "shallow"} {
		switch err := copyGitFile(src, out, gitDir, f); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return "", err
		}
	}
	for _, top := range []string{"refs", "objects"} {
		if fi, err := src.Lstat(path.Join(gitDir, top)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf(".git/%s is a symlink; a template's .git must hold none", top)
		}
		if err := out.Mkdir(top, 0o700); err != nil {
			return "", err
		}
		err := fs.WalkDir(rootfs.NonBlocking(src), path.Join(gitDir, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && p == path.Join(gitDir, top) {
					return fs.SkipDir
				}
				return err
			}
			rel := strings.TrimPrefix(p, gitDir+"/")
			switch t := d.Type(); {
			case rel == top:
				return nil
			case rel == "objects/info/alternates" || rel == "objects/info/http-alternates":
				return nil // never another repository's objects
			case t&fs.ModeSymlink != 0:
				return fmt.Errorf(".git/%s is a symlink; a template's .git must hold none", rel)
			case t.IsDir():
				return out.Mkdir(rel, 0o700)
			case t.IsRegular():
				return copyGitFile(src, out, gitDir, rel)
			}
			return nil // FIFOs, sockets, devices: nothing git needs
		})
		if err != nil {
			return "", err
		}
	}
	return branch, nil
}

// copyGitFile copies gitDir/rel from src to rel in out: a regular file, never a link or a
// FIFO (opened without following and without blocking, checked after opening).
func copyGitFile(src, out *os.Root, gitDir, rel string) error {
	in, err := src.OpenFile(path.Join(gitDir, rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return fmt.Errorf(".git/%s is a symlink; a template's .git must hold none", rel)
		}
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf(".git/%s is not a regular file", rel)
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := out.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	f, err := out.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readGitMeta reads a small regular file of a template's .git, following no link.
func readGitMeta(src *os.Root, p string) ([]byte, error) {
	f, err := src.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGitMetaBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxGitMetaBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxGitMetaBytes)
	}
	return data, nil
}
