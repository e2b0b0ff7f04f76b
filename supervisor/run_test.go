package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/tasktest"
	"ceval.dev/ceval/internal/testtree"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/wasm"
)

// runTask writes a task directory (task.yaml plus files), loads it and runs it against the
// real containerd, returning the result and the error.
func runTask(t *testing.T, doc string, files map[string]string, o Options) (*record.Result, error) {
	t.Helper()
	c, ctx := ctrtest.Connect(t)
	dir := testtree.New(t, files)
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return runLoaded(t, ctx, c, tk, o)
}

func runLoaded(t *testing.T, ctx context.Context, c *client.Client, tk *task.Task, o Options) (*record.Result, error) {
	t.Helper()
	o.Client = c
	if o.RunsDir == "" {
		o.RunsDir = t.TempDir()
	}
	if o.Grace == 0 {
		o.Grace = time.Second
	}
	t.Cleanup(func() { removeTestImage(t, ctx, c) })
	return Run(ctx, tk, o)
}

func canary(t *testing.T) string {
	var b [12]byte
	rand.Read(b[:])
	return "CEVAL-CANARY-" + hex.EncodeToString(b[:])
}

func readResult(t *testing.T, res *record.Result) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(res.Dir, record.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("result.json: %v", err)
	}
	return m
}

// agentTask is a task file whose command agent runs a script (experiment's tests write it too).
var agentTask = tasktest.AgentTask

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestHelloExampleSucceeds(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	tk, err := task.Load("../examples/hello/task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := wasm.NewExecutor(wasm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	res, err := runLoaded(t, ctx, c, tk, Options{Executor: ex})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" || res.Score != 1 {
		t.Fatalf("status %s score %v: %+v", res.Status, res.Score, res.Criteria)
	}
	m := readResult(t, res)
	iso := m["isolation"].(map[string]any)
	if iso["uid"] != 2000.0 || iso["gid"] != 2000.0 || iso["cap_eff"] != "0000000000000000" || iso["seccomp"] != 2.0 || iso["no_new_privs"] != 1.0 {
		t.Errorf("isolation = %v", iso)
	}
	if by, _ := iso["limits_enforced_by"].(map[string]any); by["pids"] != "cgroup" || by["memory"] != "cgroup" || by["cpu"] != "cgroup" || by["disk"] == nil {
		t.Errorf("isolation.limits_enforced_by = %v, want every limit's mechanism", iso["limits_enforced_by"])
	}
	for _, k := range []string{"run_id", "agent", "timings", "resources", "image", "task_sha256", "ceval_version", "criteria"} {
		if _, ok := m[k]; !ok {
			t.Errorf("result.json lacks %q", k)
		}
	}
	if m["image"].(map[string]any)["manifest_digest"] == "" {
		t.Error("no image digest")
	}
	if fi, err := os.Stat(res.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("run dir mode %v %v", fi.Mode(), err)
	}
}

func TestDoNothingAgentFails(t *testing.T) {
	res, err := runTask(t, agentTask("nothing", "true", "  - {type: file_exists, path: hello.txt}\n"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "FAILURE" || res.Score != 0 {
		t.Fatalf("status %s score %v", res.Status, res.Score)
	}
}

// A Harbor task id with underscores under the default variant made a container ID that
// containerd refused (issue 40): the agent's and a step's containers must both be made.
func TestUnderscoreTaskIDUnderDefaultVariantRunsSuccess(t *testing.T) {
	doc := agentTask("agda_sized_types_termination_hard", "cat prepared >hello.txt",
		"  - {type: file_contains, path: hello.txt, includes: [ready]}\n", "setup:\n  - echo ready >prepared\n")
	res, err := runTask(t, doc, nil, Options{Variant: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" || res.Score != 1 {
		t.Fatalf("status %s score %v: %+v %+v", res.Status, res.Score, res.Criteria, res.Error)
	}
}

// The agent searches the whole filesystem and /proc for the grading material's canary.
func TestAgentCannotFindGradingMaterialCanary(t *testing.T) {
	cn := canary(t)
	// The search pattern is assembled at run time so the agent's own argv does not match.
	script := `P=CEVAL-CAN; P="${P}ARY-"
# Every top-level directory but /proc, /sys and /dev (whose device files never end).
for d in /*/ /.*/ /dev/shm/ /dev/mqueue/; do
  case "$d" in /proc/|/sys/|/dev/|/./|/../) continue;; esac
  grep -rsh "$P" "$d" 2>/dev/null >> found.txt
done
grep -sh "$P" /* /.* 2>/dev/null >> found.txt
for p in /proc/[0-9]*; do
  cat $p/environ $p/cmdline 2>/dev/null | tr '\0' '\n' | grep -h "$P" >> found.txt
  ls -la $p/root/ $p/cwd/ $p/fd/ >> listing.txt 2>&1
done
find / -name 'task.yaml' -o -name 'reference' -o -name '*.canary' 2>/dev/null | grep -v '^/proc' >> found.txt
cat /proc/1/root/task.yaml /task.yaml ../task.yaml /reference/answer.canary 2>/dev/null >> found.txt
true`
	criteria := "  - {type: file_contains, path: found.txt, includes: [\"" + cn + "\"]}\n" +
		"  - {type: file_exists, path: found.txt, description: \"" + cn + "\"}\n"
	res, err := runTask(t, agentTask("canary", script, criteria, "reference: {directory: reference}\n"),
		map[string]string{"reference/answer.canary": cn + "\n", "notes.md": cn}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Criteria[0].Passed {
		found, _ := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, "found.txt"))
		t.Fatalf("BREACH: the agent found the canary:\n%s", found)
	}
	for _, f := range []string{record.StdoutFile, record.StderrFile, filepath.Join(record.WorkspaceDir, "found.txt"), filepath.Join(record.WorkspaceDir, "listing.txt")} {
		data, _ := os.ReadFile(filepath.Join(res.Dir, f))
		if strings.Contains(string(data), cn) {
			t.Errorf("canary appears in %s", f)
		}
	}
}

// Files named like ceval's own outputs, written by the agent, change nothing.
func TestForgedResultFilesInWorkspaceAreIgnored(t *testing.T) {
	script := `printf '{"task_id":"forge","status":"SUCCESS","score":1}' > result.json
printf '1.0' > reward.txt; printf '{}' > snapshot.json; printf '<testsuite failures="0"/>' > junit.xml
mkdir -p workspace && printf '{"status":"SUCCESS"}' > workspace/result.json`
	res, err := runTask(t, agentTask("forge", script, "  - {type: file_exists, path: answer.txt}\n"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := readResult(t, res)
	if m["status"] != "FAILURE" || m["score"] != 0.0 {
		t.Fatalf("forged result took effect: %v %v", m["status"], m["score"])
	}
	if data, _ := os.ReadFile(filepath.Join(res.Dir, record.WorkspaceDir, record.ResultFile)); !strings.Contains(string(data), "SUCCESS") {
		t.Error("the agent's file should be kept, inside the snapshot directory")
	}
}

// A double-forked background writer must be dead before the snapshot, so the snapshot cannot
// change after it is taken.
func TestBackgroundWriterIsKilledBeforeSnapshot(t *testing.T) {
	script := `( ( trap '' TERM HUP; while true; do date +%s%N >> bg.log; sleep 0.05; done ) & ) ; setsid sh -c 'while true; do echo x >> bg2.log; sleep 0.05; done' & sleep 0.5; exit 0`
	res, err := runTask(t, agentTask("bgwriter", script, "  - {type: file_exists, path: bg.log}\n"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(res.Dir, record.WorkspaceDir, "bg.log")
	before, err := os.ReadFile(snap)
	if err != nil || len(before) == 0 {
		t.Fatalf("the writer did not run: %v", err)
	}
	// No window of time to wait out: the writers are dead when the agent_exited event says
	// the container's cgroup was empty, and that event comes before snapshot_taken.
	var ev []string
	data, _ := os.ReadFile(filepath.Join(res.Dir, record.EventsFile))
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		ev = append(ev, m["event"].(string))
		if m["event"] == "agent_exited" && m["cgroup_empty"] != true {
			t.Errorf("processes left after the agent: %v", m)
		}
	}
	if strings.Join(ev, ",") == "" || !strings.Contains(strings.Join(ev, ","), "agent_exited,snapshot_taken") {
		t.Errorf("events out of order: %v", ev)
	}
}

// Symlinks to host files and to /proc/1/root: the grader never reads a target.
func TestPlantedSymlinksAreNeverFollowedByGrader(t *testing.T) {
	script := `ln -s /etc/passwd answer.txt; ln -s /proc/1/root root; ln -s /proc/1/root/etc/hostname host.txt; ln -s ../../../../etc/shadow rel.txt`
	criteria := `  - {type: file_contains, path: answer.txt, includes: ["root:"]}
  - {type: file_contains, path: host.txt, includes: ["ceval"]}
  - {type: file_exists, path: "root/etc/passwd"}
`
	res, err := runTask(t, agentTask("links", script, criteria), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Criteria {
		if c.Passed || c.Status != "FAIL" {
			t.Errorf("criterion %s on a planted link: %s %s", c.Type, c.Status, c.Details)
		}
	}
	ws := filepath.Join(res.Dir, record.WorkspaceDir)
	entries, _ := os.ReadDir(ws)
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 {
			t.Errorf("snapshot directory holds a link: %s", e.Name())
		}
	}
}

// Host credentials never reach the agent unless the task passes them and the user allows it;
// passed values are redacted from what ceval writes.
func TestHostCredentialsAbsentUnlessPassedAndRedacted(t *testing.T) {
	secret := canary(t)
	t.Setenv("CEVAL_TEST_API_KEY", secret)
	t.Setenv("ANTHROPIC_API_KEY", secret+"-anthropic")
	res, err := runTask(t, agentTask("env", "env > env.txt; cat /proc/1/environ | tr '\\0' '\\n' >> env.txt",
		"  - {type: file_contains, path: env.txt, includes: [\""+secret+"\"]}\n"), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Criteria[0].Passed {
		t.Fatal("a host credential reached the agent without being passed")
	}
	doc := agentTask("envpass", "echo token=$CEVAL_TEST_API_KEY; echo $CEVAL_TEST_API_KEY > tok.txt",
		"  - {type: file_exists, path: tok.txt}\n")
	doc = strings.Replace(doc, "  type: command\n", "  type: command\n  env_passthrough: [CEVAL_TEST_API_KEY]\n", 1)
	if _, err := runTask(t, doc, nil, Options{}); err == nil || !strings.Contains(err.Error(), "--allow-env CEVAL_TEST_API_KEY") {
		t.Fatalf("want refusal naming --allow-env, got %v", err)
	}
	res, err = runTask(t, doc, nil, Options{Allow: Allow{Env: []string{"CEVAL_TEST_API_KEY"}}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(filepath.Join(res.Dir, record.StdoutFile))
	if !strings.Contains(string(out), "token=[REDACTED]") || strings.Contains(string(out), secret) {
		t.Errorf("stdout log not redacted: %q", out)
	}
	for _, f := range []string{record.ResultFile, record.EventsFile} {
		data, _ := os.ReadFile(filepath.Join(res.Dir, f))
		if strings.Contains(string(data), secret) {
			t.Errorf("%s holds the secret", f)
		}
	}
}

func TestSleepingAgentTimesOutAndNothingSurvives(t *testing.T) {
	doc := agentTask("sleeper", "echo started > s.txt; trap '' TERM; sleep 1000 & sleep 1000", "  - {type: file_exists, path: s.txt}\n")
	// 5 s: under load a shorter clock ran out before sh had written s.txt.
	doc = strings.Replace(doc, "timeout: 60s", "timeout: 5s", 1)
	res, err := runTask(t, doc, nil, Options{Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != record.StatusTimeout || !res.Agent.TimedOut {
		t.Fatalf("status %s timed_out %v", res.Status, res.Agent.TimedOut)
	}
	if res.Score != 1 {
		t.Errorf("the snapshot of a timed-out run is still graded: score %v", res.Score)
	}
	// The agent's phase and the reap end with the timeout and grace, not with the sleeps
	// (image and container set-up, snapshot and grading are not this test's to bound).
	t.Logf("agent %.2fs, reap %.2fs", res.Timings.Agent, res.Timings.Reap)
	if d := res.Timings.Agent + res.Timings.Reap; d > 5+1+10 {
		t.Errorf("the agent's phase and reap took %.1fs for a 5s timeout and 1s grace", d)
	}
}

// Cancelling the run (Ctrl-C) stops the agent, leaves nothing in containerd (ctrtest checks)
// and says so in the run directory.
func TestInterruptedRunLeavesNothingAndSaysSo(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	os.WriteFile(p, []byte(agentTask("interrupt", "touch running; sleep 1000", "  - {type: file_exists, path: x}\n")), 0o644)
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	// Ctrl-C lands while the agent runs: once it has written a file in its workspace (not
	// after a fixed delay, which on a loaded host can land while the image is imported).
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sawRunning atomic.Bool
	progress := func(ev string, f map[string]any) {
		if ev != "run_started" {
			return
		}
		running := filepath.Join(f["run_dir"].(string), scratchSubdir, "workspace", "running")
		go func() {
			defer cancel()
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(running); err == nil {
					sawRunning.Store(true)
					return
				}
				if cctx.Err() != nil {
					return
				}
			}
		}()
	}
	res, err := runLoaded(t, cctx, c, tk, Options{Progress: progress})
	if !sawRunning.Load() {
		t.Fatalf("the agent never wrote its file (run error: %v)", err)
	}
	var ie *InfraError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("want an interrupted InfraError, got %v", err)
	}
	m := readResult(t, res)
	if m["interrupted"] != true || m["status"] != "ERROR" || m["complete"] != false {
		t.Errorf("result.json does not say interrupted: %v", m)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), res.Dir) {
		t.Error("scratch filesystems still mounted")
	}
}

// removeTestImage deletes the default image from the test namespace, so ctrtest can remove
// the namespace.
func removeTestImage(t *testing.T, ctx context.Context, c *client.Client) {
	ctrtest.RemoveImage(ctx, c, images.DefaultName)
}

// Agent CLIs do not reap; without the init's reaper 1,000 orphans would pile up as zombies
// and exhaust pids: 64 long before the loop ends. A fork refused while the reaper catches
// up (a loaded host) is retried, up to 500 times in all: zombies never reaped exhaust that.
func TestThousandOrphansAreReapedUnderPids64(t *testing.T) {
	script := `i=0; r=0; while [ $i -lt 1000 ]; do
  until ( true & ) 2>/dev/null; do r=$((r+1)); [ $r -le 500 ] || exit 3; sleep 0.01; done
  i=$((i+1)); done; echo $i > done.txt`
	doc := strings.Replace(agentTask("orphans", script, "  - {type: file_contains, path: done.txt, includes: [\"1000\"]}\n"), "pids: 128", "pids: 64", 1)
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" || *res.Agent.ExitCode != 0 {
		out, _ := os.ReadFile(filepath.Join(res.Dir, record.StderrFile))
		t.Fatalf("status %s exit %d: %s", res.Status, *res.Agent.ExitCode, out)
	}
}

// A TODO hidden in a file over the snapshot's per-file cap must not let the negative checks
// pass, and result.json's limits_hit must name the cap.
func TestOversizeFileHidesNoTODOAndIsNamedInLimitsHit(t *testing.T) {
	ex, err := wasm.NewExecutor(wasm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	script := `echo done > answer.txt; { echo TODO; head -c 17000000 /dev/zero; } > notes.txt`
	criteria := "  - {type: file_exists, path: answer.txt}\n" +
		"  - {type: file_contains, path: notes.txt, excludes: [TODO]}\n" +
		"  - {type: run_command, command: '! grep -rq TODO .'}\n"
	res, err := runTask(t, agentTask("oversize-todo", script, criteria), nil, Options{Executor: ex})
	if err != nil {
		t.Fatal(err)
	}
	m := readResult(t, res)
	if m["status"] != "FAILURE" {
		t.Fatalf("status %v: a TODO over the per-file cap passed the negative checks (criteria %v)", m["status"], m["criteria"])
	}
	for i, want := range []grader.Status{grader.Pass, grader.Fail, grader.Fail} {
		if c := res.Criteria[i]; c.Status != want || want == grader.Fail && !strings.Contains(c.Details, "omitted") {
			t.Errorf("criterion %d (%s): %s %q, want %s naming the omission", i, c.Type, c.Status, c.Details, want)
		}
	}
	hits, _ := m["limits_hit"].([]any)
	if !strings.Contains(fmt.Sprint(hits), "snapshot per-file cap 16 MiB: 1 file(s) omitted") {
		t.Fatalf("limits_hit %q does not name the per-file cap", hits)
	}
}
