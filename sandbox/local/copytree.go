package local

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"ceval.dev/ceval/internal/rootfs"
	"ceval.dev/ceval/internal/tempdir"
)

// CopyTree copies the tree of src into ws, uncapped (see copyTree): a task's template_dir.
func CopyTree(src *os.Root, ws string) error { return copyTree(src, ws, &treeCopy{}) }

// treeCopy is the state of one copyTree: its caps (0 = none) and what it copied and skipped.
type treeCopy struct {
	maxBytes, maxEntries int64
	capErr               func(what string) error // the error of a cap hit, naming the source

	bytes, entries int64
	skipped        []string // devices, FIFOs, sockets: "PATH (KIND)"
}

// copyTree copies the tree of src into ws: regular files by their bytes (mode bits 0755 at
// most), directories, and symlinks recreated as links (never followed, on either side).
// An entry replaces what ws already has at its path (a directory merges into a directory).
// Devices, FIFOs and sockets are skipped and listed in c.skipped. No .git is copied: each
// repository, at any depth, is rebuilt with its HEAD's history only. A cap of c hit is
// c.capErr's error, never a partial copy that looks whole.
func copyTree(src *os.Root, ws string, c *treeCopy) error {
	dst, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer dst.Close()
	var repos []string // directories of the source that hold a .git directory
	err = fs.WalkDir(rootfs.NonBlocking(src), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if path.Base(p) == ".git" {
			// Every repository, nested ones included, is rebuilt from its HEAD. A .git that
			// is not a directory (a worktree or submodule pointer, a link) is never copied.
			if d.IsDir() {
				repos = append(repos, path.Dir(p))
				return fs.SkipDir
			}
			return nil
		}
		fi, err := src.Lstat(p)
		if err != nil {
			return err
		}
		if !fi.IsDir() && !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
			// Devices, FIFOs, sockets have no place in a workspace.
			c.skipped = append(c.skipped, fmt.Sprintf("%s (%s)", p, fileKind(fi.Mode())))
			return nil
		}
		if c.entries++; c.maxEntries > 0 && c.entries > c.maxEntries {
			return c.capErr(fmt.Sprintf("more than %d files and directories", c.maxEntries))
		}
		if fi.Mode().IsRegular() {
			if c.bytes += fi.Size(); c.maxBytes > 0 && c.bytes > c.maxBytes {
				return c.capErr(fmt.Sprintf("more than %d bytes", c.maxBytes))
			}
		}
		if err := clearFor(dst, p, fi.IsDir()); err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if err := dst.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			return nil
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := src.Readlink(p)
			if err != nil {
				return err
			}
			return dst.Symlink(target, p)
		default:
			return rootfs.CopyFile(src, dst, p, fi.Mode().Perm()&0o755)
		}
	})
	if err != nil {
		return err
	}
	for _, r := range repos {
		if err := dst.RemoveAll(path.Join(r, ".git")); err != nil { // the image's, under a template's
			return fmt.Errorf("repository %s: %w", r, err)
		}
		if err := headOnlyRepo(src, r, filepath.Join(ws, r)); err != nil {
			return fmt.Errorf("repository %s: %w", r, err)
		}
	}
	return nil
}

// clearFor removes what dst holds at p unless it is a real directory and a directory is to
// be made there: a link is removed, never followed.
func clearFor(dst *os.Root, p string, dir bool) error {
	fi, err := dst.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if dir {
			return nil
		}
		return dst.RemoveAll(p)
	}
	return dst.Remove(p)
}

// fileKind names a special file's type.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// headOnlyRepo gives ws a git repository holding the template's HEAD and its ancestors
// only: no other branch, tag, remote ref, reflog, stash or unreachable object, because
// agents mine `git log --all` for answers. The working tree stays as the template had it.
//
// Host git never runs over the template's .git: its HEAD, refs and objects are first copied,
// through the template's handle and following no link, into a private repository whose config
// ceval writes (so no alternates, commondir, hooks, fsmonitor, filters or any other setting of
// the task's is honoured), and only that copy is fetched from.
func headOnlyRepo(src *os.Root, repo, ws string) error {
	if _, err := exec.LookPath("git"); err != nil {
		return errors.New("template_dir is a git repository but git is not installed on the host (apt-get install git)")
	}
	tmp, err := tempdir.Make("", "ceval-git-")
	if err != nil {
		return err
	}
	defer tempdir.Remove(tmp)
	home, private := filepath.Join(tmp, "home"), filepath.Join(tmp, "template.git")
	if err := os.Mkdir(home, 0o700); err != nil {
		return err
	}
	branch, err := copyGitDir(src, path.Join(repo, ".git"), private)
	if err != nil {
		return err
	}
	run := func(args ...string) error {
		step := args[0]
		// No system, user or repository setting of anyone else's: the only repositories git
		// sees are ceval's private copy and the new one in ws, and neither runs hooks.
		args = append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
			"-c", "protocol.file.allow=always", "-c", "safe.directory=" + ws, "-c", "safe.directory=" + private}, args...)
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(ws),
			"GIT_AUTHOR_NAME=ceval", "GIT_AUTHOR_EMAIL=ceval@localhost", "GIT_COMMITTER_NAME=ceval", "GIT_COMMITTER_EMAIL=ceval@localhost"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s: %v: %s", step, err, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
	steps := [][]string{
		{"init", "-q", "--template=", "--initial-branch=" + branch, "."},
		{"fetch", "-q", "--update-head-ok", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", private, "+HEAD:refs/heads/" + branch},
		{"reset", "-q"},
		{"reflog", "expire", "--expire=all", "--all"},
		{"gc", "-q", "--prune=now"},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return err
		}
	}
	return os.RemoveAll(filepath.Join(ws, ".git", "logs"))
}
