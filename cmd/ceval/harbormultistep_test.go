package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
)

// TestHarborMultiStepImportRunsAndAuditsOK: the Harbor multi-step task written here
// (importer/testdata/conformance/harbor/multi-step: two [[steps]], the task's tests/ merged
// into each step's, a step's workdir and verifier env, min_reward, final) imports with notes
// only, and `ceval audit` says ok: the oracle (each step's solve.sh) passes both steps, the
// null agent and every cheat fail.
func TestHarborMultiStepImportRunsAndAuditsOK(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash missing")
	}
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	out := t.TempDir()
	r := ceval(t, "import", "harbor", "--out", out, "../../importer/testdata/conformance/harbor/multi-step")
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, ": unmapped:") || !strings.Contains(r.stdout, "task.yaml: ok") {
		t.Fatalf("import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	buildDefaultWithBash(t, ctx, c, images.DefaultName)
	taskFile := filepath.Join(out, "multi-step", "task.yaml")
	r = ceval(t, "audit", "--namespace", ctrtest.Namespace, "--json", "--runs-dir", t.TempDir(), "-j", "2", taskFile)
	var reps []struct {
		TaskID  string   `json:"task_id"`
		Verdict string   `json:"verdict"`
		Reasons []string `json:"reasons"`
		Oracle  *struct {
			Status string `json:"status"`
			RunDir string `json:"run_dir"`
		} `json:"oracle"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &reps); err != nil || len(reps) != 1 {
		t.Fatalf("audit: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	rep := reps[0]
	if rep.Verdict != "ok" || r.code != 0 {
		t.Fatalf("audit verdict %s (exit %d): %s\n%s", rep.Verdict, r.code, strings.Join(rep.Reasons, "; "), r.stderr)
	}
	res, err := record.ReadResult(rep.Oracle.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range res.TaskSteps {
		got = append(got, s.Name+"="+s.Status)
	}
	if !slices.Equal(got, []string{"create=SUCCESS", "extend=SUCCESS"}) || res.StepScore != "last" {
		t.Fatalf("the oracle's steps %v (rule %q)", got, res.StepScore)
	}
	if b, err := os.ReadFile(filepath.Join(rep.Oracle.RunDir, "workspace", "greeting.txt")); err != nil || string(b) != "olleh, ceval\n" {
		t.Fatalf("the oracle's greeting %q, %v", b, err)
	}
}
