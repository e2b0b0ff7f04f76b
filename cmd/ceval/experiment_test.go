package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/report"
	"ceval.dev/ceval/sandbox/local"
)

// writeExperimentFixture writes 3 tasks and an experiment of 2 scripted variants: strong
// passes every task, weak passes only task a and half-passes b and c.
func writeExperimentFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, id := range []string{"a", "b", "c"} {
		os.MkdirAll(filepath.Join(dir, id), 0o755)
		doc := "task_id: " + id + "\ninitial_prompt: write out.txt\nsandbox:\n  workspace:\n    starter_files: [{path: level, content: \"" + id + "\"}]\n" +
			"success_criteria:\n  - {type: file_contains, path: out.txt, includes: [done]}\n  - {type: file_exists, path: extra.txt}\n"
		os.WriteFile(filepath.Join(dir, id, "task.yaml"), []byte(doc), 0o644)
	}
	exp := `experiment_id: demo
tasks: ["*/task.yaml"]
repeats: 3
defaults:
  sandbox: {limits: {timeout: 30s, memory_mb: 128, pids: 64, disk_mb: 16}}
variants:
  - variant_id: strong
    agent: {type: command, command: [/bin/sh, -c, "echo done > out.txt; touch extra.txt"]}
  - variant_id: weak
    agent: {type: command, command: [/bin/sh, -c, "grep -q a level && touch extra.txt; echo done > out.txt"]}
`
	p := filepath.Join(dir, "exp.yaml")
	os.WriteFile(p, []byte(exp), 0o644)
	return p
}

func readSummary(t *testing.T, expDir string) *report.Summary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(expDir, report.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s report.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// timeless drops what differs between two runs of the same experiment: the run ID and
// the timings.
func timeless(s *report.Summary) *report.Summary {
	c := *s
	c.RunID = ""
	clear := func(list []report.Stats) []report.Stats {
		out := append([]report.Stats(nil), list...)
		for i := range out {
			out[i].MeanAgentSeconds = 0
			out[i].Tasks = nil
		}
		return out
	}
	vs := clear(s.Variants)
	for i, v := range s.Variants {
		vs[i].Tasks = clear(v.Tasks)
	}
	c.Variants, c.Tasks = vs, clear(s.Tasks)
	return &c
}

func onlyDir(t *testing.T, runs string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(runs, "*"))
	if len(dirs) != 1 {
		t.Fatalf("want one experiment directory in %s, got %v", runs, dirs)
	}
	return dirs[0]
}

// An experiment of 3 tasks x 2 variants x 3 repeats at -j 2: the summary's numbers; then
// the same experiment interrupted by SIGINT half-way and resumed ends with the same
// summary; a resume with a changed plan is refused.
func TestExperimentRunsInterruptsResumesToTheSameSummary(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	exp := writeExperimentFixture(t)

	runs := t.TempDir()
	r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "-j", "2", exp)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (weak fails some):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	full := onlyDir(t, runs)
	s := readSummary(t, full)
	if !s.Complete || s.Planned != 18 || len(s.Variants) != 2 {
		t.Fatalf("summary %+v", s)
	}
	strong, weak := s.Variants[0], s.Variants[1]
	want := []struct {
		got, want float64
		what      string
	}{
		{float64(strong.Runs), 9, "strong runs"}, {float64(strong.Passed), 9, "strong passed"},
		{strong.PassRate, 1, "strong pass rate"}, {strong.MeanScore, 1, "strong mean score"},
		{strong.PassRateCI95[0], 3 / (3 + 4.302652729911275*4.302652729911275), "strong CI low (3 tasks' evidence, t on 2 df)"}, {strong.PassAtK["3"], 1, "strong pass@3"},
		{float64(weak.Runs), 9, "weak runs"}, {float64(weak.Passed), 3, "weak passed"},
		{weak.PassRate, 1.0 / 3, "weak pass rate"}, {weak.MeanScore, 2.0 / 3, "weak mean score"},
		{weak.PassAtK["1"], 1.0 / 3, "weak pass@1"}, {weak.PassAtK["3"], 1.0 / 3, "weak pass@3"},
		{float64(weak.Statuses["FAILURE"]), 6, "weak failures"},
		{weak.Tasks[0].PassRate, 1, "weak task a"}, {weak.Tasks[1].MeanScore, 0.5, "weak task b score"},
	}
	for _, w := range want {
		if math.Abs(w.got-w.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", w.what, w.got, w.want)
		}
	}
	if !(weak.PassRateCI95[0] < 1.0/3 && weak.PassRateCI95[1] > 1.0/3) || strong.MeanAgentSeconds <= 0 {
		t.Errorf("weak CI %v, strong agent time %v", weak.PassRateCI95, strong.MeanAgentSeconds)
	}
	if _, err := os.Stat(filepath.Join(full, report.JUnitFile)); err != nil {
		t.Error(err)
	}

	// The same experiment, interrupted once 6 runs are done.
	runs2 := t.TempDir()
	tmp := privateTMPDIR(t)
	cmd := exec.Command(cevalBin, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs2, "-j", "2", exp)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var lines []string
	finished := 0
	for finished < 6 && sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "[") {
			finished++
		}
	}
	below := descendants(cmd.Process.Pid)
	cmd.Process.Signal(syscall.SIGINT)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("ceval did not stop after SIGINT")
	}
	half := onlyDir(t, runs2)
	out := strings.Join(lines, "\n")
	if code := cmd.ProcessState.ExitCode(); code != 3 || !strings.Contains(out, "resume with: ceval run --resume "+half) {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Fatalf("after SIGINT: %v", err)
	}
	if left := stillRunning(below); len(left) > 0 {
		t.Errorf("still running after ceval exited: %v", left)
	}
	if left := cevalTempLeft(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
	if s := readSummary(t, half); s.Complete {
		t.Fatal("the interrupted experiment's summary says complete")
	}

	if r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--resume", half, "-D", "agent.model=other", exp); r.code != 2 || !strings.Contains(r.stderr, "differs from its plan.json") {
		t.Errorf("resume with a changed plan: exit %d: %s", r.code, r.stderr)
	}
	r = ceval(t, "run", "--namespace", ctrtest.Namespace, "--resume", half, "-j", "2")
	if r.code != 1 || !strings.Contains(r.stderr, "done before; kept") {
		t.Fatalf("resume: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if a, b := timeless(s), timeless(readSummary(t, half)); !reflect.DeepEqual(a, b) {
		ja, _ := json.MarshalIndent(a, "", " ")
		jb, _ := json.MarshalIndent(b, "", " ")
		t.Errorf("resumed summary differs from the uninterrupted one:\n%s\n---\n%s", ja, jb)
	}

	// report re-renders the same summary from the run files alone.
	os.Remove(filepath.Join(half, report.SummaryFile))
	os.Remove(filepath.Join(half, report.HTMLFile))
	if r := ceval(t, "report", half); r.code != 0 || !reflect.DeepEqual(timeless(s), timeless(readSummary(t, half))) {
		t.Errorf("report: exit %d %s", r.code, r.stderr)
	}
	if page, err := os.ReadFile(filepath.Join(half, report.HTMLFile)); err != nil || !strings.Contains(string(page), `<tr data-variant="strong">`) {
		t.Errorf("report.html not re-rendered: %v", err)
	}
}

// regrade: make the weak variant's criteria easier by dropping extra.txt; every run of it
// becomes SUCCESS without any agent running again.
func TestRegradeUsesTheCurrentCriteriaWithoutRunningAgents(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	exp := writeExperimentFixture(t)
	runs := t.TempDir()
	if r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "--repeats", "1", "--tags", "", exp); r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	dir := onlyDir(t, runs)
	for _, id := range []string{"a", "b", "c"} {
		p := filepath.Join(filepath.Dir(exp), id, "task.yaml")
		data, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(data), "  - {type: file_exists, path: extra.txt}\n", "", 1)), 0o644)
	}
	r := ceval(t, "regrade", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "FAILURE -> SUCCESS") {
		t.Fatalf("regrade: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	s := readSummary(t, dir)
	if s.Variants[1].PassRate != 1 {
		t.Errorf("after regrade weak pass rate %v", s.Variants[1].PassRate)
	}
}

func TestValidateAndPlanExperiment(t *testing.T) {
	exp := writeExperimentFixture(t)
	r := ceval(t, "validate", exp)
	if r.code != 0 || !strings.Contains(r.stdout, "ok (experiment demo, 18 runs") {
		t.Errorf("validate: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	r = ceval(t, "plan", exp, "-D", "agent.model=m", "--repeats", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "12 runs (3 tasks x 2 variants x 2 repeats)") || !strings.Contains(r.stdout, "command m") {
		t.Errorf("plan: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	bad := filepath.Join(filepath.Dir(exp), "bad.yaml")
	os.WriteFile(bad, []byte("experiment_id: x\ntasks: [\"*/task.yaml\"]\nvariants:\n  - {variant_id: v, agent: {type: nope}}\n"), 0o644)
	r = ceval(t, "validate", bad)
	if r.code != 2 || strings.Count(r.stderr, bad+":4:35: agent.type must be one of") != 1 {
		t.Errorf("validate bad: exit %d: %s", r.code, r.stderr)
	}
}

// kill -9 of ceval mid-run leaves a running container, its task, snapshot, lease and
// scratch mounts; gc keeps them while the owner lives and removes them all once it is dead.
func TestGCAfterKill9LeavesNothingOfCevals(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	// A range of its own: in the default range, a run of another test package (go test runs
	// packages at once) takes the lowest free slot, which is this run's the moment it dies.
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("id_range: {start: 3221225472, slots: 2}\n"), 0o644)
	cmd, runs := startSleeper(t, ctx, c, "sleeper", "--config", cfg)
	killed := false
	t.Cleanup(func() {
		if !killed { // a failed check below: still leave nothing behind
			cmd.Process.Kill()
			cmd.Wait()
			ceval(t, "gc", "--namespace", ctrtest.Namespace)
		}
	})
	r := ceval(t, "gc", "--namespace", ctrtest.Namespace)
	ctrs, _ := c.Containers(ctx)
	if r.code != 0 || !strings.Contains(r.stdout, "kept container") || len(ctrs) != 1 || strings.Contains(r.stdout, "removed container") {
		t.Fatalf("gc while the owner lives: exit %d, %d containers left:\n%s%s", r.code, len(ctrs), r.stdout, r.stderr)
	}
	// The run's ID slot: its lock file is held while the owner lives, freed by gc after.
	spec, err := ctrs[0].Spec(ctx)
	if err != nil || spec.Linux == nil || len(spec.Linux.UIDMappings) != 1 {
		t.Fatalf("the run's container has no single UID mapping: %v", err)
	}
	slot := fmt.Sprintf("id-slot ids %d..", spec.Linux.UIDMappings[0].HostID)
	lockFile := filepath.Join(local.IDLockDir, fmt.Sprintf("%d.lock", spec.Linux.UIDMappings[0].HostID))
	if !strings.Contains(r.stdout, "kept "+slot) {
		t.Errorf("gc while the owner lives does not keep its %s:\n%s", slot, r.stdout)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed = true
	if ctrtest.Leftovers(ctx, c) == nil {
		t.Fatal("kill -9 left nothing: the test does not test gc")
	}
	r = ceval(t, "gc", "--namespace", ctrtest.Namespace)
	if r.code != 0 {
		t.Fatalf("gc: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"removed task", "removed container", "removed lease", "removed mount", "removed " + slot} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("gc output lacks %q:\n%s", want, r.stdout)
		}
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("after gc: %v", err)
	}
	ls, _ := c.LeasesService().List(ctx)
	for _, l := range ls {
		if l.Labels["dev.ceval.container"] != "" {
			t.Errorf("lease %s left", l.ID)
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), runs) {
		t.Errorf("scratch mounts under %s left", runs)
	}
	if _, err := os.Stat(lockFile); !os.IsNotExist(err) {
		t.Errorf("the dead run's ID slot lock %s is still there (%v)", lockFile, err)
	}
}

// TestResumeRepeatsTheRootTheExcludedTagsAndTheTasksOfTheCommandLine: an experiment run
// with --root (its tasks read a prompt above the experiment's directory), --exclude-tags
// and task files named on the command line (the file has no tasks list) is resumed by a
// bare `ceval run --resume DIR`: plan.json holds that command line, the complete run is
// kept and the missing one runs again.
func TestResumeRepeatsTheRootTheExcludedTagsAndTheTasksOfTheCommandLine(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, images.DefaultName) })
	repo := t.TempDir()
	files := map[string]string{
		"shared/prompt.md": "write out.txt",
		"exp/exp.yaml": "experiment_id: resumed\ndefaults:\n  sandbox: {limits: {timeout: 30s, memory_mb: 128, pids: 64, disk_mb: 16}}\n" +
			"  agent: {type: command, command: [/bin/sh, -c, \"echo done > out.txt\"]}\n",
	}
	for _, id := range []string{"a", "b", "c"} {
		files["tasks/"+id+"/task.yaml"] = "task_id: " + id + "\ntags: [" + id + "]\ninitial_prompt_file: ../../shared/prompt.md\n" +
			"success_criteria:\n  - {type: file_contains, path: out.txt, includes: [done]}\n"
	}
	for name, body := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755)
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runs := t.TempDir()
	args := []string{"run", "--namespace", ctrtest.Namespace, "--runs-dir", runs, "--root", repo, "--exclude-tags", "c", filepath.Join(repo, "exp/exp.yaml")}
	for _, id := range []string{"a", "b", "c"} {
		args = append(args, filepath.Join(repo, "tasks", id, "task.yaml"))
	}
	if r := ceval(t, args...); r.code != 0 {
		t.Fatalf("run: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	dir := onlyDir(t, runs)
	lost, _ := filepath.Glob(filepath.Join(dir, "*", "b", "1", "result.json"))
	if len(lost) != 1 {
		t.Fatalf("b's result: %v", lost)
	}
	os.Remove(lost[0]) // as if the experiment had stopped before b finished
	r := ceval(t, "run", "--namespace", ctrtest.Namespace, "--resume", dir)
	if r.code != 0 || !strings.Contains(r.stderr, "done before; kept") {
		t.Fatalf("resume: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(lost[0]); err != nil {
		t.Errorf("b did not run again: %v", err)
	}
	if s := readSummary(t, dir); !s.Complete || s.Planned != 2 || s.Variants[0].Passed != 2 {
		t.Errorf("summary after the resume (c excluded, a kept, b run again): %+v", s)
	}
	// regrade reloads the experiment with the same command line
	if r := ceval(t, "regrade", "--namespace", ctrtest.Namespace, dir); r.code != 0 {
		t.Errorf("regrade: exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
