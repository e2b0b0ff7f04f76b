package verifier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/importer"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/task"
)

// An imported Harbor test.sh whose pytest call is a bare pytest or python3 -m pytest (no
// uvx, no uv run), graded in an image whose python3 has no pytest, runs ceval's lent pytest
// as the uvx call does: the right answer 1, a wrong one 0. Red without the import's routing
// of the bare call: the image's python3 found no pytest, both 0.
func TestHarborBarePytestTestShRunsCevalsPytestWhenTheImageHasNone(t *testing.T) {
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
	tb := "../importer/testdata/harbor/tb-pytest"
	for _, call := range []string{"pytest /tests/test_outputs.py -rA", "python3 -m pytest /tests/test_outputs.py -q"} {
		t.Run(strings.Fields(call)[0], func(t *testing.T) {
			// tb-pytest with its uvx preamble replaced by the bare call (and set -u, so that
			// it is not the standard pattern the import grades as a pytest criterion)
			src := filepath.Join(t.TempDir(), "bare-pytest")
			for _, f := range []string{"instruction.md", "task.toml", "environment/Dockerfile", "solution/solve.sh", "tests/test_outputs.py"} {
				b, err := os.ReadFile(filepath.Join(tb, f))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(src, f), string(b))
			}
			writeFile(t, filepath.Join(src, "tests", "test.sh"), "#!/bin/bash\nset -u\n"+call+"\nif [ $? -eq 0 ]; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n")
			out := t.TempDir()
			rs, err := importer.ImportHarbor([]string{src}, out, importer.Options{})
			if err != nil || !rs[0].OK() {
				t.Fatalf("import: %v %v", err, rs)
			}
			read := func(p string) string {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				return strings.ReplaceAll(string(b), "/task/tests/", "/workspace/tests/")
			}
			testSh := read(filepath.Join(out, "bare-pytest", "tests", "test.sh"))
			tests := read(filepath.Join(out, "bare-pytest", "tests", "test_outputs.py"))
			for _, c := range []struct {
				name, answer string
				want         float64
			}{{"right answer", "42\n", 1}, {"wrong answer", "41\n", 0}} {
				files := map[string]string{"tests/test.sh*": testSh, "tests/test_outputs.py": tests, "answer.txt": c.answer}
				cr := container(". /workspace/tests/test.sh")
				cr.Spec.(*task.RunCommandSpec).HarborReward = true
				cr.Execution().Timeout = 120 * time.Second
				cr.GraderTier().Verifier = &task.Verifier{Image: image, Network: policy.NetworkNone, MemoryMB: 1024, Pids: 256, DiskMB: 256}
				sc, err := e.Execute(ctx, cr, snap(t, files), nil)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				var output string
				if sc.Output != nil {
					output = string(sc.Output.Stdout) + string(sc.Output.Stderr)
				}
				if sc.Score != c.want {
					t.Errorf("%s: score %v, want %v (%s)\n%s", c.name, sc.Score, c.want, sc.Details, output)
				}
				if c.name == "right answer" && (!strings.Contains(output, "the tests run with ceval's own") || !strings.Contains(output, "2 passed")) {
					t.Errorf("%s: not ceval's pytest, or no summary:\n%s", c.name, output)
				}
			}
		})
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
