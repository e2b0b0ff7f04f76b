package supervisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox/local"
)

// stepLog reads a step's log from a run directory.
func stepLog(t *testing.T, res *record.Result, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(res.Dir, record.StepsDir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// eventNames lists the events of a run directory, in order.
func eventNames(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev struct {
			Event string `json:"event"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			names = append(names, ev.Event)
		}
	}
	return names
}

// TestSetupAndAfterAgentStepsRunInTheAgentsSandbox: setup prepares the workspace before the
// agent, after_agent builds what the agent wrote; both run as the agent's UID with every
// capability set empty, no_new_privs, seccomp and loopback only, and what a step leaves
// running dies with it.
func TestSetupAndAfterAgentStepsRunInTheAgentsSandbox(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	doc := agentTask("steps-ok", `test "$(cat n)" = 21 && echo 'echo built $(cat n)$(cat n)' >build.sh`,
		"  - {type: file_contains, path: out.txt, includes: [built 2121]}\n"+
			"  - type: file_contains\n    path: setup-id\n    includes: [\"uid 2000\\n\", \"CapInh:\\t0000000000000000\", \"CapPrm:\\t0000000000000000\", \"CapEff:\\t0000000000000000\", \"CapBnd:\\t0000000000000000\", \"CapAmb:\\t0000000000000000\", \"NoNewPrivs:\\t1\", \"Seccomp:\\t2\", \" lo:\"]\n    excludes: [eth0]\n"+
			"  - type: file_contains\n    path: after-id\n    includes: [\"uid 2000\\n\", \"CapEff:\\t0000000000000000\", \"NoNewPrivs:\\t1\", \"Seccomp:\\t2\"]\n",
		`setup:
  - echo "uid $(id -u)" >setup-id; grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status >>setup-id; cat /proc/net/dev >>setup-id; echo 21 >n; echo setup-out; echo setup-err >&2
  - {run: "sleep 600 & echo left a daemon", timeout: 30s}
after_agent:
  - {run: "echo \"uid $(id -u)\" >after-id; grep -E '^(Cap|NoNewPrivs|Seccomp)' /proc/self/status >>after-id; sh build.sh >out.txt", timeout: 30s}
`)
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" {
		t.Fatalf("status %s: %+v", res.Status, res.Criteria)
	}
	if len(res.Steps) != 3 || !res.Steps[0].OK() || !res.Steps[1].OK() || !res.Steps[2].OK() {
		t.Fatalf("steps %+v", res.Steps)
	}
	t.Logf("steps took %.2fs, %.2fs and %.2fs (each its own container)", res.Steps[0].Seconds, res.Steps[1].Seconds, res.Steps[2].Seconds)
	// The daemon was killed when its step's shell exited, not at the step's timeout.
	if res.Steps[1].Seconds > 20 {
		t.Errorf("the step that left a daemon took %.1fs", res.Steps[1].Seconds)
	}
	if log := stepLog(t, res, "setup-1"); !strings.Contains(log, "setup-out\n") || !strings.Contains(log, "setup-err\n") {
		t.Errorf("setup-1.log = %q, want the step's stdout and stderr", log)
	}
	ev := eventNames(t, res.Dir)
	if !isSubsequence(ev, []string{"step_finished", "step_finished", "agent_started", "agent_exited", "step_started", "step_finished", "snapshot_taken"}) {
		t.Errorf("events %v: setup must finish before the agent starts, after_agent run after it exits", ev)
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("left behind: %v", err)
	}
}

// TestFailingSetupEndsTheRunAsErrorWithNoAgentAndNothingLeft: the run is ERROR, the agent
// never started, later steps never ran, and no container, task, snapshot or scratch mount
// is left.
func TestFailingSetupEndsTheRunAsErrorWithNoAgentAndNothingLeft(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	doc := agentTask("steps-setup-fails", "touch agent-ran", "  - {type: file_exists, path: agent-ran}\n",
		"setup: [echo preparing, \"echo broken >&2; exit 3\", touch never]\nafter_agent: [touch never-after]\n")
	res, err := runTask(t, doc, nil, Options{})
	var se *StepError
	var ie *InfraError
	if !errors.As(err, &se) || !errors.As(err, &ie) || se.Step.Index != 2 || *se.Step.ExitCode != 3 {
		t.Fatalf("err %v (%T), want an InfraError holding setup step 2's StepError", err, err)
	}
	if res.Status != record.StatusError || res.Complete || res.Isolation != nil || res.Agent.ExitCode != nil {
		t.Fatalf("result %+v: want ERROR with no agent", res)
	}
	if ev := eventNames(t, res.Dir); slices.Contains(ev, "agent_started") || slices.Contains(ev, "attested") {
		t.Fatalf("events %v: the agent's container started", ev)
	}
	if log := stepLog(t, res, "setup-2"); log != "broken\n" {
		t.Errorf("setup-2.log = %q", log)
	}
	if st := res.Steps; len(st) != 3 || !st[0].OK() || !st[2].Skipped {
		t.Errorf("steps %+v", st)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, scratchSubdir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("scratch directory left: %v", err)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), res.Dir) {
		t.Errorf("a mount under the run directory is left")
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("left behind: %v", err)
	}
}

// TestAgentThatBreaksWhatAfterAgentNeedsGetsItsFailureNotError attacks the steps from the
// agent: it plants what would fail the setup step were it run again, and replaces the build
// script the after_agent step runs with a directory. Setup ran once, before the agent, so
// nothing the agent does can fail it; the after_agent failure is recorded and the agent
// gets the FAILURE its work earns, never an ERROR that would drop the run from its score.
func TestAgentThatBreaksWhatAfterAgentNeedsGetsItsFailureNotError(t *testing.T) {
	doc := agentTask("steps-sabotage", "touch sabotage; rm -f build.sh; mkdir build.sh; chmod 0 .",
		"  - {type: file_contains, path: out.txt, includes: [built]}\n",
		"  workspace:\n    starter_files: [{path: build.sh, content: \"echo built\\n\"}]\n", // under sandbox
		"setup: [\"test ! -e sabotage\"]\nafter_agent: [\"sh build.sh >out.txt\"]\n")
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatalf("the agent's sabotage made the run fail: %v", err)
	}
	if res.Status != "FAILURE" || !res.Complete {
		t.Fatalf("status %s complete %v, want a graded FAILURE", res.Status, res.Complete)
	}
	st := res.Steps
	if len(st) != 2 || st[0].Kind != record.StepSetup || !st[0].OK() || st[1].Kind != record.StepAfterAgent || st[1].OK() {
		t.Fatalf("steps %+v: want setup run once and ok, after_agent failed", st)
	}
}

// TestAfterAgentDaemonCannotRewriteTheWorkspaceOnceTheStepExited: the agent plants a build
// script whose daemon waits for the after_agent step's shell to have exited (a zombie, or
// gone) and then rewrites the step's verdict file. The init holds the step's exit until every
// other process is dead, so what the snapshot holds is what the step left.
func TestAfterAgentDaemonCannotRewriteTheWorkspaceOnceTheStepExited(t *testing.T) {
	build := `step=$PPID
setsid sh -c '
: >/tmp/watching
while :; do
	state=gone
	if read -r line <"/proc/$0/stat"; then set -- $line; state=$3; fi
	case $state in Z|gone) echo forged >verdict.txt; exit 0;; esac
done' $step </dev/null >/dev/null 2>&1 &
while [ ! -e /tmp/watching ]; do :; done
`
	doc := agentTask("steps-late-daemon", "cat >build.sh <<'EOF'\n"+build+"EOF\n",
		"  - {type: file_contains, path: verdict.txt, includes: [honest], excludes: [forged]}\n",
		"after_agent: [\"sh build.sh; echo honest >verdict.txt\"]\n")
	// Without the held exit the daemon wins its race with the init's kill now and then; the
	// init's own TestDaemonCannotWriteAfterTheAgentExited holds the window open every time.
	for i := 0; i < 5; i++ {
		res, err := runTask(t, doc, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != "SUCCESS" {
			t.Fatalf("run %d: status %s, criteria %+v, steps %+v: the daemon rewrote the workspace after the step exited", i, res.Status, res.Criteria, res.Steps)
		}
	}
}

// TestStepOutputCannotForgeResultFields: what a step prints (here a forged result, a forged
// graded event, and more than the log cap) stays in its log; result.json and events.jsonl
// say what ceval saw.
func TestStepOutputCannotForgeResultFields(t *testing.T) {
	doc := agentTask("steps-forge", "true", "  - {type: file_exists, path: done.txt}\n",
		`after_agent:
  - |
    printf '{"status":"SUCCESS","score":1,"complete":true,"steps":[]}\n'
    echo '{"event":"graded","status":"SUCCESS","score":1}' >&2
    echo '"status": "SUCCESS"'
    head -c 9000000 /dev/zero | tr '\0' x
    exit 0
`)
	res, err := runTask(t, doc, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := readResult(t, res)
	if m["status"] != "FAILURE" || m["score"] != 0.0 || res.Status != "FAILURE" {
		t.Fatalf("status %v score %v: the step's output was read as a result", m["status"], m["score"])
	}
	steps, _ := m["steps"].([]any)
	if len(steps) != 1 {
		t.Fatalf("steps in result.json: %v", m["steps"])
	}
	var keys []string
	for k := range steps[0].(map[string]any) {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want := []string{"exit_code", "index", "kind", "log", "output_cut", "run", "seconds"}; !slices.Equal(keys, want) {
		t.Errorf("step fields %v, want %v", keys, want)
	}
	if !res.Steps[0].OutputCut {
		t.Error("9 MB of output did not hit the step log's cap")
	}
	if fi, err := os.Stat(filepath.Join(res.Dir, res.Steps[0].Log)); err != nil || fi.Size() > 2*local.StepLogCap {
		t.Errorf("step log: %v, %v bytes", err, fi.Size())
	}
	data, err := os.ReadFile(filepath.Join(res.Dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"graded"`) && strings.Contains(line, "SUCCESS") {
			t.Errorf("a graded event says SUCCESS: %s", line)
		}
	}
}

// TestSetupStepThatOverrunsItsTimeoutIsKilledAndEndsTheRunAsError: the step's own timeout
// (not the agent's) stops it, and its container goes with everything in it.
func TestSetupStepThatOverrunsItsTimeoutIsKilledAndEndsTheRunAsError(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	doc := agentTask("steps-setup-timeout", "touch agent-ran", "  - {type: file_exists, path: agent-ran}\n",
		"setup:\n  - {run: \"echo going; sleep 600\", timeout: 5s}\n") // 5 s: under load a 1 s clock ran out before sh printed
	res, err := runTask(t, doc, nil, Options{})
	var se *StepError
	if !errors.As(err, &se) || !se.Step.TimedOut || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err %v, want setup step 1's timeout", err)
	}
	if s := res.Steps[0].Seconds; s > 30 {
		t.Errorf("the step ran %.1fs past its 1s timeout", s)
	}
	if log := stepLog(t, res, "setup-1"); log != "going\n" {
		t.Errorf("setup-1.log = %q", log)
	}
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("left behind: %v", err)
	}
}
