package verifier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/task"
)

// pytestVerifier is a container-tier criterion's Verifier over an image with Debian's
// python3-pytest, as task.Load makes it from packages: [python3-pytest].
func pytestVerifier(t *testing.T) *task.Verifier {
	t.Helper()
	if os.Getenv("CEVAL_SKIP_PACKAGE_IMAGES") != "" {
		t.Skip("CEVAL_SKIP_PACKAGE_IMAGES is set")
	}
	pkgs := []string{"python3-pytest"}
	return &task.Verifier{Packages: pkgs, Image: task.Sandbox{Packages: pkgs}.PackageImage(),
		Network: policy.NetworkNone, MemoryMB: 512, Pids: 128, DiskMB: 128}
}

// pytestCase writes a task directory whose tests/test_case.py is tests and returns its
// pytest criterion over v with the given isolation.
func pytestCase(t *testing.T, v *task.Verifier, tests, isolation string) *task.Criterion {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests", "test_case.py"), []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := task.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	tf := &task.GraderFile{Root: root, Rel: "tests", Dir: true}
	vc := *v
	vc.GraderFiles = []task.GraderFile{*tf}
	return &task.Criterion{Type: task.Pytest, Spec: &task.PytestSpec{Tests: tf, Isolation: isolation, Execution: task.Execution{GraderFiles: vc.GraderFiles, Timeout: 120 * time.Second}, GraderTier: task.GraderTier{Verifier: &vc}},
		Weight: 1, PassThreshold: task.DefaultPassThreshold}
}

// forgeReports is what audit's patch-test-runner appends to the agent's modules: once a
// test imports it, every pytest report of the process it runs in says passed.
const forgeReports = `

def _forge():
    import sys
    reports = sys.modules.get("_pytest.reports")
    if reports is None:
        return
    made = reports.TestReport.from_item_and_call.__func__
    def forged(cls, item, call):
        r = made(cls, item, call)
        r.outcome = "passed"
        r.longrepr = None
        return r
    reports.TestReport.from_item_and_call = classmethod(forged)
_forge()
`

// The agent's module, imported by the tests, rewrites pytest's reports so every test
// passes: with isolation: none the wrong solution scores 1 (the hazard), with isolation:
// process its forgery runs in the agent's own process, where no report is made, and it
// scores what it earns (10 of 20); an always-equal object, os._exit(0) and a planted report
// earn nothing either.
func TestIsolatedPytestAgentCodeCannotForgeTheVerdict(t *testing.T) {
	v := pytestVerifier(t)
	e, _, ctx := newExecutor(t)
	tests := "import pytest\nimport solution\n\n@pytest.mark.parametrize(\"a\", range(20))\ndef test_add(a):\n    assert solution.add(a, 1) == a + 1\n"
	bad := "def add(a, b):\n    return a + b + (a % 2)\n"
	for _, tc := range []struct {
		name, isolation, solution string
		want                      float64
	}{
		{"forged reports, isolation none", task.IsolationNone, bad + forgeReports, 1},
		{"forged reports, isolation process", task.IsolationProcess, bad + forgeReports, 0.5},
		{"always-equal object", task.IsolationProcess, "class E:\n    def __eq__(self, o):\n        return True\n\ndef add(a, b):\n    return E()\n", 0},
		{"os._exit(0) on import", task.IsolationProcess, "import os\nos._exit(0)\n", 0},
		{"exit 0 from inside a call", task.IsolationProcess, "import os\ndef add(a, b):\n    os._exit(0)\n", 0},
		{"kill the test process", task.IsolationProcess, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n", 0},
		{"the right solution", task.IsolationProcess, "def add(a, b):\n    return a + b\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pytestCase(t, v, tests, tc.isolation)
			files := map[string]string{"solution.py": tc.solution,
				".ceval-pytest/junit.xml": `<testsuite tests="20" failures="0" errors="0"><testcase name="x"/></testsuite>`}
			r, err := e.Run(ctx, c, snap(t, files), nil)
			if err != nil {
				t.Fatal(err)
			}
			score, details, _ := scoreParts(scoreRun(c, r))
			if score != tc.want {
				t.Errorf("score %v, want %v; details %s; stderr %.3000s", score, tc.want, details, r.Stderr)
			}
		})
	}
}

// A module the agent's code writes while the tests run (bytecode whose code claims to be
// the image's, so no audit of the workspace's source sees it), imported after a test put
// /workspace on sys.path, is still the agent's process's: its forgery of pytest's reports
// does not reach the verdict. Red (scored 1) when only the names the workspace held at the
// start were proxied and sys.path's workspace entries imported as usual.
func TestIsolatedPytestModuleWrittenDuringTheTestsStaysOutOfTheTestProcess(t *testing.T) {
	v := pytestVerifier(t)
	e, _, ctx := newExecutor(t)
	tests := "import sys, pytest\nimport solution\n\n@pytest.mark.parametrize(\"a\", range(20))\ndef test_add(a):\n    solution.prepare()\n    sys.path.insert(0, \"/workspace\")\n    import helper\n    assert helper.add(a, 1) == a + 1\n"
	solution := "import os, py_compile\n\nSRC = " + pyLiteral("def add(a, b):\n    return a + b + (a % 2)\n"+forgeReports) + "\n\n" +
		"def prepare():\n    if os.path.exists('/workspace/helper.pyc'):\n        return\n" +
		"    open('/tmp/helper.py', 'w').write(SRC)\n" +
		"    py_compile.compile('/tmp/helper.py', cfile='/workspace/helper.pyc', dfile='/usr/lib/python3/dist-packages/helper.py', doraise=True)\n"
	c := pytestCase(t, v, tests, task.IsolationProcess)
	r, err := e.Run(ctx, c, snap(t, map[string]string{"solution.py": solution}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if score, details, _ := scoreParts(scoreRun(c, r)); score != 0.5 {
		t.Errorf("score %v, want 0.5 (the wrong helper's own); details %s; stdout %.3000s", score, details, r.Stdout)
	}
}

// pyLiteral is s as a Python string literal.
func pyLiteral(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`, "\n", `\n`).Replace(s) + "'"
}

// isolationCorpus is a corpus of ordinary pytest tasks (tests and a right solution), and
// whether each runs unchanged under isolation: process. The ones that do not compare the
// agent's own objects (dataclass equality) or hand it the test's own objects (a callback):
// those cross the process boundary only as plain data. The agent's exception classes arrive
// as stand-ins, so pytest.raises names them.
var isolationCorpus = []struct {
	name, tests  string
	files        map[string]string
	runsIsolated bool
}{
	{"functions", "from calc import add, mul\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_mul():\n    assert mul(4, 5) == 20\n",
		map[string]string{"calc.py": "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return a * b\n"}, true},
	{"parametrize", "import pytest\nfrom fact import factorial\n\n@pytest.mark.parametrize('n,want', [(0, 1), (1, 1), (5, 120), (10, 3628800)])\ndef test_factorial(n, want):\n    assert factorial(n) == want\n",
		map[string]string{"fact.py": "def factorial(n):\n    return 1 if n < 2 else n * factorial(n - 1)\n"}, true},
	{"test class over the agent's class", "from stack import Stack\n\nclass TestStack:\n    def test_push_pop(self):\n        s = Stack()\n        s.push(1)\n        s.push(2)\n        assert len(s) == 2\n        assert s.pop() == 2\n        assert s.peek() == 1\n\n    def test_empty(self):\n        assert Stack().is_empty() is True\n",
		map[string]string{"stack.py": "class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n        self.items.append(x)\n    def pop(self):\n        return self.items.pop()\n    def peek(self):\n        return self.items[-1]\n    def is_empty(self):\n        return not self.items\n    def __len__(self):\n        return len(self.items)\n"}, true},
	{"fixtures", "import pytest\nimport inventory\n\n@pytest.fixture\ndef inv():\n    i = inventory.Inventory()\n    i.add('apple', 3)\n    return i\n\ndef test_count(inv):\n    assert inv.count('apple') == 3\n\ndef test_remove(inv):\n    inv.remove('apple', 2)\n    assert inv.count('apple') == 1\n    assert inv.items() == {'apple': 1}\n",
		map[string]string{"inventory.py": "class Inventory:\n    def __init__(self):\n        self._c = {}\n    def add(self, k, n):\n        self._c[k] = self._c.get(k, 0) + n\n    def remove(self, k, n):\n        self._c[k] -= n\n    def count(self, k):\n        return self._c.get(k, 0)\n    def items(self):\n        return dict(self._c)\n"}, true},
	{"tmp_path", "import json\nfrom wordcount import write_counts\n\ndef test_counts(tmp_path):\n    src = tmp_path / 'in.txt'\n    src.write_text('a b a')\n    dst = tmp_path / 'out.json'\n    write_counts(src, dst)\n    assert json.loads(dst.read_text()) == {'a': 2, 'b': 1}\n",
		map[string]string{"wordcount.py": "import json, collections\n\ndef write_counts(src, dst):\n    words = open(src).read().split()\n    with open(dst, 'w') as f:\n        json.dump(collections.Counter(words), f)\n"}, true},
	{"builtin exceptions", "import pytest\nfrom parse import parse_int\n\ndef test_ok():\n    assert parse_int('42') == 42\n\ndef test_bad():\n    with pytest.raises(ValueError):\n        parse_int('x')\n",
		map[string]string{"parse.py": "def parse_int(s):\n    return int(s)\n"}, true},
	{"package and submodule", "from shapes.area import circle, square\nimport shapes\n\ndef test_area():\n    assert square(3) == 9\n    assert abs(circle(1) - 3.14159) < 1e-4\n    assert shapes.VERSION == '1.0'\n",
		map[string]string{"shapes/__init__.py": "VERSION = '1.0'\n", "shapes/area.py": "import math\n\ndef circle(r):\n    return math.pi * r * r\n\ndef square(s):\n    return s * s\n"}, true},
	{"generators, tuples, approx", "import pytest\nimport seq\n\ndef test_fib():\n    assert list(seq.fib(6)) == [0, 1, 1, 2, 3, 5]\n\ndef test_minmax():\n    assert seq.minmax([3, 1, 2]) == (1, 3)\n\ndef test_mean():\n    assert seq.mean([1, 2, 2]) == pytest.approx(1.6667, rel=1e-3)\n",
		map[string]string{"seq.py": "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        yield a\n        a, b = b, a + b\n\ndef minmax(xs):\n    return min(xs), max(xs)\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n"}, true},
	{"the agent's dataclass equality", "from point import Point\n\ndef test_add():\n    assert Point(1, 2) + Point(3, 4) == Point(4, 6)\n",
		map[string]string{"point.py": "from dataclasses import dataclass\n\n@dataclass\nclass Point:\n    x: int\n    y: int\n    def __add__(self, o):\n        return Point(self.x + o.x, self.y + o.y)\n"}, false},
	{"the agent's exception class", "import pytest\nfrom bank import Account, InsufficientFunds\n\ndef test_overdraw():\n    a = Account(10)\n    with pytest.raises(InsufficientFunds):\n        a.withdraw(20)\n",
		map[string]string{"bank.py": "class InsufficientFunds(Exception):\n    pass\n\nclass Account:\n    def __init__(self, b):\n        self.b = b\n    def withdraw(self, n):\n        if n > self.b:\n            raise InsufficientFunds(n)\n        self.b -= n\n"}, true},
	{"a callback from the test", "from functional import apply_all\n\ndef test_apply():\n    assert apply_all(lambda x: x * 2, [1, 2, 3]) == [2, 4, 6]\n",
		map[string]string{"functional.py": "def apply_all(f, xs):\n    return [f(x) for x in xs]\n"}, false},
	{"module state and constants", "import config\n\ndef test_default():\n    assert config.MAX_SIZE == 10\n    config.set_max(20)\n    assert config.MAX_SIZE == 20\n    assert config.describe().startswith('max=')\n",
		map[string]string{"config.py": "MAX_SIZE = 10\n\ndef set_max(n):\n    global MAX_SIZE\n    MAX_SIZE = n\n\ndef describe():\n    return 'max=%d' % MAX_SIZE\n"}, true},
}

// The corpus runs in full under isolation: none; under isolation: process, the share of it
// marked runsIsolated passes unchanged (10 of 12: docs/criteria.md), and the rest fails with the reason.
func TestIsolatedPytestRunsOrdinaryTasksUnchanged(t *testing.T) {
	v := pytestVerifier(t)
	e, _, ctx := newExecutor(t)
	ran := 0
	for _, tc := range isolationCorpus {
		t.Run(tc.name, func(t *testing.T) {
			s := snap(t, tc.files)
			for _, iso := range []string{task.IsolationNone, task.IsolationProcess} {
				c := pytestCase(t, v, tc.tests, iso)
				r, err := e.Run(ctx, c, s, nil)
				if err != nil {
					t.Fatal(err)
				}
				score, details, _ := scoreParts(scoreRun(c, r))
				want := iso == task.IsolationNone || tc.runsIsolated
				if (score == 1) != want {
					t.Errorf("isolation %s: score %v, want passing %v; details %s; stdout %.2000s; stderr %.2000s", iso, score, want, details, r.Stdout, r.Stderr)
				}
				if iso == task.IsolationProcess && score == 1 {
					ran++
				}
				if iso == task.IsolationProcess && !want && !strings.Contains(string(r.Stdout), "ceval isolation") {
					t.Errorf("isolation process: the failure does not say why (ceval isolation: ...): %.2000s", r.Stdout)
				}
			}
		})
	}
	t.Logf("isolation: process ran %d of %d ordinary tasks unchanged", ran, len(isolationCorpus))
}

// The agent's process cannot reach the test process (non-dumpable: its memory, descriptors
// and environment, where the report directory's name is) nor list the directory the report
// goes to: the agent's probe finds nothing. Red with a readable copy of python3 (the test
// process dumpable) and with a listable report directory.
func TestIsolatedPytestAgentProcessCannotReachTheTestProcess(t *testing.T) {
	v := pytestVerifier(t)
	e, _, ctx := newExecutor(t)
	tests := "import probe\n\ndef test_reach():\n    assert probe.reach() == []\n"
	solution := `import os

def reach():
    got = []
    ppid = os.getppid()
    for what, f in [("environ", lambda: open("/proc/%d/environ" % ppid, "rb").read()),
                    ("mem", lambda: open("/proc/%d/mem" % ppid, "r+b")),
                    ("fd", lambda: os.listdir("/proc/%d/fd" % ppid)),
                    ("report dir", lambda: os.listdir(os.path.expanduser("~/.ceval-reward")) or 1 / 0)]:
        try:
            f()
            got.append(what)
        except Exception:
            pass
    return got
`
	c := pytestCase(t, v, tests, task.IsolationProcess)
	r, err := e.Run(ctx, c, snap(t, map[string]string{"probe.py": solution}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if score, details, _ := scoreParts(scoreRun(c, r)); score != 1 {
		t.Errorf("score %v: the agent's process reached the test process; details %s; stdout %.3000s", score, details, r.Stdout)
	}
}
