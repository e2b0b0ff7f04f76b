package wasm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/task"

	"ceval.dev/ceval/wasm/wire"
)

// pytestTask writes a task directory with tests/test_solution.py: 20 tests of the agent's
// solution.add, of which a solution that adds wrongly for odd a fails 10.
func pytestTask(t testing.TB) (string, *task.Criterion) {
	t.Helper()
	if err := checkPytestInstalled(DebianDistPackages); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	tests := `import pytest
import solution

@pytest.mark.parametrize("a", range(20))
def test_add(a):
    assert solution.add(a, 1) == a + 1
`
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests", "test_solution.py"), []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := task.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	tests_ := &task.GraderFile{Root: root, Rel: "tests", Dir: true}
	c := &task.Criterion{Type: task.Pytest, Spec: &task.PytestSpec{Tests: tests_, Execution: task.Execution{GraderFiles: []task.GraderFile{*tests_}, Timeout: 120 * time.Second}}}
	return dir, c
}

const (
	goodSolution = "def add(a, b):\n    return a + b\n"
	badSolution  = "def add(a, b):\n    return a + b + (a % 2)\n"
)

func TestPytestScoresPassedOverCollected(t *testing.T) {
	_, c := pytestTask(t)
	e := pyExecutor(t, Options{})
	for _, tc := range []struct {
		name, solution string
		allOrNothing   bool
		want           float64
	}{
		{"good", goodSolution, false, 1},
		{"half", badSolution, false, 0.5},
		{"half all or nothing", badSolution, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := *c.Spec.(*task.PytestSpec) // a copy: c's stays as it was
			ps.AllOrNothing = tc.allOrNothing
			cc := *c
			cc.Spec = &ps
			s := workspace(t, map[string]string{"solution.py": tc.solution}, nil)
			r, score, details := runScript(t, e, &cc, s, nil)
			if score != tc.want {
				t.Errorf("score %v, want %v; details %s; stdout %.2000s; stderr %.2000s", score, tc.want, details, r.Stdout, r.Stderr)
			}
			if tc.want == 0.5 && !strings.Contains(details, "10/20 passed") {
				t.Errorf("details %q lack the counts", details)
			}
		})
	}
}

// forcePass is a pytest hook implementation that would turn every failure into a pass.
const forcePass = `import pytest
print("PWNED")
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    rep.outcome = "passed"
`

// TestPytestWorkspaceCannotHijackTheRun plants, one at a time, every way a workspace could
// steer pytest into passing a half-wrong solution; none may change the score of 0.5.
func TestPytestWorkspaceCannotHijackTheRun(t *testing.T) {
	_, c := pytestTask(t)
	e := pyExecutor(t, Options{})
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"conftest forcing every test to pass", map[string]string{"conftest.py": forcePass}},
		{"conftest in a subdirectory", map[string]string{"tests/conftest.py": forcePass, "tests/__init__.py": ""}},
		{"pytest.ini addopts", map[string]string{"pytest.ini": "[pytest]\naddopts = -p forcepass\n", "forcepass.py": forcePass}},
		{"tox.ini", map[string]string{"tox.ini": "[pytest]\naddopts = -p forcepass\n", "forcepass.py": forcePass}},
		{"setup.cfg", map[string]string{"setup.cfg": "[tool:pytest]\naddopts = -p forcepass\n", "forcepass.py": forcePass}},
		{"pyproject.toml", map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-p forcepass\"\n", "forcepass.py": forcePass}},
		{"sitecustomize", map[string]string{"sitecustomize.py": "print('PWNED')\nimport forcepass\n", "forcepass.py": forcePass}},
		{"usercustomize", map[string]string{"usercustomize.py": "print('PWNED')\n"}},
		{"pth file", map[string]string{"evil.pth": "import os; print('PWNED')\n"}},
		{"pytest.py shadow", map[string]string{"pytest.py": "print('PWNED')\nimport sys; sys.exit(0)\n"}},
		{"_pytest shadow package", map[string]string{"_pytest/__init__.py": "print('PWNED')\n", "_pytest/runner.py": "print('PWNED')\n"}},
		{"pluggy shadow", map[string]string{"pluggy/__init__.py": "print('PWNED')\n"}},
		{"stdlib shadow", map[string]string{"json.py": "print('PWNED')\n", "xml/__init__.py": "print('PWNED')\n"}},
		{"plugin entry point", map[string]string{
			"forcepass-1.0.dist-info/METADATA":         "Metadata-Version: 2.1\nName: forcepass\nVersion: 1.0\n",
			"forcepass-1.0.dist-info/entry_points.txt": "[pytest11]\nforcepass = forcepass\n",
			"forcepass.py": forcePass,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"solution.py": badSolution}
			for k, v := range tc.files {
				files[k] = v
			}
			s := workspace(t, files, nil)
			r, score, details := runScript(t, e, c, s, nil)
			if score != 0.5 || strings.Contains(string(r.Stdout)+string(r.Stderr), "PWNED") {
				t.Errorf("score %v, want 0.5; details %s; stdout %.3000s; stderr %.2000s", score, details, r.Stdout, r.Stderr)
			}
		})
	}
}

// TestPytestConftestOfTheTaskIsHonoured is the control for the conftest attacks: the same
// hook, shipped by the task in its tests directory, does turn every failure into a pass, so
// the workspace's copy leaving the score alone means it was never loaded.
func TestPytestConftestOfTheTaskIsHonoured(t *testing.T) {
	dir, c := pytestTask(t)
	if err := os.WriteFile(filepath.Join(dir, "tests", "conftest.py"), []byte(strings.Replace(forcePass, `print("PWNED")`, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{"solution.py": badSolution}, nil)
	if _, score, details := runScript(t, e, c, s, nil); score != 1 {
		t.Errorf("score %v with the task's own force-pass conftest, want 1 (details %s)", score, details)
	}
}

// TestPytestImportsTheTaskWheels: a test of the task imports a module from its python_wheels.
func TestPytestImportsTheTaskWheels(t *testing.T) {
	dir, c := pytestTask(t)
	if err := os.WriteFile(filepath.Join(dir, "tests", "test_wheel.py"), []byte("import wheelmod\n\ndef test_wheel():\n    assert wheelmod.X == 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Execution().PythonWheels = []*task.Wheel{testWheel(t)}
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{"solution.py": goodSolution}, nil)
	if _, score, details := runScript(t, e, c, s, nil); score != 1 || !strings.Contains(details, "21/21 passed") {
		t.Errorf("score %v, want 1 with 21 tests (details %s)", score, details)
	}
}

// A worker's first pytest run compiles pytest's packages to bytecode before the run's timer
// starts (20-35 s at load 6-10). ceval used to wait only the run's timeout plus runGrace,
// killed the worker mid-compile on a loaded machine and scored a correct solution 0. Here
// runGrace is 1 ms and the timeout 1 ms, so that any compile outlasts them: the run must
// still be answered, by the sandbox's own timeout.
func TestFirstPytestRunIsNotKilledWhileItsPackagesCompile(t *testing.T) {
	_, c := pytestTask(t)
	forgetPytestBytecode(t) // else the worker takes it from the cache and compiles nothing
	c.Execution().Timeout = time.Millisecond
	old := runGrace
	runGrace = time.Millisecond
	t.Cleanup(func() { runGrace = old })
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{"solution.py": goodSolution}, nil)
	r, score, details, err := replyParts(e.execute(context.Background(), c, s, nil))
	if err != nil {
		t.Fatal(err)
	}
	if r == nil || r.Limit != wire.LimitTimeout || score != 0 || r.PyLib != wire.BytecodeCompiled {
		t.Fatalf("reply %v, score %v, details %q, pytest's bytecode %q: want the sandbox's own timeout after a compile, not a killed worker", r != nil, score, details, pyLib(r))
	}
}

// pytest's packages are compiled to bytecode once, not once per worker: a new worker (each
// grading has one, and a limit that ends a worker leaves another) takes it from the cache;
// a cache file that no longer matches its sha256 is ignored and compiled again.
func TestPytestBytecodeIsCompiledOnceAcrossWorkers(t *testing.T) {
	_, c := pytestTask(t)
	s := workspace(t, map[string]string{"solution.py": goodSolution}, nil)
	forgetPytestBytecode(t) // another test of this process may have kept it
	grade := func(want string) {
		t.Helper()
		e := pyExecutor(t, Options{})
		defer e.Close()
		r, score, details, err := replyParts(e.execute(context.Background(), c, s, nil))
		if err != nil || r == nil || score != 1 || r.PyLib != want {
			t.Fatalf("score %v, details %q, err %v, pytest's bytecode %q: want %q", score, details, err, pyLib(r), want)
		}
	}
	grade(wire.BytecodeCompiled)
	grade(wire.BytecodeFromCache)
	files := keptPytestBytecode()
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff
	if err := os.WriteFile(files[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	grade(wire.BytecodeCompiled)
	grade(wire.BytecodeFromCache)
}

// keptPytestBytecode lists the pytest bytecode files of the tests' cache.
func keptPytestBytecode() []string {
	files, _ := filepath.Glob(filepath.Join(testCache, "worker-*", "pytest-pyc-*"))
	return files
}

// forgetPytestBytecode removes them, so that the next worker compiles.
func forgetPytestBytecode(t *testing.T) {
	t.Helper()
	for _, f := range keptPytestBytecode() {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
}

func pyLib(r *wire.RunReply) string {
	if r == nil {
		return "(no reply)"
	}
	return r.PyLib
}

// TestPytestStartShortcutsAreInvisibleToTheTests: what makes pytest start faster in the
// sandbox (compile() and re answered from what the worker's one-off run recorded,
// importlib.metadata loaded on first use, pytest's own packages compiled with annotations
// as strings) must not show in the tests' world: the builtin compile is back, metadata
// works when used, the task's own code keeps evaluated annotations, and patterns compile.
// It also checks that the recording exists and that pytest's bytecode is ceval's.
func TestPytestStartShortcutsAreInvisibleToTheTests(t *testing.T) {
	dir, c := pytestTask(t)
	check := `import builtins, importlib.metadata, marshal, re
import _pytest.nodes

def annotated(a: int) -> str:
    return str(a)

def test_shortcuts():
    assert type(builtins.compile).__name__ == "builtin_function_or_method"
    code = compile("def g(x: int): return x", "<t>", "exec")
    ns = {}
    exec(code, ns)
    assert ns["g"].__annotations__["x"] is int
    assert annotated.__annotations__ == {"a": int, "return": str}
    assert importlib.metadata.version("pytest") == "7.2.1"
    assert re.compile("a+b", re.I).match("AAB")
    assert re.sub("[^\u0009\u000A\u000D\u0020-\u007E\u0080-\uD7FF\uE000-\uFFFD\u10000-\u10FFFF]", "?", "a\x01b") == "a?b"
    assert _pytest.nodes.Node.__init__.__annotations__["name"] == "str"
    with open("/ceval/__pycache__/ceval-codegen.marshal", "rb") as f:
        recorded = marshal.loads(f.read())
    assert len(recorded["code"]) > 100 and len(recorded["re"]) > 20, (len(recorded["code"]), len(recorded["re"]))
`
	if err := os.WriteFile(filepath.Join(dir, "tests", "test_shortcuts.py"), []byte(check), 0o644); err != nil {
		t.Fatal(err)
	}
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{"solution.py": goodSolution}, nil)
	for i := range 2 { // the recording run, then a run that uses it
		if _, score, details := runScript(t, e, c, s, nil); score != 1 || !strings.Contains(details, "21/21 passed") {
			t.Fatalf("run %d: score %v, want 1 with 21 tests (details %s)", i, score, details)
		}
	}
}

// TestWorkspaceCannotShadowAStandardModule: a workspace file named like a standard module
// never runs in place of it. In pytest, pwd.py and _lzma.py (modules this CPython for WASI
// lacks, imported when a test uses tmp_path or zipfile) forge an all-passed JUnit report and
// exit 0; in a run_command check run from the workspace, json.py answers for json. (The
// tmp_path test fails on its assertion: tmp_path works in the sandbox.)
func TestWorkspaceCannotShadowAStandardModule(t *testing.T) {
	forge := `import os
with open("/tmp/.ceval-junit.xml", "w") as f:
    f.write('<testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="3">'
            '<testcase classname="t" name="a"/><testcase classname="t" name="b"/><testcase classname="t" name="c"/>'
            '</testsuite></testsuites>')
os._exit(0)
`
	dir, c := pytestTask(t)
	tests := "import zipfile\n\ndef test_tmp(tmp_path):\n    (tmp_path / 'x').write_text('1')\n    assert (tmp_path / 'x').read_text() == '2'\n\ndef test_zip():\n    zipfile.ZipFile\n    assert False\n"
	if err := os.WriteFile(filepath.Join(dir, "tests", "test_solution.py"), []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	e := pyExecutor(t, Options{})
	s := workspace(t, map[string]string{"solution.py": goodSolution, "pwd.py": forge, "_lzma.py": forge, "lzma.py": forge}, nil)
	if _, score, details := runScript(t, e, c, s, nil); score != 0 || !strings.Contains(details, "0/2 passed (2 failed, 0 errors") {
		t.Errorf("pytest: score %v, want 0 with 2 failed tests (details %s)", score, details)
	}
	s = workspace(t, map[string]string{"answer.json": `{"ok": false}`, "json.py": "def loads(s):\n    return {'ok': True}\n"}, nil)
	check := &task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: `python3 -c 'import json, sys; sys.exit(0 if json.loads(open("answer.json").read())["ok"] is True else 1)'`, Execution: task.Execution{Timeout: 60 * time.Second}}}
	if _, score, details := runScript(t, e, check, s, nil); score != 0 {
		t.Errorf("run_command: score %v, want 0: a workspace json.py answered for json (details %s)", score, details)
	}
	// Under -E (PYTHONPATH ignored: ceval.pth installs the guard) the check reads the file
	// from the workspace and prints what the real json makes of it.
	for _, flags := range []string{"-E", "-IE"} {
		check := &task.Criterion{Type: task.RunCommand, Spec: &task.RunCommandSpec{Command: `cd /workspace && python3 ` + flags + ` -c 'import sys; sys.path.insert(0, ""); import json; print(json.loads(open("answer.json").read())["ok"])'`, Execution: task.Execution{Timeout: 60 * time.Second}, StdoutScoring: task.StdoutScoring{ExpectedStdout: ptr("False"), StdoutMatch: "exact"}}}
		if r, score, details := runScript(t, e, check, s, nil); score != 1 {
			t.Errorf("run_command python3 %s: score %v, want 1 (stdout %q, stderr %.300s): a workspace json.py answered for json, or the check did not run in the workspace (details %s)", flags, score, r.Stdout, r.Stderr, details)
		}
	}
}

// TestWorkspaceCannotShadowAGraderPackage: a workspace package named like one the task
// provides (python_packages, python_wheels, pytest's own) never runs in place of it, in any
// way a check starts CPython, while a workspace module of another name (the agent's
// solution) still imports. The workspace's packaging/ answers every version comparison with
// True, so a check comparing the agent's version against 2.0 passed for 1.5. python3 -I,
// which ignores PYTHONPATH, imports the task's packaging (it could not before: the right
// answer scored 0 there). Issue 32.
func TestWorkspaceCannotShadowAGraderPackage(t *testing.T) {
	if _, err := os.Stat(DebianDistPackages + "/packaging/version.py"); err != nil {
		t.Skip("Debian's python3-packaging is not installed")
	}
	fake := map[string]string{
		"packaging/__init__.py":     "",
		"packaging/version.py":      "class Version:\n    def __init__(self, s):\n        pass\n    def __gt__(self, other):\n        return True\n",
		"solution.py":               "def version():\n    return open('/workspace/answer.txt').read().strip()\n",
		"src/encodings/__init__.py": "import os\nos._exit(0)\n",
	}
	check := `import sys; sys.path.insert(0, "/workspace"); import solution; from packaging.version import Version; sys.exit(0 if Version(solution.version()) > Version("2.0") else 1)`
	script := "cat > /tmp/check.py <<'EOF'\n" + check + "\nEOF\n"
	launchers := map[string]string{
		"python3 -c":       `cd /workspace && python3 -c '` + check + `'`,
		"python3 -I":       `cd /workspace && python3 -I -c 'import sys; sys.path.insert(0, ""); ` + check[len("import sys; "):] + `'`,
		"python3 -I alone": `cd /tmp && python3 -I -c 'import sys; from packaging.version import Version; sys.exit(0 if Version(open("/workspace/answer.txt").read().strip()) > Version("2.0") else 1)'`,
		"python3 -E":       `cd /workspace && python3 -E -c '` + check + `'`,
		"python3 -S":       `cd /workspace && python3 -S -c '` + check + `'`,
		"python3 -IS":      `cd /workspace && python3 -IS -c '` + check + `'`,
		"python3 -m":       script + `cd /workspace && PYTHONPATH=/tmp python3 -m check`,
		"script":           script + `cd /workspace && python3 /tmp/check.py`,
		// CPython imports encodings before site, from PYTHONPATH ahead of its library.
		"PYTHONPATH encodings": `cd / && PYTHONPATH=/workspace/src:/workspace python3 -c '` + check + `'`,
	}
	e := pyExecutor(t, Options{})
	for _, answer := range []string{"1.5", "3.0"} {
		files := map[string]string{"answer.txt": answer + "\n"}
		for k, v := range fake {
			files[k] = v
		}
		s := workspace(t, files, nil)
		want := 0.0
		if answer == "3.0" {
			want = 1
		}
		for name, cmd := range launchers {
			c := command(cmd)
			c.Execution().Timeout = 60 * time.Second
			c.Execution().PythonPackages = []string{"packaging"}
			if r, score, details := runScript(t, e, c, s, nil); score != want {
				t.Errorf("%s, answer %s: score %v, want %v (the workspace's packaging answered, or the task's did not import; stderr %.400s; details %s)", name, answer, score, want, r.Stderr, details)
			}
		}
	}
	// Python wheels: a workspace wheelmod.py does not answer for the task's wheelmod.
	s := workspace(t, map[string]string{"wheelmod.py": "X = 8\n"}, nil)
	for _, flags := range []string{"", "-I "} {
		c := command(`cd /workspace && python3 ` + flags + `-c 'import sys; sys.path.insert(0, ""); import wheelmod; sys.exit(0 if wheelmod.X == 7 else 1)'`)
		c.Execution().Timeout = 60 * time.Second
		c.Execution().PythonWheels = []*task.Wheel{testWheel(t)}
		if r, score, details := runScript(t, e, c, s, nil); score != 1 {
			t.Errorf("wheel, python3 %s: score %v, want 1 (stderr %.400s; details %s)", flags, score, r.Stderr, details)
		}
	}
}

// TestPytestWorkspaceCannotShadowAGraderPackage: in pytest, a test that puts the workspace
// first on sys.path (as tests importing the agent's code often do) still gets the task's
// six, not the workspace's six.py, which made the wrong answer pass.
func TestPytestWorkspaceCannotShadowAGraderPackage(t *testing.T) {
	if _, err := os.Stat(DebianDistPackages + "/six.py"); err != nil {
		t.Skip("Debian's python3-six is not installed")
	}
	dir, c := pytestTask(t)
	tests := "import sys\nsys.path.insert(0, '/workspace')\nimport six, solution\n\ndef test_name():\n    assert solution.name() == six.text_type.__name__\n"
	if err := os.WriteFile(filepath.Join(dir, "tests", "test_solution.py"), []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Execution().PythonPackages = []string{"six"}
	e := pyExecutor(t, Options{})
	for _, tc := range []struct {
		answer string
		want   float64
	}{{"wrong", 0}, {"str", 1}} {
		s := workspace(t, map[string]string{
			"six.py":      "text_type = type('wrong', (), {})\n",
			"solution.py": "def name():\n    return '" + tc.answer + "'\n",
		}, nil)
		if _, score, details := runScript(t, e, c, s, nil); score != tc.want {
			t.Errorf("answer %s: score %v, want %v (details %s)", tc.answer, score, tc.want, details)
		}
	}
}
