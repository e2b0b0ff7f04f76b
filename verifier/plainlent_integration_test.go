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

// A pytest criterion without isolation: process over an image whose python3 has no pytest
// runs ceval's lent one too (the same mount and boot as isolation: process): the right
// solution scores 1, a wrong one 0. Red without the lending for it: the test process found
// no pytest, both 0.
func TestPlainPytestRunsCevalsPytestWhenTheImageHasNone(t *testing.T) {
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
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  float64
	}{
		{"the right solution", map[string]string{"solution.py": goodSolution}, 1},
		{"a wrong solution", map[string]string{"solution.py": "def add(a, b):\n    return a - b\n"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pytestCase(t, v, tests, "")
			r, err := e.Run(ctx, c, snap(t, tc.files), nil)
			if err != nil {
				t.Fatal(err)
			}
			score, details, _ := scoreParts(scoreRun(c, r))
			if score != tc.want {
				t.Errorf("score %v, want %v; details %s; stderr %.3000s", score, tc.want, details, r.Stderr)
			}
			if !strings.Contains(string(r.Stdout)+string(r.Stderr), map[bool]string{true: "20 passed", false: "20 failed"}[tc.want == 1]) {
				t.Errorf("no pytest summary: %s %s", r.Stdout, r.Stderr)
			}
		})
	}
}
