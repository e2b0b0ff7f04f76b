package verifier

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/sandbox/local"
)

// The Python start guard: every CPython of the image runs ceval's import guard at its start,
// however it is started. A .pth file and a sitecustomize reach only the starts that run site
// and honour PYTHONPATH, and a .pth can be copied only into a writable root: python3 -S (no
// site), and in an unprivileged verifier (harbor_reward, isolation: process, a rootless
// daemon, whose image root is read-only) -I, -E, env -i and a command's own PYTHONPATH, ran
// the workspace's packaging/ for the image's (issue 32 item 4). Every CPython, whatever its
// flags, environment, name (python, python3, python3.11), path (a shebang, env, a symlink,
// a venv's bin/python) or working directory, imports its standard library's encodings
// package first, before site and before the script's directory or the working directory
// joins sys.path: so ceval binds, read-only, over each CPython standard library's
// encodings/__init__.py in the image a copy of the image's own file with the guard
// appended (startGuard), and an empty file over that file's cached bytecode (CPython then
// compiles the source: a bytecode file that does not parse is ignored). The mounts need no
// writable root, so root and unprivileged verifiers, rootful and rootless daemons, get the
// same guard. The image is read once per Executor (pythonStdlibs).

// pyStdlib is one CPython standard library of an image: its container path, its
// encodings/__init__.py's bytes and the bytecode files cached for that file.
type pyStdlib struct {
	dir      string   // "/usr/lib/python3.11"
	encoding []byte   // encodings/__init__.py as the image has it
	pycs     []string // container paths of encodings/__pycache__/__init__.*.pyc
	// unguarded says why the guard cannot run in this interpreter (Python older than 3.6,
	// a python3N.zip ahead of the library); such an entry gets no mount, and every
	// criterion's details say so (unguardedNotes).
	unguarded string
	// bytecode is a library whose encodings package is bytecode only (the legacy layout,
	// encodings/__init__.pyc and no source): its files by name, bound over the image's
	// directory with a guarded __init__.py beside them that runs the image's __init__.pyc
	// (sourcelessStart).
	bytecode map[string][]byte
}

// Bounds of the search for an image's standard libraries.
const (
	maxStdlibSearchDirs  = 200000
	maxStdlibSearchDepth = 10
	maxEncodingsBytes    = 1 << 20
)

// stdlibName is a CPython 3 standard library directory's name: python3.N, python3.Nt.
var stdlibName = regexp.MustCompile(`^python3\.([0-9]+)t?$`)

// stdlibZipName is the zip archive a CPython 3 puts on sys.path ahead of its library
// directory (PREFIX/lib/python3N.zip), when it exists.
var stdlibZipName = regexp.MustCompile(`^python3[0-9]+t?\.zip$`)

// searchSkip are directories that hold no interpreter's standard library (or hold only
// the packages of one found already): not descended into anywhere in the image.
var searchSkip = map[string]bool{"site-packages": true, "dist-packages": true, "node_modules": true, ".git": true, "__pycache__": true}

// searchSkipTop are the image's top-level trees (and a few below) that hold none either.
var searchSkipTop = map[string]bool{"proc": true, "sys": true, "dev": true, "run": true, "tmp": true, "boot": true,
	"usr/share": true, "usr/include": true, "usr/src": true, "var/lib/apt": true, "var/lib/dpkg": true, "var/cache": true, "var/log": true}

// findStdlibs lists every CPython 3.6+ standard library in the image rooted at r: a
// directory python3.N (not a link) holding a regular encodings/__init__.py. Links are not
// followed (a lib64 -> lib link names a directory found by its real path). It fails, as the
// task's side, when the image is too big to search within the bounds: a library left out
// would be a start without the guard.
func findStdlibs(r *os.Root) ([]pyStdlib, error) {
	var out []pyStdlib
	seen := 0
	err := fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // an unreadable directory of the image: not searched
		}
		if !d.IsDir() {
			if stdlibZipName.MatchString(d.Name()) && d.Type().IsRegular() {
				out = append(out, pyStdlib{dir: "/" + p, unguarded: "a standard library archive, first on that CPython's sys.path, ahead of its library directory, which ceval cannot bind into"})
			}
			return nil
		}
		if p == "." {
			return nil
		}
		if searchSkipTop[p] || searchSkip[d.Name()] {
			return fs.SkipDir
		}
		if seen++; seen > maxStdlibSearchDirs {
			return fmt.Errorf("the image has over %d directories: ceval cannot find its Python interpreters to guard them", maxStdlibSearchDirs)
		}
		if strings.Count(p, "/") >= maxStdlibSearchDepth {
			return fs.SkipDir
		}
		m := stdlibName.FindStringSubmatch(d.Name())
		if m == nil {
			return nil
		}
		if minor, _ := strconv.Atoi(m[1]); minor < 6 {
			if fi, err := r.Lstat(path.Join(p, "encodings")); err == nil && fi.IsDir() {
				out = append(out, pyStdlib{dir: "/" + p, unguarded: "Python 3." + m[1] + ", older than the guard's 3.6"})
			}
			return fs.SkipDir
		}
		lib, err := stdlibAt(r, p)
		if err != nil {
			return err
		}
		if lib != nil {
			out = append(out, *lib)
		}
		return fs.SkipDir
	})
	return out, err
}

// stdlibAt reads the standard library at p of r, or nil when p holds no regular
// encodings/__init__.py.
func stdlibAt(r *os.Root, p string) (*pyStdlib, error) {
	init := path.Join(p, "encodings", "__init__.py")
	fi, err := r.Lstat(init)
	if err != nil || !fi.Mode().IsRegular() {
		if fi, err := r.Lstat(init + "c"); err == nil && fi.Mode().IsRegular() {
			return sourcelessAt(r, p)
		}
		return nil, nil
	}
	f, err := r.Open(init)
	if err != nil {
		return nil, fmt.Errorf("the image's %s: %w", "/"+init, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEncodingsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("the image's %s: %w", "/"+init, err)
	}
	if len(data) > maxEncodingsBytes {
		return nil, fmt.Errorf("the image's %s is over %d bytes", "/"+init, maxEncodingsBytes)
	}
	lib := &pyStdlib{dir: "/" + p, encoding: data}
	if entries, err := fs.ReadDir(r.FS(), path.Join(p, "encodings", "__pycache__")); err == nil {
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasPrefix(e.Name(), "__init__.") && strings.HasSuffix(e.Name(), ".pyc") {
				lib.pycs = append(lib.pycs, "/"+path.Join(p, "encodings", "__pycache__", e.Name()))
			}
		}
	}
	return lib, nil
}

// pythonStdlibs is findStdlibs of img, read once per Executor and image.
func (e *Executor) pythonStdlibs(ctx context.Context, img images.Image) ([]pyStdlib, error) {
	key := img.Name + "@" + string(img.ManifestDigest) + "/" + string(img.ConfigDigest)
	e.mu.Lock()
	libs, ok := e.stdlibs[key]
	e.mu.Unlock()
	if ok {
		return libs, nil
	}
	err := local.WithImageRoot(ctx, e.opts.Client, img.Name, func(r *os.Root) error {
		var err error
		libs, err = findStdlibs(r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("verifier: the Python start guard: %w", err)
	}
	e.mu.Lock()
	e.stdlibs[key] = libs
	e.mu.Unlock()
	return libs, nil
}

// pythonStartMounts writes into dir, for each of libs, the guarded encodings/__init__.py
// for a container whose agent-written paths are agentDirs, and an empty file, and returns
// the read-only binds over the image's files.
func pythonStartMounts(dir string, libs []pyStdlib, agentDirs []string) ([]oci.Mount, error) {
	if len(libs) == 0 {
		return nil, nil
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o444); err != nil {
		return nil, err
	}
	guard := startGuard(agentDirs)
	var mounts []oci.Mount
	for i, lib := range libs {
		if lib.unguarded != "" {
			continue
		}
		if lib.bytecode != nil {
			m, err := sourcelessMount(filepath.Join(dir, fmt.Sprintf("encodings-%d", i)), lib, guard)
			if err != nil {
				return nil, err
			}
			mounts = append(mounts, m)
			continue
		}
		src := filepath.Join(dir, fmt.Sprintf("encodings-%d.py", i))
		text := append([]byte(nil), lib.encoding...)
		if len(text) > 0 && text[len(text)-1] != '\n' {
			text = append(text, '\n')
		}
		text = append(text, guard...)
		if err := os.WriteFile(src, text, 0o444); err != nil {
			return nil, err
		}
		mounts = append(mounts, oci.Mount{Source: src, Destination: lib.dir + "/encodings/__init__.py"})
		for _, pyc := range lib.pycs {
			mounts = append(mounts, oci.Mount{Source: empty, Destination: pyc})
		}
	}
	return mounts, nil
}

// startGuard is the Python ceval appends to an image's encodings/__init__.py. It runs in
// every start of that CPython before site and before the script's or the working directory
// joins sys.path (only PYTHONPATH's entries and the interpreter's own are there then):
//   - a venv in the agent's paths (/workspace/.venv/bin/python) is not one for site: its
//     pyvenv.cfg would make its site-packages a site directory whose .pth files run the
//     agent's code before any guard; its site-packages joins sys.path as a plain entry
//     instead (its modules import, its .pth files do not run), and sys.executable is the
//     base interpreter's;
//   - a user site in the agent's paths (PYTHONUSERBASE, or a HOME there) is none;
//   - then importGuard, the one copy of the guard the pytest boots and sitecustomize run.
func startGuard(agentDirs []string) string {
	return `
# ceval: the import guard, appended to the image's own file so that every start of this
# interpreter runs it (-S, -I, -E, env -i, any PYTHONPATH, a venv, a shebang).
def cevalAgentStart(agent):
    import sys, os
    def mine(p):
        if not isinstance(p, str) or not p:
            return False
        p = os.path.normpath(os.path.abspath(p))
        return any(p == a or p.startswith(a + "/") for a in agent)
    exe = sys.executable
    if exe and mine(exe):
        bindir = os.path.dirname(os.path.abspath(exe))
        for home in (bindir, os.path.dirname(bindir)):
            if not os.path.isfile(os.path.join(home, "pyvenv.cfg")):
                continue
            if home == bindir:
                home = os.path.dirname(bindir)
            base = getattr(sys, "_base_executable", "")
            if not base or mine(base):
                base = os.path.realpath(exe)
            if mine(base):
                base = "/nonexistent/ceval-agent-interpreter"
            sys.executable = base
            if hasattr(sys, "_base_executable"):
                sys._base_executable = base
            lib = os.path.join(home, "lib")
            try:
                versions = sorted(os.listdir(lib))
            except OSError:
                versions = []
            for v in versions:
                sp = os.path.join(lib, v, "site-packages")
                if v.startswith("python") and os.path.isdir(sp):
                    sys.path.append(sp)
            break
    for a in ("prefix", "exec_prefix"):
        if mine(getattr(sys, a, "")):
            setattr(sys, a, getattr(sys, "base_" + a, "/nonexistent"))
    ub = os.environ.get("PYTHONUSERBASE") or os.path.join(os.environ.get("HOME") or "/nonexistent", ".local")
    if mine(ub):
        os.environ["PYTHONUSERBASE"] = "/nonexistent/ceval-no-user-site"
cevalAgentStart(` + jsonList(agentDirs) + `)
del cevalAgentStart
` + importGuard(agentDirs)
}

// unguardedNotes are the details' notes for the image's interpreters the guard cannot run
// in: their starts import a name the image provides from wherever their sys.path says,
// the workspace included (docs/security.md says which these are).
func unguardedNotes(libs []pyStdlib) []string {
	var notes []string
	for _, l := range libs {
		if l.unguarded != "" {
			notes = append(notes, fmt.Sprintf("the image's CPython at %s is not covered by ceval's Python start guard (%s): a start of it may import the agent's files for the image's modules; run the image's guarded python3 instead", l.dir, l.unguarded))
		}
	}
	return notes
}

// maxSourcelessBytes bounds what ceval copies of a bytecode-only encodings package.
const maxSourcelessBytes = 8 << 20

// sourcelessAt reads the bytecode-only encodings package of the library at p: its regular
// files (the __init__.pyc and its codec modules); a subdirectory or a link is not copied.
func sourcelessAt(r *os.Root, p string) (*pyStdlib, error) {
	dir := path.Join(p, "encodings")
	entries, err := fs.ReadDir(r.FS(), dir)
	if err != nil {
		return nil, fmt.Errorf("the image's %s: %w", "/"+dir, err)
	}
	lib := &pyStdlib{dir: "/" + p, bytecode: map[string][]byte{}}
	total := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "__init__.py" {
			continue
		}
		data, err := r.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("the image's %s: %w", "/"+path.Join(dir, e.Name()), err)
		}
		if total += len(data); total > maxSourcelessBytes {
			return nil, fmt.Errorf("the image's %s holds over %d bytes: ceval cannot guard its CPython", "/"+dir, maxSourcelessBytes)
		}
		lib.bytecode[e.Name()] = data
	}
	return lib, nil
}

// sourcelessStart is the __init__.py ceval puts beside a bytecode-only encodings package's
// files: it runs the image's own __init__.pyc in the package's namespace (CPython prefers
// a source file to bytecode in one directory), then the guard. Only builtin modules are
// imported: nothing else can be imported yet while CPython starts.
const sourcelessStart = `# ceval: this CPython keeps its encodings package as bytecode only. Run the image's own
# __init__.pyc (copied beside this file), then ceval's import guard.
def cevalImageInit():
    import _io, marshal, sys
    f = _io.open(__file__ + "c", "rb")
    try:
        data = f.read()
    finally:
        f.close()
    return marshal.loads(data[16 if sys.version_info >= (3, 7) else 12:])
exec(cevalImageInit(), globals())
del cevalImageInit
`

// sourcelessMount writes into dir the image's bytecode-only encodings package with a
// guarded __init__.py, read-only, and returns its bind over the image's directory.
func sourcelessMount(dir string, lib pyStdlib, guard string) (oci.Mount, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return oci.Mount{}, err
	}
	for name, data := range lib.bytecode {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o444); err != nil {
			return oci.Mount{}, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "__init__.py"), []byte(sourcelessStart+guard), 0o444); err != nil {
		return oci.Mount{}, err
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		return oci.Mount{}, err
	}
	return oci.Mount{Source: dir, Destination: lib.dir + "/encodings"}, nil
}
