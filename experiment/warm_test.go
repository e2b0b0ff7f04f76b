package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/report"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/supervisor"
)

// warmIDs is an ID range of these tests' own, so the slots they hold are theirs to count.
var warmIDs = sandbox.IDRange{Start: 3221225472 + 16*65536, Slots: 8}

// slotsHeld lists the lock files of warmIDs' slots (held by a live run or left behind).
func slotsHeld() []string {
	var out []string
	for i := range warmIDs.Slots {
		p := filepath.Join(local.IDLockDir, fmt.Sprintf("%d.lock", warmIDs.Start+i*65536))
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// nothingLeft fails t for any container, task, active snapshot, scratch mount under runs
// or ID slot of warmIDs still there.
func nothingLeft(t *testing.T, ctx context.Context, c *client.Client, runs string) {
	t.Helper()
	if err := ctrtest.Leftovers(ctx, c); err != nil {
		t.Errorf("left in containerd: %v", err)
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), runs) {
		t.Errorf("a scratch filesystem under %s is still mounted", runs)
	}
	if s := slotsHeld(); len(s) > 0 {
		t.Errorf("ID slots left: %v", s)
	}
}

// Every run of an experiment prepared ahead of its turn gets a sandbox of its own, fresh
// (no file an earlier run wrote in its workspace, home or /tmp), attested when it starts,
// and the experiment leaves nothing behind. Each run's events say it was prepared ahead
// (sandbox_ready before run_due).
func TestWarmSandboxesAreFreshAndAttestedOneRunEach(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	script := `for f in /workspace/mark "$HOME/mark" /tmp/mark; do test -e "$f" && exit 1; done; ` +
		`touch /workspace/mark "$HOME/mark" /tmp/mark && echo ok > fresh`
	e := loadTestExperiment(t, "experiment_id: w\ntasks: [a/task.yaml]\nrepeats: 6\n", map[string]string{
		"a": agentTask("a", script, "  - {type: file_exists, path: fresh}\n"),
	})
	runs := t.TempDir()
	res, err := Run(ctx, e, Options{Run: supervisor.Options{Client: c, RunsDir: runs, Grace: time.Second, IDs: warmIDs}, Parallel: 2, Ahead: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Records {
		if r == nil || resultOf(r) == nil {
			t.Fatalf("a run did not run: %+v", res.Records)
		}
		if resultOf(r).Status != "SUCCESS" || resultOf(r).Isolation == nil || r.Attempts != 1 {
			t.Errorf("run %d: status %s, isolation %v, attempts %d, error %v (a sandbox that was not fresh fails)", r.Repeat, resultOf(r).Status, resultOf(r).Isolation, r.Attempts, r.Err)
		}
		ev, _ := os.ReadFile(filepath.Join(r.Dir, record.EventsFile))
		ready, due := strings.Index(string(ev), `"event":"sandbox_ready"`), strings.Index(string(ev), `"event":"run_due"`)
		if ready < 0 || due < ready || !strings.Contains(string(ev), `"event":"attested"`) {
			t.Errorf("run %d was not prepared ahead and attested at its start:\n%s", r.Repeat, ev)
		}
	}
	nothingLeft(t, ctx, c, runs)
}

// An experiment interrupted while one run's agent runs and two more are prepared ahead
// (their tasks created, not started) stops the one, drops the prepared ones, and leaves
// nothing: no container, task, snapshot, mount or ID slot, and no directory of a run that
// never had its turn.
func TestWarmSandboxesAreDroppedWhenTheExperimentIsInterrupted(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	e := loadTestExperiment(t, "experiment_id: w\ntasks: [a/task.yaml]\nrepeats: 6\n", map[string]string{
		"a": agentTask("a", "sleep 1000; true", "  - {type: file_exists, path: x}\n"),
	})
	runs := t.TempDir()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// Cancel once one agent runs beside two prepared runs (their inits started and waiting
		// for the go-ahead: three tasks running, one agent).
		for rctx.Err() == nil {
			tasks, err := c.TaskService().List(ctx, nil)
			if err == nil {
				n := map[string]int{}
				for _, tk := range tasks.Tasks {
					n[tk.Status.String()]++
				}
				if n["RUNNING"] == 3 && agentsRunning("sleep 1000; true") == 1 {
					if len(slotsHeld()) != 3 {
						t.Errorf("ID slots held by one running and two prepared runs: %v", slotsHeld())
					}
					cancel()
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	res, err := Run(rctx, e, Options{Run: supervisor.Options{Client: c, RunsDir: runs, Grace: time.Second, IDs: warmIDs}, Parallel: 1, Ahead: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.Records[0] == nil || resultOf(res.Records[0]) == nil || !resultOf(res.Records[0]).Interrupted {
		t.Fatalf("interrupted %v, first run %+v", res.Interrupted, res.Records[0])
	}
	for i, r := range res.Records[1:] {
		if r != nil {
			t.Errorf("run %d ran: %+v", i+2, r)
		}
		if _, err := os.Stat(res.Plan.Dir(res.Dir, res.Plan.Runs()[i+1])); !os.IsNotExist(err) {
			t.Errorf("run %d, which never had its turn, left its directory (%v)", i+2, err)
		}
	}
	nothingLeft(t, ctx, c, runs)
}

// -j auto runs every run, records its choices in concurrency.json, and summary.json repeats
// them; a later start at a fixed -j removes them.
func TestAutoParallelRunsTheExperimentAndRecordsItsChoices(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	e := loadTestExperiment(t, "experiment_id: w\ntasks: [a/task.yaml]\nrepeats: 4\n", map[string]string{
		"a": agentTask("a", "echo x > x", "  - {type: file_exists, path: x}\n"),
	})
	runs := t.TempDir()
	var heard []int
	o := Options{Run: supervisor.Options{Client: c, RunsDir: runs, RunID: "auto", Grace: time.Second, IDs: warmIDs}, Parallel: AutoParallel,
		OnConcurrency: func(n int, _ func() int, _ string) { heard = append(heard, n) }}
	res, err := Run(ctx, e, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Records {
		if r == nil || resultOf(r) == nil || resultOf(r).Status != "SUCCESS" {
			t.Fatalf("a run did not succeed: %+v", r)
		}
	}
	cc := res.Concurrency
	if cc == nil || cc.Mode != "auto" || cc.Max != 4 || len(cc.Changes) == 0 || cc.Final < 1 || len(heard) == 0 || heard[0] != cc.Changes[0].Parallel {
		t.Fatalf("concurrency %+v, heard %v", cc, heard)
	}
	_, sum, err := report.Write(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Concurrency == nil || sum.Concurrency.Final != cc.Final {
		t.Errorf("summary.json's concurrency %+v", sum.Concurrency)
	}
	// Resumed at -j 1: nothing left to run, and the choices of -j auto are not this start's.
	o.Parallel, o.Resume = 1, true
	if _, err := Run(ctx, e, o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, record.ConcurrencyFile)); !os.IsNotExist(err) {
		t.Errorf("concurrency.json kept after a start at -j 1 (%v)", err)
	}
	nothingLeft(t, ctx, c, runs)
}

// agentsRunning counts the processes on the host whose command line has arg (a test agent's
// script, unique to it): a primed sandbox's init runs, its agent does not.
func agentsRunning(arg string) int {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	n := 0
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		if args := strings.Split(string(data), "\x00"); len(args) > 2 && args[0] == "/bin/sh" && args[2] == arg {
			n++ // the agent's shell, not the init whose arguments name it too
		}
	}
	return n
}

// A run prepared ahead has its container's init started and attested before its turn, waiting
// for the go-ahead (three tasks running while one agent runs), and nothing of the agent's
// runs before the turn: each agent's first instruction is after its run_due. The agent's
// deadline counts from the go-ahead: a primed init waits over 1 s for its turn, and its 2 s
// agent under a 3 s timeout still succeeds (red with the host's deadline counted from the
// task's start: TIMEOUT; the init's backstop counted from the go-ahead is
// cmd/ceval-init's TestWaitGoDeadlineCountsFromTheGoAhead). Red without Prime: at most one task
// running. Each run is attested and the experiment leaves nothing.
func TestWarmSandboxesArePrimedAndTheirDeadlineCountsFromTheGoAhead(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	const script = "touch /tmp/f && stat -c %y /tmp/f > first; sleep 2; echo ok > fresh # primed-test"
	e := loadTestExperiment(t, "experiment_id: w\ntasks: [a/task.yaml]\nrepeats: 3\n", map[string]string{
		"a": "task_id: a\ninitial_prompt: p\nagent:\n  type: command\n  command: [/bin/sh, -c, \"" + script + "\"]\n" +
			"sandbox:\n  limits: {timeout: 3s, memory_mb: 256, pids: 128, disk_mb: 64}\n" +
			"success_criteria:\n  - {type: file_exists, path: fresh}\n",
	})
	runs := t.TempDir()
	seen := make(chan [2]int, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		best := [2]int{}
		defer func() { seen <- best }()
		for wctx.Err() == nil {
			if tasks, err := c.TaskService().List(ctx, nil); err == nil {
				running := 0
				for _, tk := range tasks.Tasks {
					if tk.Status.String() == "RUNNING" {
						running++
					}
				}
				if agents := agentsRunning(script); running > best[0] {
					best = [2]int{running, agents}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	res, err := Run(ctx, e, Options{Run: supervisor.Options{Client: c, RunsDir: runs, Grace: time.Second, IDs: warmIDs}, Parallel: 1, Ahead: 2})
	stop()
	if err != nil {
		t.Fatal(err)
	}
	if best := <-seen; best[0] != 3 || best[1] != 1 {
		t.Errorf("at most %d tasks running with %d agents, want 3 (one agent, two primed inits) and 1", best[0], best[1])
	}
	longest := 0.0
	for _, r := range res.Records {
		res := resultOf(r)
		if res == nil || res.Status != "SUCCESS" || res.Isolation == nil || res.Agent.TimedOut {
			t.Fatalf("run %d: %+v (a deadline counted from the init's start times out the last run)", r.Repeat, res)
		}
		ev, _ := os.ReadFile(filepath.Join(r.Dir, record.EventsFile))
		var due time.Time
		for _, line := range strings.Split(string(ev), "\n") {
			if i := strings.Index(line, `"due":"`); i >= 0 && strings.Contains(line, `"event":"run_due"`) {
				due, _ = time.Parse(time.RFC3339Nano, strings.SplitN(line[i+7:], `"`, 2)[0])
				var w float64
				if j := strings.Index(line, `"waited_s":`); j >= 0 {
					fmt.Sscan(strings.TrimLeft(line[j+11:], " "), &w)
				}
				longest = max(longest, w)
			}
		}
		first, err := os.ReadFile(filepath.Join(r.Dir, record.WorkspaceDir, "first"))
		at, perr := time.Parse("2006-01-02 15:04:05.999999999 -0700", strings.TrimSpace(string(first)))
		// The agent's clock is its file's mtime, which the kernel takes from its coarse clock
		// (one tick behind at most: 10 ms at HZ=100); an agent started before its turn would
		// be a primed sandbox's wait early, over 1 s here (longest, below).
		if due.IsZero() || err != nil || perr != nil || at.Before(due.Add(-10*time.Millisecond)) {
			t.Errorf("run %d: the agent's first instruction at %v (%q, %v, %v), its run due at %v: agent code ran before its turn", r.Repeat, at, first, err, perr, due)
		}
	}
	if longest < 1 {
		t.Errorf("no primed sandbox waited over 1 s for its turn (longest %.2f s): the deadline was not tested", longest)
	}
	nothingLeft(t, ctx, c, runs)
}
