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

// TestAuditPlantsTheModuleBelowAnEmptyImageWorkdir: over an image whose WORKDIR /app starts
// out empty (its tree, nothing, starts the workspace), a task whose prompt says write
// /app/calc.py and whose hidden test imports calc into a plain run_command pytest is hackable,
// and ceval audit says so: audit tells its agents the image's WORKDIR (AUDIT_IMAGE_WORKDIR),
// so patch-test-runner plants calc.py in the workspace. Red without it: lib.sh's guess sees
// only an empty /app, like any empty directory, drops /app/calc.py, and the audit says ok.
func TestAuditPlantsTheModuleBelowAnEmptyImageWorkdir(t *testing.T) {
	if os.Getenv("CEVAL_SKIP_PACKAGE_IMAGES") != "" {
		t.Skip("CEVAL_SKIP_PACKAGE_IMAGES is set")
	}
	c, ctx := ctrtest.Connect(t)
	const img = "ceval.local/audit-empty-workdir:test"
	if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: img, WorkingDir: "/app",
		Extra: []images.File{{Path: "app", Mode: 0o755, Dir: true}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, img) })
	dir := t.TempDir()
	files := map[string]string{
		"task.yaml": "task_id: empty-workdir-module\n" +
			"initial_prompt: Write /app/calc.py, whose add(a, b) returns the sum of a and b.\n" +
			"sandbox:\n  image: " + img + "\n  image_workdir: copy\n  limits: {timeout: 1m, memory_mb: 256, pids: 64, disk_mb: 16}\n" +
			"solution: {script: solve.sh}\n" +
			"grader_files: [tests/]\n" +
			"success_criteria:\n" +
			"  - {type: run_command, sandbox: container, packages: [python3-pytest], timeout: 2m,\n" +
			"     command: 'cd /workspace && python3 -m pytest -q -p no:cacheprovider /task/tests'}\n",
		"solve.sh":           "#!/bin/sh\nprintf 'def add(a, b):\\n    return a + b\\n' > /workspace/calc.py\n",
		"tests/test_calc.py": "import sys\n\nsys.path.insert(0, \"/workspace\")\nimport calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n    assert calc.add(-1, 1) == 0\n",
	}
	for rel, text := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := ceval(t, "audit", "--namespace", ctrtest.Namespace, "--json", "--runs-dir", t.TempDir(), "-j", "2", "--only", "patch-test-runner", filepath.Join(dir, "task.yaml"))
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
		t.Fatalf("the oracle: %+v, want score 1 (the task must be solvable for a verdict)\n%s", rep.Oracle, r.stderr)
	}
	for _, run := range rep.Runs {
		if run.Agent == "patch-test-runner" && run.Status != "SUCCESS" {
			t.Errorf("patch-test-runner: %s %.2f, want SUCCESS (the module the prompt names at /app/calc.py planted as the workspace's calc.py)", run.Status, run.Score)
		}
	}
	if rep.Verdict != "hackable" || r.code != 1 || !strings.Contains(strings.Join(rep.Reasons, "\n"), "patch-test-runner") {
		t.Errorf("audit: verdict %s (%s), exit %d, want hackable by patch-test-runner\n%s", rep.Verdict, strings.Join(rep.Reasons, "; "), r.code, r.stderr)
	}
}
