package verifier

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/wasm"
)

// toolchainPackages is the package image the toolchain tests grade in: one image (built
// once, ~2-4 min cold, then imported from ~/.cache/ceval/images in seconds) for node -e,
// go test and pytest.
var toolchainPackages = []string{"golang-go", "nodejs", "python3-pytest"}

// toolchainVerifier is a container-tier criterion's Verifier over the toolchain image,
// as task.Load makes it from packages: [...].
func toolchainVerifier(t *testing.T) *task.Verifier {
	t.Helper()
	if os.Getenv("CEVAL_SKIP_PACKAGE_IMAGES") != "" {
		t.Skip("CEVAL_SKIP_PACKAGE_IMAGES is set")
	}
	return &task.Verifier{Packages: toolchainPackages, Image: task.Sandbox{Packages: toolchainPackages}.PackageImage(),
		Network: policy.NetworkNone, MemoryMB: 1024, Pids: 256, DiskMB: 256}
}

// pytestTree writes a task directory with tests/test_solution.py: 20 tests of the agent's
// solution.add, of which a solution that adds wrongly for odd a fails 10; it returns the
// criterion with sandbox: container over the toolchain image.
func pytestTree(t *testing.T, v *task.Verifier) (string, *task.Criterion) {
	t.Helper()
	dir := t.TempDir()
	tests := "import pytest\nimport solution\n\n@pytest.mark.parametrize(\"a\", range(20))\ndef test_add(a):\n    assert solution.add(a, 1) == a + 1\n"
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
	tf := &task.GraderFile{Root: root, Rel: "tests", Dir: true}
	c := &task.Criterion{Type: task.Pytest, Spec: &task.PytestSpec{Tests: tf, Execution: task.Execution{GraderFiles: []task.GraderFile{*tf}, Timeout: 120 * time.Second}},
		Weight: 1, PassThreshold: task.DefaultPassThreshold}
	if v != nil {
		vc := *v
		vc.GraderFiles = c.Execution().GraderFiles
		c.GraderTier().Verifier = &vc
	}
	return dir, c
}

const (
	goodSolution = "def add(a, b):\n    return a + b\n"
	badSolution  = "def add(a, b):\n    return a + b + (a % 2)\n"
)

func newPythonWASM(t *testing.T) *wasm.Executor {
	t.Helper()
	if !wasm.HasToolbox() {
		t.Skip("this build has no toolbox")
	}
	w, err := wasm.NewExecutor(wasm.Options{Python: images.PythonSource(nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// The same checks give the same verdict in both tiers: node -e in the container beside the
// same JSON check by python3 -c in WASM, go test of a small module beside a check of the
// same source, and one pytest suite in both.
func TestVerifierAndWASMAgreeOnToolchainChecks(t *testing.T) {
	v := toolchainVerifier(t)
	e, _, ctx := newExecutor(t)
	w := newPythonWASM(t)
	goMod := "module calc\n\ngo 1.19\n"
	goodGo := "package calc\n\nfunc Add(a, b int) int { return a + b }\n"
	badGo := "package calc\n\nfunc Add(a, b int) int { return a - b }\n"
	goTest := "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n"
	goCmd := "cp /task/calc_test.go . && HOME=/tmp GOCACHE=/tmp/gocache GOPATH=/tmp/gopath GOFLAGS=-mod=mod GOPROXY=off go test ./... >/dev/null"
	dir, pc := pytestTree(t, v)
	if err := os.WriteFile(filepath.Join(dir, "calc_test.go"), []byte(goTest), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := task.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	goFiles := []task.GraderFile{{Root: root, Rel: "calc_test.go"}}
	rows := []struct {
		name, container, wasm string
		files                 map[string]string
		want                  float64
	}{
		{"node -e, right answer", `node -e 'const d = JSON.parse(require("fs").readFileSync("out.json")); process.exit(d.answer === 42 ? 0 : 1)'`,
			`python3 -c 'import json, sys; sys.exit(0 if json.load(open("out.json"))["answer"] == 42 else 1)'`,
			map[string]string{"out.json": `{"answer": 42}`}, 1},
		{"node -e, wrong answer", `node -e 'const d = JSON.parse(require("fs").readFileSync("out.json")); process.exit(d.answer === 42 ? 0 : 1)'`,
			`python3 -c 'import json, sys; sys.exit(0 if json.load(open("out.json"))["answer"] == 42 else 1)'`,
			map[string]string{"out.json": `{"answer": 41}`}, 0},
		{"go test, right Add", goCmd, `grep -q 'return a + b' calc.go`, map[string]string{"go.mod": goMod, "calc.go": goodGo}, 1},
		{"go test, wrong Add", goCmd, `grep -q 'return a + b' calc.go`, map[string]string{"go.mod": goMod, "calc.go": badGo}, 0},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			s := snap(t, r.files)
			c := container(r.container)
			vc := *v
			vc.GraderFiles = goFiles
			c.GraderTier().Verifier, c.Execution().Timeout = &vc, 120*time.Second
			inContainer, cd, err := scoreParts(e.Execute(ctx, c, s, nil))
			if err != nil {
				t.Fatal(err)
			}
			wc := container(r.wasm)
			wc.GraderTier().Verifier = nil
			inWASM, wd, err := scoreParts(w.Execute(ctx, wc, s, nil))
			if err != nil {
				t.Fatal(err)
			}
			if inContainer != r.want || math.Abs(inContainer-inWASM) > 1e-9 {
				t.Errorf("container %v (%s), WASM %v (%s), want %v", inContainer, cd, inWASM, wd, r.want)
			}
			t.Logf("| %-22s | container %.2f | wasm %.2f |", r.name, inContainer, inWASM)
		})
	}
	for _, r := range []struct {
		name, solution string
		allOrNothing   bool
		want           float64
	}{
		{"pytest, good", goodSolution, false, 1},
		{"pytest, half", badSolution, false, 0.5},
		{"pytest, half all or nothing", badSolution, true, 0},
	} {
		t.Run(r.name, func(t *testing.T) {
			s := snap(t, map[string]string{"solution.py": r.solution})
			// Copies of pc's spec: the criteria share none of it.
			ps := *pc.Spec.(*task.PytestSpec)
			ps.AllOrNothing = r.allOrNothing
			c := *pc
			c.Spec = &ps
			inContainer, cd, err := scoreParts(e.Execute(ctx, &c, s, nil))
			if err != nil {
				t.Fatal(err)
			}
			ws := ps
			ws.Verifier = nil
			wc := c
			wc.Spec = &ws
			inWASM, wd, err := scoreParts(w.Execute(ctx, &wc, s, nil))
			if err != nil {
				t.Fatal(err)
			}
			if inContainer != r.want || math.Abs(inContainer-inWASM) > 1e-9 {
				t.Errorf("container %v (%s), WASM %v (%s), want %v", inContainer, cd, inWASM, wd, r.want)
			}
			t.Logf("| %-22s | container %.2f | wasm %.2f |", r.name, inContainer, inWASM)
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

// TestVerifierPytestWorkspaceCannotHijackTheRun plants, one at a time, every way a
// workspace could steer pytest in the container into passing a half-wrong solution (the
// WASM tier's list, plus a planted report and PYTHONPATH); none may change the score of 0.5.
func TestVerifierPytestWorkspaceCannotHijackTheRun(t *testing.T) {
	v := toolchainVerifier(t)
	e, _, ctx := newExecutor(t)
	_, c := pytestTree(t, v)
	allPass := `<testsuites><testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b"/></testsuite></testsuites>`
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
		{"a planted report", map[string]string{pytestReportDir + "/junit.xml": allPass}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"solution.py": badSolution}
			for k, v := range tc.files {
				files[k] = v
			}
			s := snap(t, files)
			r, err := e.Run(ctx, c, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			score, details, _ := scoreParts(scoreRun(c, r))
			if score != 0.5 || strings.Contains(string(r.Stdout)+string(r.Stderr), "PWNED") {
				t.Errorf("score %v, want 0.5; details %s; stdout %.3000s; stderr %.2000s", score, details, r.Stdout, r.Stderr)
			}
		})
	}
}

// TestVerifierPytestConftestOfTheTaskIsHonoured is the control for the conftest attacks:
// the same hook shipped by the task in its tests directory does turn every failure into a
// pass, so the workspace's copy leaving the score alone means it was never loaded.
func TestVerifierPytestConftestOfTheTaskIsHonoured(t *testing.T) {
	v := toolchainVerifier(t)
	e, _, ctx := newExecutor(t)
	dir, c := pytestTree(t, v)
	if err := os.WriteFile(filepath.Join(dir, "tests", "conftest.py"), []byte(strings.Replace(forcePass, `print("PWNED")`, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := snap(t, map[string]string{"solution.py": badSolution})
	if score, details, err := scoreParts(e.Execute(ctx, c, s, nil)); err != nil || score != 1 {
		t.Errorf("score %v (%v) with the task's own force-pass conftest, want 1 (details %s)", score, err, details)
	}
}

// TestVerifierReadsNoReportThroughALink: a report path the workspace turned into a link to a
// host file is never followed (the report is read through a handle on the workspace copy).
func TestVerifierReadsNoReportThroughALink(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, pytestReportDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, pytestReportDir, "junit.xml")); err != nil {
		t.Fatal(err)
	}
	if data, err := readReport(ws); err == nil || len(data) > 0 {
		t.Errorf("read %d bytes through a link (err %v)", len(data), err)
	}
	if err := os.Remove(filepath.Join(ws, pytestReportDir, "junit.xml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../etc/passwd", filepath.Join(ws, pytestReportDir, "junit.xml")); err != nil {
		t.Fatal(err)
	}
	if data, err := readReport(ws); err == nil || len(data) > 0 {
		t.Errorf("read %d bytes through a relative link (err %v)", len(data), err)
	}
}

// TestVerifierPytestReadsNoReportTheWorkspacePlanted: a workspace that ships a report of
// all passes where pytest writes its own, and ends the run before pytest writes one (its
// module exits 0 as the tests import it), scores 0: the planted report is removed before
// the container starts.
func TestVerifierPytestReadsNoReportTheWorkspacePlanted(t *testing.T) {
	v := toolchainVerifier(t)
	e, _, ctx := newExecutor(t)
	_, c := pytestTree(t, v)
	allPass := `<testsuites><testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b"/></testsuite></testsuites>`
	s := snap(t, map[string]string{"solution.py": "import os\nos._exit(0)\n", pytestReportDir + "/junit.xml": allPass})
	if score, details, err := scoreParts(e.Execute(ctx, c, s, nil)); err != nil || score != 0 {
		t.Errorf("score %v (%v), want 0; details %s", score, err, details)
	}
}

// TestVerifierPytestWorkspaceCannotShadowAnImageModule: a test that puts the workspace
// first on sys.path (to import the agent's code) still gets the image's colorsys, not the
// workspace's colorsys.py, which made the wrong answer pass; the agent's solution, a name
// the image does not provide, still imports from the workspace.
func TestVerifierPytestWorkspaceCannotShadowAnImageModule(t *testing.T) {
	v := toolchainVerifier(t)
	e, _, ctx := newExecutor(t)
	dir, c := pytestTree(t, v)
	tests := "import sys\nsys.path.insert(0, '/workspace')\nimport colorsys, solution\n\ndef test_hue():\n    assert solution.saturation() == colorsys.rgb_to_hsv(1.0, 0.0, 0.0)[1]\n"
	if err := os.WriteFile(filepath.Join(dir, "tests", "test_solution.py"), []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		answer string
		want   float64
	}{{"'wrong'", 0}, {"1.0", 1}} {
		s := snap(t, map[string]string{
			"colorsys.py": "def rgb_to_hsv(r, g, b):\n    return (0, 'wrong', 0)\n",
			"solution.py": "def saturation():\n    return " + tc.answer + "\n",
		})
		r, err := e.Run(ctx, c, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		score, details, _ := scoreParts(scoreRun(c, r))
		if score != tc.want {
			t.Errorf("answer %s: score %v, want %v; details %s; stderr %.2000s", tc.answer, score, tc.want, details, r.Stderr)
		}
	}
}

// TestVerifierRunCommandWorkspaceCannotShadowAnImagePackage: a run_command's python3 run from
// the workspace (-c puts the working directory first on sys.path), a check script that puts
// the workspace first to import the agent's code, and pytest run by the command get the
// image's packaging, not the workspace's packaging/, which printed the expected line and
// exited 0 (the wrong answer scored 1 without ceval's sitecustomize); the agent's solution, a
// name the image does not provide, still imports from the workspace.
func TestVerifierRunCommandWorkspaceCannotShadowAnImagePackage(t *testing.T) {
	v := toolchainVerifier(t)
	root, client, ctx := newExecutor(t)
	unpriv, err := New(Options{Client: client, Grace: 500 * time.Millisecond, ScratchDir: t.TempDir(), Unprivileged: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unpriv.Close() })
	check := "import packaging.version as v, solution\nassert v.Version(solution.VERSION) >= v.Version('2.0'), solution.VERSION\nprint('ok')\n"
	// Under -S the image's site directories are not on sys.path (packaging is not the image's
	// there): those starts check a standard module's name.
	stdCheck := "import json, solution\nassert json.loads(solution.VERSION) >= 2.0, solution.VERSION\nprint('ok')\n"
	oneLine := func(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
	// pth: covered before the start guard only by the .pth ceval copied into the image's site
	// directories, which an unprivileged verifier's read-only root does not take; start: not
	// covered at all before it (python3 -S, a venv of the agent's). Both now hold in both
	// verifiers; the flags say which variants were red without each fix.
	for _, cmd := range []struct {
		name, command string
		pth, start    bool
	}{
		{"python3 -c", "cd /workspace && python3 -c \"" + strings.ReplaceAll(check, "\n", "; ") + "\" | grep -qx ok", false, false},
		{"python3 script", "cat > /tmp/check.py <<'EOF'\nimport sys\nsys.path.insert(0, '/workspace')\n" + check + "EOF\npython3 /tmp/check.py | grep -qx ok", false, false},
		{"sh script", "cat > /tmp/run.sh <<'EOF'\ncd /workspace\npython3 -c 'import json, packaging.version as v, solution; assert v.Version(solution.VERSION) >= v.Version(json.loads(\"\\\"2.0\\\"\"))'\nEOF\nsh /tmp/run.sh", false, false},
		{"python3 -I", "cd /workspace && python3 -I -c \"import sys; sys.path.insert(0, ''); " + strings.ReplaceAll(check, "\n", "; ") + "\" | grep -qx ok", true, false},
		{"python3 -E", "cd /workspace && python3 -E -c \"" + strings.ReplaceAll(check, "\n", "; ") + "\" | grep -qx ok", true, false},
		{"env -i", "cd /workspace && env -i /usr/bin/python3 -c \"" + strings.ReplaceAll(check, "\n", "; ") + "\" | grep -qx ok", true, false},
		{"PYTHONPATH=/workspace", "cd / && PYTHONPATH=/workspace python3 -c \"" + strings.ReplaceAll(check, "\n", "; ") + "\" | grep -qx ok", true, false},
		{"python3 -S", "cd /workspace && python3 -S -c \"" + oneLine(stdCheck) + "\" | grep -qx ok", false, true},
		{"python3 -IS", "cd /workspace && python3 -IS -c \"import sys; sys.path.insert(0, ''); " + oneLine(stdCheck) + "\" | grep -qx ok", false, true},
		{"PYTHONPATH=/workspace python3 -S", "cd / && PYTHONPATH=/workspace python3 -S -c \"" + oneLine(stdCheck) + "\" | grep -qx ok", false, true},
		{"shebang -S", "printf '#!/usr/bin/python3 -S\\nimport sys\\nsys.path.insert(0, \"/workspace\")\\n' > /tmp/c.py && cat >> /tmp/c.py <<'EOF'\n" + stdCheck + "EOF\nchmod +x /tmp/c.py && /tmp/c.py | grep -qx ok", false, true},
		{"env python3.11 -E", "cd /workspace && /usr/bin/env python3.11 -E -c \"" + oneLine(check) + "\" | grep -qx ok", true, false},
		{"venv", "mkdir -p /workspace/.venv/bin && ln -s /usr/bin/python3 /workspace/.venv/bin/python && cd /workspace && .venv/bin/python -c \"import agentlib; " + oneLine(check) + "\" | grep -qx ok", false, true},
		{"PYTHONPATH encodings", "cd / && PYTHONPATH=/workspace/src:/workspace python3 -c \"" + oneLine(check) + "\" | grep -qx ok", false, true},
		{"pytest", "mkdir /tmp/t && cat > /tmp/t/test_v.py <<'EOF'\nimport sys\nsys.path.insert(0, '/workspace')\nimport packaging.version as v, solution\ndef test_version():\n    assert v.Version(solution.VERSION) >= v.Version('2.0')\nEOF\ncd /workspace && python3 -m pytest -q -p no:cacheprovider /tmp/t/test_v.py", false, false},
	} {
		t.Run(strings.ReplaceAll(cmd.name, " ", "_"), func(t *testing.T) {
			for _, e := range []*Executor{root, unpriv} {
				for _, tc := range []struct {
					version string
					want    float64
				}{{"1.0", 0}, {"2.1", 1}} {
					s := snap(t, map[string]string{
						"packaging/__init__.py": "import sys\nprint('ok')\nsys.exit(0)\n",
						"json.py":               "import sys\nprint('ok')\nsys.exit(0)\n",
						"sitecustomize.py":      "import sys\nprint('ok')\nsys.exit(0)\n",
						"solution.py":           "VERSION = '" + tc.version + "'\n",
						// The agent's venv: its .pth would run before any guard in site;
						// its modules still import.
						".venv/pyvenv.cfg": "home = /usr/bin\ninclude-system-site-packages = true\n",
						".venv/lib/python3.11/site-packages/00-forge.pth": "import sys; print('ok'); sys.exit(0)\n",
						".venv/lib/python3.11/site-packages/agentlib.py":  "X = 1\n",
						// Imported by every CPython before site from a PYTHONPATH entry.
						"src/encodings/__init__.py": "import os\nos.write(1, b'ok\\n')\nos._exit(0)\n",
					})
					c := container(cmd.command)
					vc := *v
					c.GraderTier().Verifier = &vc
					c.Execution().Timeout = 120 * time.Second
					r, err := e.Run(ctx, c, s, nil)
					if err != nil {
						t.Fatal(err)
					}
					score, details, _ := scoreOf(c, r)
					if score != tc.want {
						t.Errorf("%s (pth %v, start %v), root %v, version %s: score %v, want %v; details %s; stdout %.1000s; stderr %.2000s", cmd.name, cmd.pth, cmd.start, e.Root(), tc.version, score, tc.want, details, r.Stdout, r.Stderr)
					}
				}
			}
		})
	}
}
