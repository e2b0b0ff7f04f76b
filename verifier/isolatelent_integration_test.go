package verifier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/task"
)

// isolation: process over an image whose python3 has no pytest runs ceval's lent one (what
// an imported Harbor task's hardened criterion needs): the right solution scores 1, the
// agent's forgery of the reports its 0.5, and an agent's pytest.py (in the workspace and in
// tests/'s name) is not the pytest that runs. Red without the lent pytest: the test process's
// import pytest failed, every case 0.
func TestIsolatedPytestRunsCevalsPytestWhenTheImageHasNone(t *testing.T) {
	if os.Getenv("CEVAL_SKIP_PACKAGE_IMAGES") != "" {
		t.Skip("CEVAL_SKIP_PACKAGE_IMAGES is set")
	}
	if _, err := os.Stat(filepath.Join(hostDistPackages, hostPytestPin)); err != nil {
		t.Skip("Debian's python3-pytest 7.2.1 is not installed: scripts/containerd.sh install")
	}
	e, cl, ctx := newExecutor(t)
	const image = "ceval.local/test-harbor-python3-bookworm:1"
	if _, err := images.BuildPackages(ctx, cl, images.PackageOptions{Name: image, Suite: "bookworm", Packages: []string{"python3", "bash"}}); err != nil {
		t.Fatalf("the image with python3 and no pytest: %v", err)
	}
	v := &task.Verifier{Image: image, Network: policy.NetworkNone, MemoryMB: 512, Pids: 128, DiskMB: 128}
	tests := "import pytest\nimport solution\n\n@pytest.mark.parametrize(\"a\", range(20))\ndef test_add(a):\n    assert solution.add(a, 1) == a + 1\n"
	bad := "def add(a, b):\n    return a + b + (a % 2)\n"
	fakePytest := "import sys\nprint('20 passed')\nsys.exit(0)\n"
	for _, tc := range []struct {
		name   string
		files  map[string]string
		want   float64
		atMost bool // the agent may lose more by its own doing, never gain
	}{
		{"the right solution", map[string]string{"solution.py": goodSolution}, 1, false},
		{"forged reports", map[string]string{"solution.py": bad + forgeReports}, 0.5, false},
		{"the agent's pytest.py", map[string]string{"solution.py": bad, "pytest.py": fakePytest}, 0.5, false},
		// a workspace _pytest/ makes pytest's own lazy imports (_pytest.compat) proxies into
		// the agent's process, where they fail: the run ends 0, never above the agent's 0.5
		{"the agent's _pytest/", map[string]string{"solution.py": bad, "_pytest/__init__.py": fakePytest, "_pytest/compat.py": fakePytest}, 0.5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pytestCase(t, v, tests, task.IsolationProcess)
			r, err := e.Run(ctx, c, snap(t, tc.files), nil)
			if err != nil {
				t.Fatal(err)
			}
			score, details, _ := scoreParts(scoreRun(c, r))
			if score != tc.want && !(tc.atMost && score < tc.want) {
				t.Errorf("score %v, want %v; details %s; stderr %.3000s", score, tc.want, details, r.Stderr)
			}
			if tc.name == "the right solution" && !strings.Contains(string(r.Stdout)+string(r.Stderr), "20 passed") {
				t.Errorf("no pytest summary: %s %s", r.Stdout, r.Stderr)
			}
		})
	}
}

// isolation: process over an image with no python3 at all (ceval's busybox default) is an
// error before the tests start that says so and what to give the criterion: ceval lends
// pytest, never python3, so the old advice alone did not say what was missing.
func TestIsolatedPytestOverAnImageWithoutPython3SaysWhatToGive(t *testing.T) {
	e, _, ctx := newExecutor(t)
	v := &task.Verifier{Image: images.DefaultName, Network: policy.NetworkNone, MemoryMB: 256, Pids: 64, DiskMB: 64}
	c := pytestCase(t, v, "def test_x():\n    assert True\n", task.IsolationProcess)
	_, err := e.Execute(ctx, c, snap(t, map[string]string{"solution.py": goodSolution}), nil)
	if err == nil || !strings.Contains(err.Error(), "the image has no python3 (ceval lends pytest, not python3): give the criterion packages: [python3-pytest]") {
		t.Errorf("Execute: %v, want an error saying the image has no python3 and what to give the criterion", err)
	}
}
