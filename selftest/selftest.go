package selftest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// Row is one attack's line of the report.
type Row struct {
	Name    string  `json:"name"`
	Tried   string  `json:"tried"`
	Outcome Outcome `json:"outcome"`
	Score   float64 `json:"score"`
	Detail  string  `json:"detail,omitempty"`
	RunDir  string  `json:"run_dir,omitempty"`
	Seconds float64 `json:"seconds"`
}

// NotAttempted is an attack class the suite documents but cannot mount from the image.
type NotAttempted struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// NotAttemptedClasses are the kernel-layer preconditions no busybox tool reaches; the suite
// says so instead of pretending to test them. The agent's seccomp profile is containerd's
// default, and the attacks above check that it is on.
var NotAttemptedClasses = []NotAttempted{
	{"kernel-keyctl", "keyctl(2): no busybox tool makes the call"},
	{"kernel-bpf", "bpf(2): no busybox tool makes the call"},
	{"kernel-io-uring", "io_uring_setup(2): no busybox tool makes the call"},
	{"kernel-perf-event-open", "perf_event_open(2): no busybox tool makes the call"},
	{"kernel-userfaultfd", "userfaultfd(2): no busybox tool makes the call"},
	{"mock-gateway-plugin-wasm", "mock servers, the model gateway, plugin bundles and WASM criteria are not in this build's product path yet"},
}

// Report is the whole selftest.
type Report struct {
	Attacks      []Row          `json:"attacks"`
	NotAttempted []NotAttempted `json:"not_attempted"`
	// RunsDir holds every attack's run directory; "" when it was a private temp dir,
	// removed because everything passed.
	RunsDir string `json:"runs_dir,omitempty"`
}

// Count returns how many rows have outcome o.
func (r *Report) Count(o Outcome) int {
	n := 0
	for _, a := range r.Attacks {
		if a.Outcome == o {
			n++
		}
	}
	return n
}

// Passed reports whether every attack was blocked, detected or skipped with score 0.
func (r *Report) Passed() bool {
	for _, a := range r.Attacks {
		if a.Score != 0 || (a.Outcome != Blocked && a.Outcome != Detected && a.Outcome != Skipped) {
			return false
		}
	}
	return true
}

// Options configure Run.
type Options struct {
	Client    *client.Client // connected; the ctx given to Run carries the namespace
	Namespace string
	Image     string   // run every attack in this image; "" keeps the tasks' (the default image)
	Only      []string // attack names; empty runs the whole suite
	RunsDir   string   // "" uses a private directory under a temp dir
	Version   string
	Busybox   string // for building the default image on first use
	InitDir   string
	Preflight *images.PreflightCache
	// Progress, when set, hears each row as soon as its attack is done.
	Progress func(Row)
}

// grace is the time between SIGTERM and SIGKILL for every attack: short, so the suite stays
// fast, and the SIGTERM-ignoring attack outlives it by design.
const grace = time.Second

// hangGuard bounds one attack beyond its own timeout: a grader that blocks (on a FIFO, say)
// is stopped and reported instead of hanging the suite.
const hangGuard = 90 * time.Second

// Run runs the selected attacks one after another through supervisor.Run, each with a fresh
// canary, and classifies them. The error is for failures before any attack could run
// (unknown names, no temp dir); a failing attack is a row.
func Run(ctx context.Context, o Options) (*Report, error) {
	attacks, err := Select(o.Only)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "ceval-selftest-")
	if err != nil {
		return nil, err
	}
	runsDir := o.RunsDir
	private := runsDir == ""
	if private {
		runsDir = filepath.Join(root, "runs")
	}
	keep := false // the private runs directory, when something failed
	defer func() {
		if keep {
			_ = os.RemoveAll(filepath.Join(root, "tasks"))
		} else {
			_ = os.RemoveAll(root)
		}
	}()
	if err := os.Mkdir(filepath.Join(root, "tasks"), 0o700); err != nil {
		return nil, err
	}
	rep := &Report{Attacks: []Row{}, NotAttempted: NotAttemptedClasses, RunsDir: runsDir}
	runID := supervisor.NewRunID(time.Now())
	for _, a := range attacks {
		row := runAttack(ctx, a, o, filepath.Join(root, "tasks", a.Name), runsDir, runID)
		rep.Attacks = append(rep.Attacks, row)
		if o.Progress != nil {
			o.Progress(row)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if private {
		keep = !rep.Passed() || ctx.Err() != nil
		if !keep { // everything passed: the run directories go with the temp dir
			rep.RunsDir = ""
			for i := range rep.Attacks {
				rep.Attacks[i].RunDir = ""
			}
		}
	}
	return rep, nil
}

func runAttack(ctx context.Context, a Attack, o Options, taskDir, runsDir, runID string) Row {
	start := time.Now()
	row := Row{Name: a.Name, Tried: a.Tried}
	done := func(out Outcome, score float64, detail string) Row {
		row.Outcome, row.Score, row.Detail = out, score, detail
		row.Seconds = time.Since(start).Seconds()
		return row
	}
	if a.Needs != "" {
		if _, err := exec.LookPath(a.Needs); err != nil {
			return done(Skipped, 0, a.Needs+" is not installed on the host; the attack needs it to build its template")
		}
	}
	canary := NewCanary()
	if err := materialize(a, taskDir, canary); err != nil {
		return done(Errored, 0, "preparing the attack: "+err.Error())
	}
	t, err := task.Load(filepath.Join(taskDir, "task.yaml"))
	if err != nil {
		return done(Errored, 0, "the attack's task does not load: "+err.Error())
	}
	if o.Image != "" {
		t.Sandbox.Image = o.Image
	}
	actx, cancel := context.WithTimeout(ctx, t.Sandbox.Limits.Timeout+hangGuard)
	defer cancel()
	res, runErr := supervisor.Run(actx, t, supervisor.Options{
		RunsDir: runsDir, RunID: runID, Client: o.Client, Namespace: o.Namespace,
		Grace: grace, Version: o.Version, Preflight: o.Preflight, Busybox: o.Busybox, InitDir: o.InitDir,
	})
	if res != nil {
		row.RunDir = res.Dir
	}
	if runErr != nil && ctx.Err() != nil {
		return done(Errored, 0, "selftest interrupted")
	}
	if runErr != nil && actx.Err() != nil {
		runErr = fmt.Errorf("the run did not end within its timeout plus %s: %w", hangGuard, runErr)
	}
	var ie *supervisor.InputError
	if errors.As(runErr, &ie) {
		return done(Errored, 0, "the attack's task was refused: "+runErr.Error())
	}
	e := evidence{res: res, runErr: runErr}
	if runErr == nil {
		e.log, e.leaks = gather(res, canary)
	}
	return done(classify(e))
}
