package verifier

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"ceval.dev/ceval/task"
)

// A pytest criterion in a verifier container runs the image's own pytest (packages:
// [python3-pytest], or pip) with the WASM tier's rules against a hijack by the workspace:
// the interpreter runs isolated (-I: no PYTHON* variables, no user site with its
// usercustomize, neither the script's directory nor the working directory on sys.path, so
// no sitecustomize, pytest.py, _pytest/ or stdlib shadow of the workspace is importable
// while pytest loads; .pth files count only in the image's own site directories); pytest
// and its plugins are imported before the workspace is appended, last, to sys.path; the
// ini file is none of the workspace's (-c /dev/null, --rootdir and --confcutdir at /task,
// where the tests are, so no conftest.py of the workspace is collected); no plugin entry
// point of any installed distribution loads (PYTEST_DISABLE_PLUGIN_AUTOLOAD); no cache.
// The tests live under /task, outside the workspace, so pytest never looks for an ini file
// or a conftest.py there even without -c and --confcutdir: those two are a second wall.

// importGuard is the Python that makes every top-level name the image provides (a standard
// module, or a NAME/, NAME.py or extension module in a directory on sys.path when it runs,
// other than the agent's: the image's stdlib and site directories, and PYTHONPATH's) import
// from sys.path without the agent's directories, in the order sys.path then has (so the
// task's test directories, which pytest puts first, still come first). agentDirs are the
// container paths the agent wrote (/workspace, the task's outputs); a relative entry ("" for
// python3 -c, the working directory) counts as the agent's too. Only the path finder is
// given that path: CPython 3.11's builtin and frozen importers answer nothing when given one.
// Without it a test that put the workspace first on sys.path to import the agent's code (a
// common pattern) got the workspace's colorsys.py, or any package of the image's that pytest
// had not imported yet, in place of the image's (issue 32;
// TestVerifierPytestWorkspaceCannotShadowAnImageModule), and a run_command's python3 -c run
// from /workspace its packaging/ (TestVerifierRunCommandWorkspaceCannotShadowAnImagePackage).
// Any other name imports as usual. It is the one copy: the pytest boots run it first, and
// every other python3 of a run_command runs it from ceval's sitecustomize (pythonHook).
func importGuard(agentDirs []string) string {
	return `def cevalImportGuard(agent):
    import sys, os
    # CPython's own path finder, as sys.meta_path holds it: no import (the guard also runs
    # inside the encodings package, while CPython starts).
    PathFinder = next((f for f in sys.meta_path if getattr(f, "__name__", "") == "PathFinder"), None)
    if PathFinder is None:
        from importlib.machinery import PathFinder
    def outside(p):
        if not isinstance(p, str) or not p or not os.path.isabs(p):
            return False
        p = os.path.normpath(p)
        return not any(p == a or p.startswith(a + "/") for a in agent)
    if any(getattr(f, "cevalImportGuard", False) for f in sys.meta_path):
        return
    names = set(getattr(sys, "stdlib_module_names", ())) | {"sitecustomize", "usercustomize"}
    scanned = set()
    def scan():
        for d in sys.path:
            if not outside(d) or d in scanned:
                continue
            scanned.add(d)
            try:
                with os.scandir(d) as entries:
                    for e in entries:
                        n, dot, ext = e.name.partition(".")
                        if (dot and (ext == "py" or ext.endswith("so"))) or (not dot and e.is_dir()):
                            if n.isidentifier() and n != "__pycache__":
                                names.add(n)
            except OSError:
                pass
    scan()
    finders = tuple(sys.meta_path)
    class CevalImportGuard:
        cevalImportGuard = True
        @staticmethod
        def find_spec(name, path=None, target=None):
            if path is not None:
                return None
            scan()
            if name not in names:
                return None
            search = [p for p in sys.path if outside(p)]
            for finder in finders:
                spec = finder.find_spec(name, search if finder is PathFinder else None)
                if spec is not None:
                    return spec
            raise ModuleNotFoundError("No module named %r (the image provides it outside the workspace)" % name, name=name)
        @staticmethod
        def invalidate_caches():
            pass
    sys.meta_path.insert(0, CevalImportGuard)
cevalImportGuard(` + jsonList(agentDirs) + `)
del cevalImportGuard
`
}

// pythonHookPath is the read-only directory ceval mounts into a run_command's verifier
// container and puts first on PYTHONPATH: its sitecustomize.py (pythonHook) runs the import
// guard in every python3 that honours PYTHONPATH, before the working directory or the
// script's directory joins sys.path, then the image's own sitecustomize, if any.
const pythonHookPath = "/ceval/python"

// pythonHook is pythonHookPath's sitecustomize.py for a container whose agent-written paths
// are agentDirs. Python 3.6 or later only (os.scandir as a context manager); an older
// python3 or a python2 that reads it does nothing.
func pythonHook(agentDirs []string) string {
	return `import sys
if sys.version_info >= (3, 6):
` + indent(importGuard(agentDirs)) + `
    def cevalChain(agent):
        # The image's own sitecustomize, found outside this directory and the agent's.
        import os, importlib.util
        from importlib.machinery import PathFinder
        here = os.path.dirname(os.path.abspath(__file__))
        def ok(p):
            if not isinstance(p, str) or not p or not os.path.isabs(p):
                return False
            p = os.path.normpath(p)
            return p != here and not any(p == a or p.startswith(a + "/") for a in agent)
        spec = PathFinder.find_spec("sitecustomize", [p for p in sys.path if ok(p)])
        if spec is not None and spec.loader is not None:
            m = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = m
            spec.loader.exec_module(m)
    cevalChain(` + jsonList(agentDirs) + `)
    del cevalChain
`
}

// jsonList is s as a JSON list, which for strings is a Python literal too.
func jsonList(s []string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// indent indents every non-empty line of s by four spaces.
func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "\n")
}

// pythonHookPth is the .pth ceval copies into every site directory of the image it can write
// (pythonHookArgv): site runs it under -I and -E and whatever PYTHONPATH says, before it
// imports sitecustomize, so the guard holds for those starts too. It runs guard.py by its
// path: no import a PYTHONPATH of the workspace could answer.
const pythonHookPth = "import sys; exec(compile(open('" + pythonHookPath + "/guard.py').read(), '" + pythonHookPath + "/guard.py', 'exec')) if sys.version_info >= (3, 6) else None\n"

// pythonHookPthName sorts before the site directories' other .pth files (setuptools'
// distutils-precedence.pth imports a module by name).
const pythonHookPthName = "00-ceval-guard.pth"

// writePythonHook makes dir, pythonHookPath's source: world-readable, not writable in the
// container (a read-only bind).
func writePythonHook(dir string, agentDirs []string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for name, text := range map[string]string{
		"sitecustomize.py": pythonHook(agentDirs),
		"guard.py":         importGuard(agentDirs),
		pythonHookPthName:  pythonHookPth,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o444); err != nil {
			return err
		}
	}
	return nil
}

// pythonSiteDirs are where images keep their site directories (Debian's python3, the python
// images' /usr/local, Fedora's lib64, a venv or conda under /opt).
const pythonSiteDirs = "/usr/lib/python3*/site-packages /usr/lib/python3*/dist-packages /usr/local/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages /usr/lib64/python3*/site-packages /opt/*/lib/python3*/site-packages"

// pythonHookArgv runs command as /bin/sh -c would, after copying pythonHookPth into every
// site directory of the image it can write (a root verifier's writable copy of the image's
// root; the unprivileged verifier's root is read-only). Both this .pth and the PYTHONPATH
// sitecustomize are a second wall now: the start guard (pystart.go) reaches every start of
// every CPython of the image, in either verifier.
func pythonHookArgv(command string) []string {
	return []string{"/bin/sh", "-c", `for d in ` + pythonSiteDirs + `; do [ -d "$d" ] && [ -w "$d" ] && cp ` + pythonHookPath + "/" + pythonHookPthName + ` "$d/"; done 2>/dev/null; exec /bin/sh -c "$1"`, "/bin/sh", command}
}

// pytestBoot imports pytest fully before the workspace joins sys.path, then runs it there.
var pytestBoot = `import sys, os
` + importGuard([]string{"/workspace"}) + lentPytestImport(plainPytestWho) + `import pytest, _pytest, pluggy
import _pytest.config, _pytest.main, _pytest.junitxml, _pytest.runner, _pytest.reports, _pytest.python
sys.path.append("/workspace")
import os
os.chdir("/workspace")
sys.argv[0] = "pytest"
sys.exit(pytest.main(sys.argv[1:]))
`

// pytestReportDir is where pytest writes its JUnit report, in the workspace copy (capped
// like it); ceval removes whatever the snapshot had there before the container starts and
// reads the report only after every process of the container is gone.
const pytestReportDir = ".ceval-pytest"

// maxReportBytes bounds the JUnit report read back.
const maxReportBytes = 8 << 20

// pytestArgv is the container's argv for a pytest criterion.
func pytestArgv(c *task.PytestSpec) []string {
	argv := []string{"python3", "-I", "-B", "-c", pytestBoot,
		"-p", "no:cacheprovider", "-c", "/dev/null", "--rootdir=" + GraderFilesPath, "--confcutdir=" + GraderFilesPath,
		"--junitxml=/workspace/" + pytestReportDir + "/junit.xml", "-q"}
	argv = append(argv, c.Args...)
	return append(argv, GraderFilesPath+"/"+c.Tests.Rel)
}

// pytestEnv is the pytest run's environment (HOME, USER and PATH come from the spec).
var pytestEnv = []string{"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1", "TMPDIR=/tmp", "HOME=/tmp"}

// readReport reads the JUnit report from the workspace copy through a handle on it: no
// link is followed out of the workspace, and only a regular file under the bound is read.
func readReport(workspace string) ([]byte, error) {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(pytestReportDir+"/junit.xml", os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pytest's report: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("pytest's report is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxReportBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxReportBytes {
		return nil, fmt.Errorf("pytest's report is over %d bytes", maxReportBytes)
	}
	return data, nil
}
