package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// harborStandardTask is a Harbor task written here in the Terminal-Bench shape: the agent
// writes /app/calc.py, tests/test_outputs.py imports it, and tests/test.sh installs uv, runs
// uvx's pytest over the tests and writes 1 or 0 to the reward by its status.
var harborStandardTask = map[string]string{
	"task.toml":         "version = \"1.0\"\n\n[verifier]\ntimeout_sec = 180.0\n\n[agent]\ntimeout_sec = 60.0\n",
	"instruction.md":    "In /app, write calc.py defining add(a, b), which returns the sum of a and b.\n",
	"solution/solve.sh": "#!/bin/sh\nprintf 'def add(a, b):\\n    return a + b\\n' > /app/calc.py\n",
	"tests/test.sh": `#!/bin/bash
# Written for ceval's tests in the Terminal-Bench 2 pattern.
apt-get update
apt-get install -y curl
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env

uvx \
  -p 3.13 \
  -w pytest==8.4.1 \
  -w pytest-json-ctrf==0.3.5 \
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA

if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
`,
	"tests/test_outputs.py": "# Written for ceval's tests: the agent's module, imported by the tests.\nimport sys\n\nsys.path.insert(0, \"/app\")\nimport calc\n\n\n" +
		"def test_small():\n    assert calc.add(1, 2) == 3\n\n\ndef test_negative():\n    assert calc.add(-4, 1) == -3\n",
}

// TestImportedStandardHarborPytestTaskResistsTheInProcessForgery: a Harbor task of the
// standard pytest-then-reward shape (written here, over an image with python3 and no pytest)
// is imported as a pytest criterion with isolation: process, graded with ceval's lent pytest:
// the audit's in-process forgery (patch-test-runner: a module the tests import rewrites every
// pytest report to passed) scores 0, the oracle 1, and the audit says ok. Red without the
// import's conversion: test.sh's pytest ran the agent's module in its own process, the forged
// outcomes made the reward 1 and the audit said hackable.
func TestImportedStandardHarborPytestTaskResistsTheInProcessForgery(t *testing.T) {
	if os.Getenv("CEVAL_SKIP_PACKAGE_IMAGES") != "" {
		t.Skip("CEVAL_SKIP_PACKAGE_IMAGES is set")
	}
	if _, err := os.Stat("/usr/lib/python3/dist-packages/pytest-7.2.1.dist-info"); err != nil {
		t.Skip("Debian's python3-pytest 7.2.1, which ceval lends to the image, is not installed: scripts/containerd.sh install")
	}
	c, ctx := ctrtest.Connect(t)
	// python3 and bash, no pytest: the verifier lends its own (as for harbor_reward's test.sh)
	const image = "ceval.local/test-harbor-python3-bookworm:1"
	if _, err := images.BuildPackages(ctx, c, images.PackageOptions{Name: image, Suite: "bookworm", Packages: []string{"python3", "bash"}}); err != nil {
		t.Fatalf("the image with python3 and no pytest: %v", err)
	}
	src := filepath.Join(t.TempDir(), "calc-add")
	files := map[string]string{"environment/Dockerfile": "FROM " + image + "\nWORKDIR /app\n"}
	for k, v := range harborStandardTask {
		files[k] = v
	}
	for rel, text := range files {
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	r := ceval(t, "import", "harbor", src, "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "calc-add/task.yaml: ok") ||
		!strings.Contains(r.stdout+r.stderr, "test.sh:8: note: tests/test.sh: the standard pattern") {
		t.Fatalf("import: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	tf := filepath.Join(out, "calc-add", "task.yaml")
	data, _ := os.ReadFile(tf)
	for _, want := range []string{"type: pytest\n", "isolation: process\n", "all_or_nothing: true\n"} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("task.yaml lacks %q:\n%s", want, data)
		}
	}
	if r := ceval(t, "validate", "--strict", tf); r.code != 0 {
		t.Errorf("validate --strict: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = ceval(t, "audit", "--namespace", ctrtest.Namespace, "--json", "--runs-dir", t.TempDir(), "-j", "2", "--only", "patch-test-runner", tf)
	var reps []struct {
		Verdict string   `json:"verdict"`
		Reasons []string `json:"reasons"`
		Oracle  *struct {
			Score float64 `json:"score"`
		} `json:"oracle"`
		Runs []struct {
			Agent  string  `json:"agent"`
			Status string  `json:"status"`
			Score  float64 `json:"score"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &reps); err != nil || len(reps) != 1 {
		t.Fatalf("audit: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	rep := reps[0]
	if rep.Oracle == nil || rep.Oracle.Score != 1 {
		t.Errorf("the oracle: %+v, want score 1", rep.Oracle)
	}
	forged := false
	for _, run := range rep.Runs {
		if run.Agent == "patch-test-runner" {
			forged = true
			if run.Score != 0 {
				t.Errorf("the in-process forgery scored %v (%s), want 0", run.Score, run.Status)
			}
		}
	}
	if !forged {
		t.Errorf("no patch-test-runner run: %+v", rep.Runs)
	}
	if rep.Verdict != "ok" || r.code != 0 {
		t.Errorf("audit: verdict %s (%s), exit %d\n%s", rep.Verdict, strings.Join(rep.Reasons, "; "), r.code, r.stderr)
	}
}
