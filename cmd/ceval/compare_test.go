package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// cevalEnv runs the ceval binary with extra environment variables.
func cevalEnv(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(cevalBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cliResult{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

// writeGateFixture writes one task and two experiments of it: in exp.yaml the candidate
// variant's agent works unless the host's AGENT_MODE (passed through) says broken, as an
// agent under test changes while the plan does not; in broken.yaml its agent does nothing.
func writeGateFixture(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "task.yaml"), []byte("task_id: a\ninitial_prompt: write out.txt\n"+
		"success_criteria:\n  - {type: file_contains, path: out.txt, includes: [done]}\n"), 0o644)
	head := "experiment_id: gate\ntasks: [a/task.yaml]\nrepeats: 3\n" +
		"defaults:\n  sandbox: {limits: {timeout: 30s, memory_mb: 128, pids: 64, disk_mb: 16}}\n" +
		"variants:\n  - variant_id: steady\n    agent: {type: command, command: [/bin/sh, -c, \"echo done > out.txt\"]}\n"
	os.WriteFile(filepath.Join(dir, "exp.yaml"), []byte(head+
		"  - variant_id: candidate\n    agent: {type: command, env_passthrough: [AGENT_MODE], command: [/bin/sh, -c, \"test \\\"$AGENT_MODE\\\" = broken || echo done > out.txt\"]}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(head+
		"  - variant_id: candidate\n    agent: {type: command, command: [/bin/true]}\n"), 0o644)
	return dir
}

// Two runs of one experiment, the candidate's agent broken in the second: run --baseline
// and compare exit 1 naming the candidate and only it; --fail-on none exits 0. A second
// experiment file with the broken agent written in is another plan: compare refuses it
// (exit 2, the changed digest listed) unless --allow-plan-change, which finds the regression.
func TestCompareGatesABrokenAgentAsARegression(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { _ = c.ImageService().Delete(context.WithoutCancel(ctx), images.DefaultName) })
	dir := writeGateFixture(t)
	exp := filepath.Join(dir, "exp.yaml")
	run := func(mode, runs string, extra ...string) cliResult {
		args := append([]string{"run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "-j", "2", "--allow-env", "AGENT_MODE"}, extra...)
		return cevalEnv(t, []string{"AGENT_MODE=" + mode}, args...)
	}

	baseRuns := t.TempDir()
	if r := run("good", baseRuns, exp); r.code != 0 {
		t.Fatalf("baseline: exit %d, want 0:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	base := onlyDir(t, baseRuns)

	curRuns := t.TempDir()
	r := run("broken", curRuns, "--baseline", filepath.Join(base, "summary.json"), exp)
	if r.code != 1 || !strings.Contains(r.stdout, "regressed: candidate/a: pass rate 1.00 -> 0.00") || strings.Contains(r.stdout, "regressed: steady") {
		t.Fatalf("run --baseline: exit %d, want 1 naming the candidate only:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cur := onlyDir(t, curRuns)

	r = ceval(t, "compare", base, cur)
	if r.code != 1 || !strings.Contains(r.stdout, "1 regressed, 0 improved") || !strings.Contains(r.stdout, "regressed: candidate") {
		t.Errorf("compare: exit %d, want 1 naming the candidate:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := ceval(t, "compare", "--fail-on", "none", base, cur); r.code != 0 {
		t.Errorf("compare --fail-on none: exit %d, want 0:\n%s", r.code, r.stderr)
	}
	if r := ceval(t, "compare", base, base); r.code != 0 || !strings.Contains(r.stdout, "0 regressed") {
		t.Errorf("compare of a run with itself: exit %d, want 0:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = ceval(t, "compare", "--format", "markdown", base, cur)
	if r.code != 1 || !strings.Contains(r.stdout, "| **regressed** | ` candidate ` | ` a ` |") {
		t.Errorf("compare --format markdown: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	otherRuns := t.TempDir()
	if r := run("good", otherRuns, filepath.Join(dir, "broken.yaml")); r.code != 1 {
		t.Fatalf("broken.yaml: exit %d, want 1:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	other := onlyDir(t, otherRuns)
	r = ceval(t, "compare", base, other)
	if r.code != 2 || !strings.Contains(r.stderr, "candidate/a: task digest changed") || !strings.Contains(r.stderr, "--allow-plan-change") {
		t.Errorf("compare with another plan: exit %d, want 2 listing the change:\n%s", r.code, r.stderr)
	}
	r = ceval(t, "compare", "--allow-plan-change", base, other)
	if r.code != 1 || !strings.Contains(r.stdout, "regressed: candidate") || !strings.Contains(r.stdout, "a (changed)") {
		t.Errorf("compare --allow-plan-change: exit %d, want 1 naming the candidate:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// compare's exit codes on summaries alone (no containerd): bad flags and unreadable or
// impossible summaries are 2, with the file and line.
func TestCompareRefusesBadInputWithExit2(t *testing.T) {
	dir := t.TempDir()
	good := `{"run_id": "r", "complete": true, "variants": [{"variant_id": "v", "runs": 3, "passed": 3, "tasks": [{"task_id": "a", "runs": 3, "passed": 3, "task_sha256": "x"}]}]}`
	files := map[string]string{
		"good.json":       good,
		"syntax.json":     "{\n\"run_id\": \"r\",\n\"variants\": [,]}",
		"impossible.json": strings.Replace(good, `"passed": 3, "tasks"`, `"passed": 9, "tasks"`, 1),
	}
	for name, content := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{p("good.json"), p("syntax.json")}, "syntax.json:3: invalid character"},
		{[]string{p("impossible.json"), p("good.json")}, "impossible counts (runs 3, passed 9"},
		{[]string{p("good.json"), p("missing.json")}, "missing.json: no such file"},
		{[]string{"--fail-under", "80", p("good.json"), p("good.json")}, "want a pass rate from 0 to 1"},
		{[]string{"--format", "html", p("good.json"), p("good.json")}, "want one of text, markdown, json"},
	} {
		r := ceval(t, append([]string{"compare"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("compare %v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if r := ceval(t, "compare", "--fail-under", "0.5", p("good.json"), p("good.json")); r.code != 0 {
		t.Errorf("compare of a passing run with itself: exit %d:\n%s", r.code, r.stderr)
	}
}

// run --baseline refuses a baseline of another plan before anything runs (no containerd
// is needed to see it: nothing is created).
func TestRunWithABaselineOfAnotherPlanRefusesBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "summary.json")
	os.WriteFile(base, []byte(`{"run_id": "r", "complete": true, "variants": [{"variant_id": "as-written", "runs": 2, "passed": 2,
		"tasks": [{"task_id": "hello", "runs": 2, "passed": 2, "task_sha256": "not-this-one"}]}]}`), 0o644)
	runs := filepath.Join(dir, "runs")
	r := ceval(t, "run", "--containerd-address", filepath.Join(dir, "no.sock"), "--runs-dir", runs, "--baseline", base, "../../examples/experiment.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, "as-written/hello: task digest changed") || !strings.Contains(r.stderr, "idle/fix-typo: only in the current run") {
		t.Errorf("exit %d, want 2 listing the differences:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(runs); !os.IsNotExist(err) {
		t.Errorf("the runs directory was made: %v", err)
	}
}
