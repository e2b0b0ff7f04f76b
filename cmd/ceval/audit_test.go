package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

func TestValidateStrictWarnsWithFileLineAndExits1(t *testing.T) {
	hackable := "../../examples/audit/hackable/task.yaml"
	if r := ceval(t, "validate", hackable); r.code != exitOK || strings.Contains(r.stderr, "warning") {
		t.Fatalf("without --strict: exit %d, stderr %s", r.code, r.stderr)
	}
	r := ceval(t, "validate", "--strict", hackable, "../../examples/audit/sound/task.yaml")
	if r.code != exitFailure || !strings.Contains(r.stderr, "examples/audit/hackable/task.yaml:18:5: warning: success_criteria[0] (run_command): only the exit code") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "sound") {
		t.Errorf("the sound example has no weak criterion, got: %s", r.stderr)
	}
	if r := ceval(t, "validate", "--strict", "../../examples/audit/sound/task.yaml"); r.code != exitOK {
		t.Errorf("sound: exit %d, stderr %s", r.code, r.stderr)
	}
}

func TestAuditRefusesBadInputWithExit2(t *testing.T) {
	for _, args := range [][]string{
		{"audit"},
		{"audit", "-j", "0", "../../examples/audit/sound/task.yaml"},
		{"audit", "no-such-task.yaml"},
	} {
		if r := ceval(t, args...); r.code != exitInvalid {
			t.Errorf("%q: exit %d, want 2 (stderr %s)", args, r.code, r.stderr)
		}
	}
}

// The hackable example end to end through the CLI, against the real containerd: exit 1, the
// verdict and the fooling cheat in --json, and audit.json beside the runs.
func TestAuditCLIOnTheHackableExample(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	runs := t.TempDir()
	r := ceval(t, "audit", "--namespace", ctrtest.Namespace, "--json", "--only", "stub-tests", "--runs-dir", runs, "-j", "2", "../../examples/audit/hackable/task.yaml")
	if r.code != exitFailure {
		t.Fatalf("exit %d, want 1; stderr %s", r.code, r.stderr)
	}
	var reps []struct {
		Verdict string   `json:"verdict"`
		Reasons []string `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &reps); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(reps) != 1 || reps[0].Verdict != "hackable" || !strings.Contains(strings.Join(reps[0].Reasons, "\n"), "cheat stub-tests") {
		t.Fatalf("reports = %+v", reps)
	}
	if kept, _ := filepath.Glob(filepath.Join(runs, "*", "audit.json")); len(kept) != 1 {
		t.Errorf("audit.json under the runs directory: %v", kept)
	}
}

// TestExperimentReportShowsTheAuditVerdicts: audit an experiment of the hackable and the
// sound example against the real containerd, then run it with --audit: summary.json,
// report.html and the markdown report show each task's verdict, current (same digest).
func TestExperimentReportShowsTheAuditVerdicts(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	dir := t.TempDir()
	for _, ex := range []string{"hackable", "sound"} {
		if out, err := exec.Command("cp", "-r", "../../examples/audit/"+ex, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte("experiment_id: audited\ntasks: [hackable/task.yaml, sound/task.yaml]\n"+
		"defaults:\n  agent: {type: command, command: [/bin/true]}\n"), 0o644)
	auditRuns, runs := t.TempDir(), t.TempDir()
	r := ceval(t, "audit", "--namespace", ctrtest.Namespace, "--only", "stub-tests", "--runs-dir", auditRuns, "-j", "2", exp)
	if r.code != exitFailure || !strings.Contains(r.stderr, "--audit") {
		t.Fatalf("audit: exit %d, want 1; stderr %s", r.code, r.stderr)
	}
	auditJSON := filepath.Join(onlyDir(t, auditRuns), "audit.json")
	if r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "--audit", auditJSON, exp); r.code != exitFailure {
		t.Fatalf("run: exit %d, want 1 (the idle agent fails)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	expDir := onlyDir(t, runs)
	s := readSummary(t, expDir)
	verdicts := map[string]string{}
	for _, ts := range s.Variants[0].Tasks {
		if ts.Audit != nil && !ts.Audit.Stale {
			verdicts[ts.TaskID] = ts.Audit.Verdict
		}
	}
	if verdicts["audit-hackable"] != "hackable" || verdicts["audit-sound"] != "ok" {
		t.Fatalf("verdicts in summary.json: %v", verdicts)
	}
	page, _ := os.ReadFile(filepath.Join(expDir, "report.html"))
	if !strings.Contains(string(page), `<tr data-verdict="hackable"><td>default</td><td>audit-hackable</td>`) {
		t.Errorf("report.html has no hackable row")
	}
	md := ceval(t, "report", "--format", "markdown", expDir)
	if md.code != 0 || !strings.Contains(md.stdout, "| ` default ` | ` audit-sound ` | ` ok ` |") || !strings.Contains(md.stdout, "stub-tests") {
		t.Errorf("markdown: exit %d\n%s", md.code, md.stdout)
	}
	// --audit with a file that is not an audit.json is refused before anything runs
	if r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "--audit", exp, exp); r.code != exitInvalid {
		t.Errorf("--audit exp.yaml: exit %d: %s", r.code, r.stderr)
	}
}
