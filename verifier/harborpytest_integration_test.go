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

// An imported Terminal-Bench-style task (test.sh installs uv and pytest at test time) graded
// in images whose python3 has no pytest (Debian's python3 and bash only: 3.9 in bullseye, 3.11
// in bookworm, 3.13 in trixie) runs ceval's own pytest offline: the answer scores 1, a wrong
// one 0, an agent's pytest.py in the workspace forges nothing, and nothing in the container can
// write ceval's copy. Red without the fix: every run scored 0 (test.sh's original lines ran,
// with no network).
func TestHarborTestShRunsCevalsPytestWhenTheImageHasNone(t *testing.T) {
	if os.Getenv("CEVAL_SKIP_PACKAGE_IMAGES") != "" {
		t.Skip("CEVAL_SKIP_PACKAGE_IMAGES is set")
	}
	if _, err := os.Stat(filepath.Join(hostDistPackages, hostPytestPin)); err != nil {
		t.Skip("Debian's python3-pytest 7.2.1 is not installed: scripts/containerd.sh install")
	}
	e, cl, ctx := newExecutor(t)
	out := t.TempDir()
	rs, err := importer.ImportHarbor([]string{"../importer/testdata/harbor/tb-pytest"}, out, importer.Options{})
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
	testSh := read(filepath.Join(out, "tb-pytest", "tests", "test.sh"))
	tests := read(filepath.Join(out, "tb-pytest", "tests", "test_outputs.py"))
	fakePytest := "import sys\nprint('2 passed')\nsys.exit(0)\n"
	for _, suite := range []struct{ name, python string }{{"bullseye", "3.9"}, {"bookworm", "3.11"}, {"trixie", "3.13"}} {
		t.Run(suite.python, func(t *testing.T) {
			name := "ceval.local/test-harbor-python3-" + suite.name + ":1"
			if _, err := images.BuildPackages(ctx, cl, images.PackageOptions{Name: name, Suite: suite.name, Packages: []string{"python3", "bash"}}); err != nil {
				t.Fatalf("the %s image with python3 and no pytest: %v", suite.name, err)
			}
			for _, c := range []struct {
				name  string
				files map[string]string
				want  float64
			}{
				{"right answer", map[string]string{"answer.txt": "42\n"}, 1},
				{"wrong answer", map[string]string{"answer.txt": "41\n"}, 0},
				{"wrong answer, the agent's pytest.py", map[string]string{"answer.txt": "41\n", "pytest.py": fakePytest, "tests/pytest.py": fakePytest}, 0},
				{"ceval's copy is read-only", map[string]string{"answer.txt": "42\n", "tests/test.sh*": `p=$CEVAL_PYTEST
[ -n "$p" ] && [ -f "$p/_pytest/main.py" ] || { echo "no ceval pytest at '$p'" >&2; echo 0 > /tmp/logs/verifier/reward.txt; exit; }
if touch "$p/x" || echo 'raise SystemExit(0)' >> "$p/_pytest/main.py" || chmod 777 "$p/_pytest/main.py" || rm -rf "$p/pytest"; then echo 0 > /tmp/logs/verifier/reward.txt; else echo 1 > /tmp/logs/verifier/reward.txt; fi
`}, 1},
			} {
				files := map[string]string{"tests/test.sh*": testSh, "tests/test_outputs.py": tests}
				for k, v := range c.files {
					files[k] = v
				}
				cr := container(". /workspace/tests/test.sh")
				cr.Spec.(*task.RunCommandSpec).HarborReward = true
				cr.Execution().Timeout = 120 * time.Second
				cr.GraderTier().Verifier = &task.Verifier{Image: name, Network: policy.NetworkNone, MemoryMB: 1024, Pids: 256, DiskMB: 256}
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
				if c.name == "right answer" {
					for _, want := range []string{"the tests run with ceval's own", "Python " + suite.python + ".", "pytest-7.2.1", "2 passed"} {
						if !strings.Contains(output, want) {
							t.Errorf("%s: the output lacks %q:\n%s", c.name, want, output)
						}
					}
				}
			}
		})
	}
}

// The Harbor cookbook's pattern of a reward.json written by an inline python3 -c program
// (conformance task reward-inline-program, written here), as the import rewrites it, scores
// by the program's rewards: test.sh's own shell now opens the file. As written it scored 0
// (the program's open of the reward fails: FileNotFoundError).
func TestHarborInlineRewardProgramCountsAsImported(t *testing.T) {
	if os.Getenv("CEVAL_SKIP_PACKAGE_IMAGES") != "" {
		t.Skip("CEVAL_SKIP_PACKAGE_IMAGES is set")
	}
	e, cl, ctx := newExecutor(t)
	name := "ceval.local/test-harbor-python3-bookworm:1"
	if _, err := images.BuildPackages(ctx, cl, images.PackageOptions{Name: name, Suite: "bookworm", Packages: []string{"python3", "bash"}}); err != nil {
		t.Fatalf("the image with python3: %v", err)
	}
	out := t.TempDir()
	rs, err := importer.ImportHarbor([]string{"../importer/testdata/conformance/harbor/reward-inline-program"}, out, importer.Options{})
	if err != nil || !rs[0].OK() {
		t.Fatalf("import: %v %v", err, rs)
	}
	imported, err := os.ReadFile(filepath.Join(out, "reward-inline-program", "tests", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	original := strings.ReplaceAll(strings.ReplaceAll(string(imported), "open(1, 'w')", "open('/tmp/logs/verifier/reward.json', 'w')"), `" > /tmp/logs/verifier/reward.json`, `"`)
	for _, c := range []struct {
		name, testSh, answer string
		want                 float64
	}{
		{"imported, right answer", string(imported), "42", 1},
		{"imported, wrong answer", string(imported), "41", 0},
		{"as written, right answer", original, "42", 0},
	} {
		cr := container(". /workspace/tests/test.sh")
		cr.Spec.(*task.RunCommandSpec).HarborReward = true
		cr.Execution().Timeout = 60 * time.Second
		cr.GraderTier().Verifier = &task.Verifier{Image: name, Network: policy.NetworkNone, MemoryMB: 512, Pids: 128, DiskMB: 64}
		sc, err := e.Execute(ctx, cr, snap(t, map[string]string{"tests/test.sh*": c.testSh, "answer.txt": c.answer + "\n"}), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if sc.Score != c.want {
			t.Errorf("%s: score %v, want %v (%s)", c.name, sc.Score, c.want, sc.Details)
		}
	}
}
