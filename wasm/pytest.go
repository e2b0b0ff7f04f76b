package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

// Pytest runs in CPython from Debian's python3-pytest (pure Python, pinned by the version
// apt installed and checked here), mounted read-only at /ceval with only the packages it
// imports. Nothing in the workspace can steer the run (see pytestArgs here and pytestBoot in wasm/worker):
// the interpreter runs isolated (-I: no PYTHON* variables, no user site, no script or cwd
// on sys.path) without site (-S: no sitecustomize, usercustomize or .pth files), pytest
// and its dependencies are imported from /ceval before the workspace is appended (last) to
// sys.path, the ini file is ceval's own (-c), conftest files are looked for under /task
// only (--rootdir, --confcutdir; the tests live there), plugin entry points are never
// loaded (PYTEST_DISABLE_PLUGIN_AUTOLOAD), and no cache is written.

// DebianDistPackages is where Debian installs pure-Python packages.
const DebianDistPackages = "/usr/lib/python3/dist-packages"

// pytestPin is the python3-pytest version ceval is tested with; its dist-info names it.
const pytestPin = "pytest-7.2.1.dist-info"

// pytestPackages are the top-level entries of dist-packages that pytest 7.2 imports.
var pytestPackages = []string{"_pytest", "pytest", "py.py", "pluggy", "iniconfig", "packaging", "attr", "attrs", pytestPin}

// Paths the pytest run uses inside the sandbox.
const (
	pytestJUnit   = "/tmp/.ceval-junit.xml"
	pytestLogFile = "/tmp/.ceval-pytest.log"
)

// pytestArgs is pytest's argv for a pytest criterion; the worker runs it through its boot
// (wire.RunRequest.Pytest).
func pytestArgs(c *task.PytestSpec) []string {
	args := []string{"-p", "no:cacheprovider", "-p", "no:faulthandler", "--capture=sys",
		"-c", wire.PytestLibDir + "/pytest.ini", "--rootdir=/task", "--confcutdir=/task",
		"-o", "log_file=" + pytestLogFile, "--junitxml=" + pytestJUnit,
		"-W", "ignore::DeprecationWarning", "-q"}
	args = append(args, c.Args...)
	return append(args, "/task/"+c.Tests.Rel)
}

// executePytest runs a pytest criterion and scores it from the exit status and the JUnit
// report, which ceval parses (grader.ScorePytest).
func (e *Executor) executePytest(ctx context.Context, c *task.PytestSpec, s *snapshot.Snapshot) (*wire.RunReply, grader.Scored, error) {
	if c.Tests == nil {
		return nil, grader.Scored{}, errors.New("wasm: pytest criterion without tests")
	}
	if e.opts.Python == nil {
		return nil, grader.Scored{}, errors.New("wasm: pytest criteria need CPython, but this ceval was set up without it (wasm.Options.Python)")
	}
	py, err := e.python(ctx)
	if err != nil {
		return nil, grader.Scored{}, fmt.Errorf("wasm: %w", err)
	}
	if viewBytes(s) > e.opts.MaxViewBytes {
		return nil, grader.Scored{Details: fmt.Sprintf("the workspace snapshot (with its outputs) holds %s of files, over the %s the sandbox takes; not run", human(viewBytes(s)), human(e.opts.MaxViewBytes))}, nil
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = task.DefaultCheckTimeout
	}
	req := &wire.RunRequest{
		Digest:      py.digest,
		Args:        pytestArgs(c),
		Env:         []string{"HOME=/tmp", "TMPDIR=/tmp", "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1", "PYTHONDONTWRITEBYTECODE=1"},
		Timeout:     timeout,
		MemoryLimit: uint64(e.opts.MemoryLimit),
		MaxStdout:   e.opts.MaxOutput,
		MaxStderr:   e.opts.MaxOutput,
		MaxTmpBytes: e.opts.MaxTmpBytes,
		CloseOnDone: e.checked(py),
		PyLib:       true,
		Pytest:      true,
		Collect:     []string{pytestJUnit},
	}
	if err := e.prepare(ctx, py, s, false, nil); err != nil {
		return nil, grader.Scored{}, err
	}
	if err := e.prepareTask(ctx, c.GraderFiles, req); err != nil {
		return nil, grader.Scored{}, err
	}
	if err := e.preparePytestLib(ctx); err != nil {
		return nil, grader.Scored{}, err
	}
	if err := e.preparePackages(ctx, &c.Execution, req); err != nil {
		return nil, grader.Scored{}, err
	}
	r, details, err := e.run(ctx, req)
	if r == nil {
		return nil, grader.Scored{Details: details}, err
	}
	if r.Limit != "" || r.Trap != "" {
		sc, err := score(&task.Criterion{Type: task.RunCommand}, r, e.opts, timeout)
		return r, sc, err
	}
	sc, details := grader.ScorePytest(int(r.ExitCode), r.Files[pytestJUnit], c.AllOrNothing)
	if sc == 0 && r.ExitCode > 1 {
		details += "; output " + tail(append(append([]byte{}, r.Stdout...), r.Stderr...))
	}
	return r, grader.Scored{Score: sc, Details: details}, nil
}

// preparePytestLib loads pytest's packages as the worker's /ceval unless it holds them.
func (e *Executor) preparePytestLib(ctx context.Context) error {
	if e.w.pylib {
		return nil
	}
	send := func(w io.Writer) error { return sendPytestLib(w, DebianDistPackages, e.opts.MaxViewBytes) }
	if err := e.loadView(ctx, "pytest packages", send); err != nil {
		return err
	}
	e.w.pylib = true
	return nil
}

// checkPytestInstalled fails, saying how to fix it, unless Debian's pinned python3-pytest
// is installed in dir.
func checkPytestInstalled(dir string) error {
	if _, err := os.Stat(dir + "/" + pytestPin); err != nil {
		return fmt.Errorf("pytest criteria run Debian's python3-pytest 7.2.1 from %s, which lacks %s: run `scripts/containerd.sh install` (or `apt-get install python3-pytest`)", dir, pytestPin)
	}
	return nil
}

// sendPytestLib streams pytest's packages from dir (Debian's dist-packages) as the pylib
// view, plus ceval's own empty pytest.ini. The walk follows no link out of dir.
func sendPytestLib(w io.Writer, dir string, maxBytes int64) error {
	if err := checkPytestInstalled(dir); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("pytest packages: %w", err)
	}
	defer root.Close()
	if err := wire.WriteJSON(w, wire.OpViewBegin, wire.ViewBegin{Slot: wire.SlotPyLib}); err != nil {
		return err
	}
	r := referenceWalk{root: root, w: w, maxBytes: maxBytes}
	for _, name := range pytestPackages {
		fi, err := root.Lstat(name)
		if err != nil {
			return fmt.Errorf("pytest packages: %w (is python3-pytest installed with its dependencies?)", err)
		}
		switch {
		case fi.IsDir():
			if err := wire.WriteFrame(w, wire.OpDir, []byte(name)); err != nil {
				return err
			}
			err = r.walk(name)
		case fi.Mode().IsRegular():
			data, mode, rerr := r.readFile(name)
			if err = rerr; err == nil {
				err = writeFile(w, name, mode, data)
			}
		default:
			err = fmt.Errorf("%s/%s is neither a file nor a directory", dir, name)
		}
		if err != nil {
			return fmt.Errorf("pytest packages: %w", err)
		}
	}
	if err := writeFile(w, "pytest.ini", 0o444, []byte("[pytest]\n")); err != nil {
		return err
	}
	return wire.WriteFrame(w, wire.OpViewEnd)
}
