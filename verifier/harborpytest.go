package verifier

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"ceval.dev/ceval/internal/tempdir"
)

// A harbor_reward criterion's tests/test.sh (Harbor's verifier, imported) runs pytest, which
// Harbor's own verifier fetches at test time (uvx --with pytest) and ceval's, offline, finds
// in the image's python3 only when the image installed it. When the image's python3 has no
// pytest, the importer's rewritten test.sh (importer/tbpreamble.go) runs ceval's own: Debian's
// python3-pytest 7.2.1 (the one the WASM tier runs: its packages, pinned by its dist-info),
// copied once per Executor (a grade, an experiment: lentPytest) into a directory bound
// read-only at HarborPytestPath of every criterion that may need it and named to the command
// by HarborPytestEnv. Its files are ceval's host user's, mode 0444 in 0555 directories, and
// the bind is read-only: no process of any container (root of its user namespace included,
// who maps to nobody there) can change them, so one criterion's tests cannot reach the next
// one's pytest; the copy is removed by Close (and, if ceval is killed, by ceval gc, as
// every ceval temporary directory). Only pure Python crosses:
// the interpreter is the image's python3, which appends the directory last to sys.path, after
// the image's own site directories, so the image's packages win where both have one (packaging,
// attrs); ceval's import guard (pythonHook) counts the directory as the image's, outside the
// workspace, so the agent's files cannot shadow pytest or what it imports.

// HarborPytestPath is where ceval's own pytest is mounted in a harbor_reward criterion's
// container; HarborPytestEnv names it to test.sh (unset when this host has none).
const (
	HarborPytestPath = "/ceval/pytest"
	HarborPytestEnv  = "CEVAL_PYTEST"
)

// hostDistPackages is where Debian's python3-pytest installs pytest and what it imports.
const hostDistPackages = "/usr/lib/python3/dist-packages"

// hostPytestPin is the dist-info of the python3-pytest ceval is tested with (the WASM tier's
// pin, wasm.pytestPin).
const hostPytestPin = "pytest-7.2.1.dist-info"

// hostPytestPackages are the top-level entries of dist-packages pytest 7.2 imports (the WASM
// tier's list, wasm.pytestPackages).
var hostPytestPackages = []string{"_pytest", "pytest", "py.py", "pluggy", "iniconfig", "packaging", "attr", "attrs", hostPytestPin}

// hostPytestBackports are what pytest 7.2 imports on a python3 older than 3.11 (Debian's
// python3-exceptiongroup and python3-tomli): copied when installed (scripts/containerd.sh
// install), else an image's python3 3.7 to 3.10 cannot import the lent pytest (test.sh says so).
var hostPytestBackports = []string{"exceptiongroup", "tomli"}

// maxHarborPytestBytes bounds the copy: the packages hold about 1.9 MB.
const maxHarborPytestBytes = 32 << 20

// errNoHostPytest says this host has no python3-pytest to lend.
var errNoHostPytest = fmt.Errorf("ceval's own pytest (Debian's python3-pytest 7.2.1 in %s) is not installed on this host: an image without pytest cannot run test.sh's pytest offline; install it with scripts/containerd.sh install (or apt-get install python3-pytest)", hostDistPackages)

// copyHostPytest copies pytest's packages from src (Debian's dist-packages) into dst, which
// it makes: regular files and directories only (no link is followed or copied, no
// __pycache__), files 0444 and directories 0555, at most max bytes.
func copyHostPytest(src, dst string, max int64) error {
	if fi, err := os.Lstat(filepath.Join(src, hostPytestPin)); err != nil || !fi.IsDir() {
		return errNoHostPytest
	}
	in, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("ceval's pytest: %w", err)
	}
	defer in.Close()
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("ceval's pytest: %w", err)
	}
	out, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("ceval's pytest: %w", err)
	}
	defer out.Close()
	var total int64
	var dirs []string
	names := slices.Clone(hostPytestPackages)
	for _, name := range hostPytestBackports {
		if fi, err := in.Lstat(name); err == nil && fi.IsDir() {
			names = append(names, name)
		}
	}
	for _, name := range names {
		err := fs.WalkDir(in.FS(), name, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch {
			case d.IsDir() && d.Name() == "__pycache__":
				return fs.SkipDir
			case d.IsDir():
				dirs = append(dirs, p)
				return out.Mkdir(p, 0o755)
			case !d.Type().IsRegular():
				return nil // links and anything else stay out
			}
			data, err := in.ReadFile(p)
			if err != nil {
				return err
			}
			if total += int64(len(data)); total > max {
				return fmt.Errorf("over %d bytes", max)
			}
			return out.WriteFile(p, data, 0o444)
		})
		if err != nil {
			return fmt.Errorf("ceval's pytest: %s: %w (is python3-pytest installed with its dependencies?)", name, err)
		}
	}
	// Read-only to everyone once full, deepest first.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := out.Chmod(dirs[i], 0o555); err != nil {
			return fmt.Errorf("ceval's pytest: %w", err)
		}
	}
	return os.Chmod(dst, 0o555)
}

// harborPytestEnv is the environment entry that names ceval's pytest to test.sh.
func harborPytestEnv() string { return HarborPytestEnv + "=" + HarborPytestPath }

// lentPytestCopy is an Executor's one copy of ceval's pytest: made by the first criterion
// that lends it, removed by Close.
type lentPytestCopy struct {
	root, dir string // the temporary directory (0711) and the copy in it
	err       error  // errNoHostPytest, kept: the host lends none
}

// lentPytest returns the Executor's read-only copy of ceval's pytest, making it on first use
// (a failed attempt other than errNoHostPytest is tried again by the next criterion).
// Copied per criterion it cost 12-67 ms each, with the image's own pytest too; an image's
// python3 imports the copy only when it has no pytest of its own, which only the container
// can tell (a .pth, a PYTHONPATH of the image's ENV), so every pytest criterion still gets
// the mount, never a copy of its own.
func (e *Executor) lentPytest() (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := &e.lent
	if l.dir != "" || errors.Is(l.err, errNoHostPytest) {
		return l.dir, l.err
	}
	root, err := tempdir.Make(e.opts.ScratchDir, "ceval-pytest-")
	if err != nil {
		return "", err
	}
	// Search-only for the containers' user namespaces, which resolve the bind source.
	if err := os.Chmod(root, 0o711); err != nil {
		tempdir.Remove(root)
		return "", err
	}
	dir := filepath.Join(root, "pytest")
	if l.err = copyHostPytest(hostDistPackages, dir, maxHarborPytestBytes); l.err != nil {
		tempdir.Remove(root)
		return "", l.err
	}
	l.root, l.dir = root, dir
	return dir, nil
}

// Close removes what the Executor keeps for its criteria (the lent pytest's copy). Call it
// once no Run is under way; an Executor may be used again after it (a new copy is made).
func (e *Executor) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lent.root != "" {
		tempdir.Remove(e.lent.root)
	}
	e.lent = lentPytestCopy{}
	return nil
}
