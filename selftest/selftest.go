package selftest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/registry"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/kubernetes"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/verifier"
	"ceval.dev/ceval/wasm"
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

// NotAttemptedClasses are the attacks the suite cannot mount from the image: mock attacks the
// agent has no means for or that would only wait out a timeout. The suite says so instead of
// pretending to test them. (The kernel-layer calls no busybox tool makes are the attack
// kernel-syscalls, whose agent is cmd/ceval-probe.)
var NotAttemptedClasses = []NotAttempted{
	{"mock-second-uid", "a second UID on the mock socket: the agent has one UID and no way to change it (see priv-setuid, priv-su)"},
	{"mock-slow-socket", "a slow request written straight to the mock socket: busybox has no Unix-socket client, so only slow calls through the tool are attempted (mock-slow-clients); raw slow connections are bounded by mockd's per-connection timeout, tested in package mockd"},
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
	Image     string         // run every attack in this image; "" keeps the tasks' (the default image)
	Only      []string       // attack names; empty runs the whole suite
	RunsDir   string         // "" uses a private directory under a temp dir
	Version   string
	Busybox   string // for building the default image on first use
	InitDir   string
	Preflight *images.PreflightCache
	IDs       sandbox.IDRange // user namespace host IDs (ceval's config id_range); zero: the default
	// Progress, when set, hears each row as soon as its attack is done.
	Progress func(Row)
	// Executor grades the attacks' executing criteria (run_command); nil starts a WASM
	// executor on first need (the binary must call worker.Main (wasm/worker) on worker.Command).
	Executor grader.Executor
	// Self is the ceval binary the loader attacks run `validate` with; "" is this one.
	Self string
	// WASM configures the executor started on first need (its Python source is the
	// suite's own); the zero value suits a rootful ceval.
	WASM wasm.Options
	// Kube runs every attack's agent as a Pod of a cluster (ceval selftest --backend
	// kubernetes); an attack whose task that backend refuses is skipped with the reason.
	Kube *kubernetes.Options
}

// grace is the time between SIGTERM and SIGKILL for every attack: short, so the suite stays
// fast, and the SIGTERM-ignoring attack outlives it by design.
const grace = time.Second

// hangGuard bounds one attack beyond its own budget (runBudget): a grader that blocks (on a
// FIFO, say) is stopped and reported instead of hanging the suite. It covers what no budget
// of the task bounds (the image's preflight, the snapshot, compiling the sandbox's modules),
// so that a working ceval never meets it, however loaded the machine.
const hangGuard = 90 * time.Second

// runBudget is what a run of t may take by its own declarations: each of its agent runs
// (iterations) with its timeout, its setup and after_agent steps and its executing criteria
// with theirs, and its services' readiness waits. The hang guard starts only past it: a guard shorter than the budgets a task
// declares cut wasm-pytest-hijack's grading (its pytest criterion may take 300 s) on a
// loaded machine, with CPython compiled cold, at its agent timeout plus 90 s.
func runBudget(t *task.Task) time.Duration {
	round := t.Sandbox.Limits.Timeout
	for _, st := range append(append([]task.Step{}, t.Setup...), t.AfterAgent...) {
		round += st.Timeout
	}
	for i := range t.Criteria {
		if c := &t.Criteria[i]; c.Executes() {
			round += cmp.Or(c.Execution().Timeout, task.DefaultCheckTimeout)
		}
	}
	rounds := 1
	if t.Iterations != nil && t.Iterations.Max > 1 {
		rounds = t.Iterations.Max
	}
	var ready time.Duration // the services' readiness waits, once per run
	for _, s := range t.Services {
		ready += time.Duration(s.Ready.Retries) * (s.Ready.Interval + s.Ready.Timeout)
	}
	return time.Duration(rounds)*round + ready
}

// Run runs the selected attacks one after another through supervisor.Run, each with a fresh
// canary, and classifies them. The error is for failures before any attack could run
// (unknown names, no temp dir); a failing attack is a row.
func Run(ctx context.Context, o Options) (*Report, error) {
	attacks, err := Select(o.Only)
	if err != nil {
		return nil, err
	}
	root, err := tempdir.Make("", "ceval-selftest-")
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
			_ = tempdir.RemoveTree(filepath.Join(root, "tasks"))
			_ = tempdir.Keep(root) // ceval gc leaves it too
		} else if err := tempdir.Remove(root); err != nil { // said, not silently left
			fmt.Fprintf(os.Stderr, "ceval: selftest: %v\n", err)
		}
	}()
	if err := os.Mkdir(filepath.Join(root, "tasks"), 0o700); err != nil {
		return nil, err
	}
	rep := &Report{Attacks: []Row{}, NotAttempted: NotAttemptedClasses, RunsDir: runsDir}
	runID := record.NewRunID(time.Now())
	ex := &lazyExecutor{ex: o.Executor, wasm: o.WASM, verifier: verifier.Options{Client: o.Client, Busybox: o.Busybox, Preflight: o.Preflight, InitDir: o.InitDir, IDs: o.IDs, Grace: grace}}
	defer ex.close()
	probe := &probeImage{c: o.Client, busybox: o.Busybox}
	defer probe.remove(ctx)
	for _, a := range attacks {
		row := runAttack(ctx, a, o, ex, probe, filepath.Join(root, "tasks", a.Name), runsDir, runID)
		rep.Attacks = append(rep.Attacks, row)
		if o.Progress != nil {
			o.Progress(row)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if private {
		// Interrupted, the stopped runs prove nothing: kept only as a breach's evidence.
		keep = !rep.Passed() && ctx.Err() == nil || rep.Count(Breach) > 0
		if !keep { // everything passed: the run directories go with the temp dir
			rep.RunsDir = ""
			for i := range rep.Attacks {
				rep.Attacks[i].RunDir = ""
			}
		}
	}
	return rep, nil
}

// lazyExecutor starts the WASM executor when the first attack with an executing criterion
// needs it, so a selection without one pays nothing; sandbox: container criteria run in
// verifier containers over the suite's containerd.
type lazyExecutor struct {
	ex       grader.Executor
	started  *wasm.Executor
	ctr      *verifier.Executor
	err      error
	wasm     wasm.Options
	verifier verifier.Options
}

func (l *lazyExecutor) get() (grader.Executor, error) {
	if l.ex == nil && l.err == nil {
		o := l.wasm
		o.Python = images.PythonSource(nil)
		e, err := wasm.NewExecutor(o)
		if err != nil {
			l.err = fmt.Errorf("WASM sandbox for executing criteria: %w", err)
		} else {
			tiers := grader.Tiers{WASM: e}
			if v, err := verifier.New(l.verifier); err == nil {
				tiers.Container, l.ctr = v, v
			} else {
				tiers.ContainerMissing = err.Error()
			}
			l.ex, l.started = tiers, e
		}
	}
	return l.ex, l.err
}

func (l *lazyExecutor) close() {
	if l.started != nil {
		_ = l.started.Close()
	}
	if l.ctr != nil {
		_ = l.ctr.Close() // the lent pytest's copy
	}
}

func runAttack(ctx context.Context, a Attack, o Options, lex *lazyExecutor, probe *probeImage, taskDir, runsDir, runID string) Row {
	start := time.Now()
	row := Row{Name: a.Name, Tried: a.Tried}
	done := func(out Outcome, score float64, detail string) Row {
		row.Outcome, row.Score, row.Detail = out, score, detail
		row.Seconds = time.Since(start).Seconds()
		return row
	}
	if a.loader != nil {
		self := o.Self
		if self == "" {
			var err error
			if self, err = os.Executable(); err != nil {
				return done(Errored, 0, "finding the ceval binary to validate with: "+err.Error())
			}
		}
		return runLoaderAttack(ctx, *a.loader, self, taskDir)
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
	s := setups[a.Name]
	t, err := task.Load(filepath.Join(taskDir, "task.yaml"))
	switch {
	case err != nil && s.refused != "" && strings.Contains(err.Error(), s.refused):
		return done(Blocked, 0, "refused at validation: "+clip(err.Error(), 200))
	case err != nil:
		return done(Errored, 0, "the attack's task does not load: "+err.Error())
	}
	defer t.Close()
	if o.Image != "" && !s.probe && !s.registry {
		t.Sandbox.Image = o.Image
	}
	if o.Kube != nil {
		if s.kube != nil {
			if why := s.kube(o.Kube); why != "" {
				return done(Skipped, 0, "not applicable on the kubernetes backend: "+why)
			}
		}
		if s.probe {
			return done(Skipped, 0, "not applicable on the kubernetes backend: its probe image is built in the local containerd")
		}
		if err := kubernetes.Check(t); err != nil {
			return done(Skipped, 0, "not applicable on the kubernetes backend: "+err.Error())
		}
	}
	if s.rootful != "" && !local.RootVerifierSupported() {
		return done(Skipped, 0, "not applicable on a rootless containerd: "+s.rootful)
	}
	if why := judgeImageMissing(ctx, o, t); why != "" {
		return done(Skipped, 0, why)
	}
	if s.probe {
		if err := probe.ensure(ctx); err != nil {
			return done(Errored, 0, err.Error())
		}
	}
	var ex grader.Executor
	for i := range t.Criteria {
		if t.Criteria[i].Executes() {
			if ex, err = lex.get(); err != nil {
				return done(Errored, 0, err.Error())
			}
			break
		}
	}
	env := s.env
	var prov *fakeProvider
	if s.provider {
		if prov, err = startFakeProvider(); err != nil {
			return done(Errored, 0, "starting the fake model provider: "+err.Error())
		}
		defer prov.close()
		env = map[string]string{"CEVAL_ANTHROPIC_BASE_URL": prov.url}
		for k, v := range s.env {
			env[k] = v
		}
	}
	var stub *judgeStub
	var runJudge *judge.Judge
	if s.judge {
		if stub, err = startJudgeStub(); err != nil {
			return done(Errored, 0, "starting the stub judge model: "+err.Error())
		}
		defer stub.close()
		runJudge = stub.judge()
	}
	var raceErr error
	raced := false
	progress := func(event string, _ map[string]any) {
		if s.race != nil && !raced && raceErr == nil {
			raced, raceErr = s.race(event, taskDir, canary)
		}
	}
	budget := runBudget(t)
	actx, cancel := context.WithTimeout(ctx, budget+hangGuard)
	defer cancel()
	var pins *images.Pinner
	if s.registry { // the task author's registry: no credentials, no hosts file of the user's
		pins = images.NewPinner(images.PullMissing, registry.Options{HostsDir: filepath.Join(taskDir, "no-hosts"), DockerConfig: filepath.Join(taskDir, "no-docker-config.json")})
	}
	res, runErr := supervisor.Run(actx, t, supervisor.Options{
		RunsDir: runsDir, RunID: runID, Client: o.Client,
		Grace: grace, Version: o.Version, Preflight: o.Preflight, Busybox: o.Busybox, InitDir: o.InitDir,
		Executor: ex, LookupEnv: lookupEnv(env, canary), IDs: o.IDs, Progress: progress, Backend: backend(o.Kube, pins), Pins: pins,
		Judge: runJudge,
	})
	if s.registry {
		if msg := hostileRegistry().reached(); msg != "" {
			return done(Breach, score(res), msg)
		}
	}
	if s.race != nil && (!raced || raceErr != nil) {
		return done(Errored, score(res), fmt.Sprintf("the task author's race did not run (%v), so the attack proved nothing", raceErr))
	}
	if res != nil {
		row.RunDir = res.Dir
	}
	if runErr != nil && ctx.Err() != nil {
		return done(Errored, 0, "selftest interrupted")
	}
	if runErr != nil && actx.Err() != nil {
		runErr = fmt.Errorf("the run did not end within its budget (%s: timeouts of its agent, steps and executing criteria) plus %s: %w", budget, hangGuard, runErr)
	}
	var ie *sandbox.InputError
	refused := errors.As(runErr, &ie)
	switch {
	case s.refused != "" && refused && strings.Contains(runErr.Error(), s.refused):
		return done(Blocked, 0, "refused before the agent started: "+clip(runErr.Error(), 200))
	case refused:
		return done(Errored, 0, "the attack's task was refused: "+runErr.Error())
	case s.refused != "" && runErr == nil:
		return done(Breach, score(res), "the run went ahead; it must be refused with an input error ("+s.refused+")")
	}
	e := evidence{res: res, runErr: runErr}
	if runErr == nil {
		e.log, e.leaks = gather(res, canary)
		if s.check != nil {
			if l := s.check(res); l != "" {
				e.leaks = append(e.leaks, l)
			}
		}
		if prov != nil {
			key := strings.ReplaceAll(s.env["ANTHROPIC_API_KEY"], canaryPlaceholder, canary)
			e.leaks = append(e.leaks, runDirLeaks(res, key)...)
			if out, sc, detail := classify(e); out != Breach && !prov.sawKey(key) {
				return done(Errored, sc, "the fake provider was never sent the real key, so the attack proved nothing ("+detail+")")
			}
		}
		if stub != nil {
			if out, sc, detail := classify(e); out != Breach {
				if _, refused := stub.counts(); refused == 0 {
					return done(Errored, sc, "the stub judge model never refused a request as over its context, so the attack proved nothing ("+detail+")")
				}
			}
		}
	}
	return done(classify(e))
}

func score(res *record.Result) float64 {
	if res == nil {
		return 0
	}
	return res.Score
}

// lookupEnv is ceval's own environment for one attack: the host's, with the attack's
// variables (canary substituted) on top; nil when the attack sets none.
func lookupEnv(env map[string]string, canary string) func(string) (string, bool) {
	if len(env) == 0 {
		return nil
	}
	return func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return strings.ReplaceAll(v, canaryPlaceholder, canary), true
		}
		return os.LookupEnv(k)
	}
}

// backend is the Kubernetes backend of kube (pinning through pins), or nil for the local one.
func backend(kube *kubernetes.Options, pins *images.Pinner) sandbox.Backend {
	if kube == nil {
		return nil
	}
	return kubernetes.New(pins, *kube)
}
