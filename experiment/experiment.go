package experiment

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/kube"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/registry"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/kubernetes"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// DefaultRetries is how often a run that failed before its agent started is tried again.
const DefaultRetries = 1

// NewPlan fixes an experiment's plan, hashing each merged task with its material.
func NewPlan(e *task.Experiment) (*record.Plan, error) {
	p := &record.Plan{ExperimentID: e.ID, Experiment: e.Path, Overrides: e.Overrides, Tags: e.Tags,
		Root: e.UserRoot, ExcludeTags: e.ExcludeTags, Tasks: e.TaskFiles, Repeats: e.Repeats, Variants: e.Variants}
	for _, en := range e.Entries {
		sum, err := task.Digest(en.Task)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", en.Task.Path, err)
		}
		pe := record.PlanEntry{Variant: en.Variant, TaskID: en.Task.ID, TaskPath: en.Task.Path, TaskSHA256: sum}
		if en.PromptVaried {
			pe.Prompt = en.Task.Prompt
			for _, st := range en.Task.TaskSteps {
				pe.StepPrompts = append(pe.StepPrompts, st.Prompt)
			}
		}
		p.Entries = append(p.Entries, pe)
	}
	if s := e.StopEarly; s != nil {
		p.StopEarly = &record.PlanStop{Compare: s.Compare, Metric: s.Metric, Confidence: s.Confidence, MinRuns: s.MinRuns}
	}
	return p, nil
}

// Options configure Run.
type Options struct {
	Run      supervisor.Options // shared by every run; RunID names the experiment's directory, Variant and Repeat are set per run
	Parallel int                // runs at once; 0 = the experiment's parallel, else DefaultParallel; AutoParallel: -j auto
	Retries  int                // tries again a run that failed before its agent started; < 0 = none
	Resume   bool               // RunsDir/RunID holds an earlier, interrupted start of the same plan
	// PromptsFrom is an earlier experiment directory whose rephrased prompts (prompts.json)
	// are reused where their input matches, so a re-run asks the model nothing again.
	PromptsFrom string
	// Agent is --agent as given (the tasks' agents are already replaced), kept in plan.json.
	Agent string
	// Ahead is how many runs are prepared ahead of their turn (warm sandboxes: directory,
	// servers, image, sandbox created and readied; see supervisor.Prepare) while others
	// execute: 0 = one more than run at once, < 0 = none. Never on Kubernetes.
	Ahead int

	OnStart  func(record.PlannedRun, *record.PlanEntry) // optional, called from the worker
	OnFinish func(*RunRecord)                           // optional, called from the worker
	OnRetry  func(rec *RunRecord, err error)            // optional
	// OnConcurrency (optional) hears -j auto's choices: the runs at once and why; current
	// reads the limit at any later time.
	OnConcurrency func(parallel int, current func() int, reason string)
}

// RunRecord is how one planned run ended.
type RunRecord struct {
	record.PlannedRun
	Variant string
	TaskID  string
	Dir     string
	// Result is the run's result.json as the callbacks (OnFinish) hear it; nil when the run
	// made none. Result.Records keep only the Outcome (Result nil): an experiment's memory
	// stays flat however many runs it has; ReadResult reads the rest back from Dir.
	Result   *record.Result
	Outcome  *Outcome // nil when the run made no result.json
	Err      error
	Resumed  bool // complete in an earlier start; not run again
	Attempts int  // 0 when resumed or never started
}

// Outcome is what an experiment keeps of a run's result in memory.
type Outcome struct {
	Status      string
	Score       float64
	Complete    bool
	Interrupted bool
}

// ReadResult reads the run's result.json back from its directory (nil, nil when it has none).
func (r *RunRecord) ReadResult() (*record.Result, error) {
	res, err := record.ReadResult(r.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return res, err
}

// kept is what Result.Records holds of rec once its callbacks heard it: the record
// without its Result, the outcome in its place.
func (r *RunRecord) kept() *RunRecord {
	k := *r
	if res := r.Result; res != nil {
		k.Outcome = &Outcome{Status: res.Status, Score: res.Score, Complete: res.Complete, Interrupted: res.Interrupted}
	}
	k.Result = nil
	return &k
}

// Result is every planned run's record, in plan order; Interrupted when the
// context was cancelled before all ran.
type Result struct {
	Dir         string
	Plan        *record.Plan
	Records     []*RunRecord // nil entries were never started; each without its Result (see RunRecord.Outcome)
	Interrupted bool
	// StoppedEarly is set when stop_early decided in this start: the runs not launched are
	// nil in Records, and a resume completes them.
	StoppedEarly *record.EarlyStop
	// Concurrency is how -j auto chose the runs at once; nil at a fixed -j.
	Concurrency *record.Concurrency
}

// The scheduler's two calls out of the process, variables so its unit tests can give
// it a fake sandbox: the image resolve before the pool, and one attempt run as it comes.
var (
	resolveSandbox = images.ResolveSandbox
	runAttempt     = supervisor.Run
)

// DefaultParallel is how many runs fit at once: one per CPU, and no more than the host's
// available memory holds at memoryMB each; at least 1.
func DefaultParallel(memoryMB int64) int {
	n := runtime.NumCPU()
	if avail := availableMemoryMB(); avail > 0 && memoryMB > 0 {
		n = min(n, int(avail/memoryMB))
	}
	return max(n, 1)
}

func availableMemoryMB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb >> 10
		}
	}
	return 0
}

// Run runs every (variant, task, repeat) of e in a bounded pool, each run fully
// independent (supervisor.Run: its own container, workspace and directory), under
// RUNS/<run_id>/<variant>/<task_id>/<repeat>/, with plan.json beside them. When ctx is
// cancelled it launches nothing more; running runs are stopped and cleaned up by supervisor.Run.
// A resume skips runs whose result.json is complete and refuses a different plan.
func Run(ctx context.Context, e *task.Experiment, o Options) (*Result, error) {
	o.Run = o.Run.WithDefaults(time.Now())
	onKube := kubeOptions(o.Run.Backend) != nil
	expDir := filepath.Join(o.Run.RunsDir, o.Run.RunID)
	// Every entry is checked before anything starts: a bad task fails the experiment here,
	// never run by run once the pool started.
	for _, en := range e.Entries {
		if err := supervisor.Check(en.Task, o.Run); err != nil {
			return nil, &sandbox.InputError{Err: fmt.Errorf("%s (variant %s): %w", en.Task.ID, en.Variant, errors.Unwrap(err))}
		}
	}
	if !o.Resume {
		if err := os.MkdirAll(o.Run.RunsDir, 0o700); err != nil {
			return nil, &supervisor.InfraError{Err: err}
		}
		if err := os.Mkdir(expDir, 0o700); err != nil {
			return nil, &supervisor.InfraError{Err: fmt.Errorf("experiment directory: %w", err)}
		}
	}
	// Rephrased prompts are made (or, on a resume, read back) before the plan, whose digests
	// cover every prompt. A fresh start that fails here leaves no experiment directory.
	if err := experimentPrompts(ctx, e, expDir, o); err != nil {
		if !o.Resume {
			os.RemoveAll(expDir)
		}
		return nil, err
	}
	plan, err := NewPlan(e)
	if plan != nil {
		plan.Agent = o.Agent
	}
	if err != nil {
		if !o.Resume {
			os.RemoveAll(expDir)
		}
		return nil, &supervisor.InfraError{Err: err}
	}
	var oldImages []record.ImagePin
	if o.Resume {
		old, err := record.ReadPlan(expDir)
		if err != nil {
			return nil, &sandbox.InputError{Err: fmt.Errorf("resume %s: %w", expDir, err)}
		}
		if d := old.Diff(plan); d != "" {
			return nil, &sandbox.InputError{Err: fmt.Errorf("resume %s: the experiment differs from its plan.json: %s", expDir, d)}
		}
		oldImages = old.Images
	}
	// Every image a task names is pinned to a digest before the first run (a resume keeps
	// the digests plan.json holds): a tag moved during the experiment changes no run.
	if err := pinImages(ctx, e, o.Run, oldImages, plan); err != nil {
		if !o.Resume {
			os.RemoveAll(expDir)
		}
		return nil, err
	}
	if !o.Resume || len(plan.Images) != len(oldImages) {
		if err := record.WriteJSONAtomic(filepath.Join(expDir, record.PlanFile), plan); err != nil {
			return nil, &supervisor.InfraError{Err: err}
		}
	}
	if len(plan.Images) > 0 && !onKube {
		if err := images.MarkPinned(ctx, o.Run.Client, plan.Images, o.Run.RunID, expDir); err != nil {
			return nil, &supervisor.InfraError{Err: err}
		}
	}
	// Every image once, before the pool: the default one is built on first use, and a bad
	// image fails the experiment before any run.
	// On a cluster the nodes resolve the images; what the backend cannot run fails the
	// experiment before any run instead.
	resolved := map[string]bool{}
	for _, en := range e.Entries {
		if onKube {
			continue // Check refused what the cluster cannot run
		}
		if img := en.Task.Sandbox.Image; !resolved[img] {
			if _, err := resolveSandbox(ctx, o.Run.Client, en.Task.Sandbox, o.Run.Pins, o.Run.Preflight, o.Run.Busybox, nil); err != nil {
				return nil, &supervisor.InfraError{Err: fmt.Errorf("image %s: %w", img, err)}
			}
			resolved[img] = true
		}
	}
	runs := plan.Runs()
	parallel := requestedParallel(o.Parallel, e)
	var auto *autoJobs
	var host hostReader
	if parallel == AutoParallel {
		// As many workers as it may ever let run; the gate lets auto's limit of them.
		parallel = max(1, min(len(runs), 8*runtime.NumCPU(), task.MaxParallel))
		auto = newAutoJobs(e, parallel, host.read())
	}
	if parallel <= 0 {
		parallel = e.Parallel
	}
	if parallel <= 0 {
		var mem int64
		for _, en := range e.Entries {
			mem = max(mem, en.Task.Sandbox.Limits.MemoryMB)
		}
		parallel = DefaultParallel(mem)
	}

	out := &Result{Dir: expDir, Plan: plan, Records: make([]*RunRecord, len(runs))}
	stop, err := experimentStopper(e, plan, runs, expDir, o.Resume)
	if err != nil {
		return nil, err
	}
	var stopped <-chan struct{}
	if stop != nil {
		stopped = stop.stopped
	}
	g := newGate(parallel)
	if auto != nil {
		g.setLimit(auto.current())
	}
	ahead := o.Ahead
	if ahead == 0 {
		ahead = g.limit + 1 // one more than run at once: the next is being made while one is taken
	}
	if ahead < 0 || onKube {
		ahead = 0 // a Pod is not made ahead of its turn
	}
	ahead = aheadFor(ahead, parallel, e, o.Run.IDs)
	var stopErr error
	var stopOnce sync.Once
	dueRuns := feedRuns(ctx, e, plan, expDir, runs, o, ahead, stopped)
	var wg sync.WaitGroup
	// A run prepared ahead is deleted and recorded off its worker's path (finishing), at
	// most parallel at once.
	fin := &finisher{slots: make(chan struct{}, parallel), sync: stop != nil}
	var finished atomic.Int64
	adjusted := func(n int, changed bool) {
		if changed {
			g.setLimit(n)
			if o.OnConcurrency != nil {
				o.OnConcurrency(n, auto.current, auto.reason())
			}
		}
	}
	if auto != nil && o.OnConcurrency != nil {
		o.OnConcurrency(auto.current(), auto.current, auto.reason())
	}
	for range min(parallel, len(runs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				g.acquire()
				free := time.Now() // the next run's turn: its sandbox is late if not ready by now
				d, ok := <-dueRuns
				if !ok {
					g.release()
					return
				}
				d.due = free
				d.taken()
				if stop != nil && stop.isStopped() || ctx.Err() != nil {
					d.discard(ctx) // decided while this run waited for its turn
					g.release()
					continue
				}
				runPlanned(ctx, e, plan, expDir, runs[d.i], o, d, fin, func(rec *RunRecord) {
					n := finished.Add(1)
					if auto != nil && rec != nil {
						adjusted(auto.observe(rec.Result, int(n), time.Now()))
					}
					if stop != nil {
						if err := stop.observe(d.i, rec); err != nil {
							stopOnce.Do(func() { stopErr = err })
						}
					}
					if rec != nil {
						rec = rec.kept() // the result is on disk; memory stays flat over the runs
					}
					out.Records[d.i] = rec
				})
				g.release()
			}
		}()
	}
	stopLooking := make(chan struct{})
	looked := make(chan struct{})
	go func() {
		defer close(looked)
		if auto == nil {
			return
		}
		tick := time.NewTicker(autoLook)
		defer tick.Stop()
		for {
			select {
			case <-stopLooking:
				return
			case now := <-tick.C:
				adjusted(auto.look(host.read(), g.inUse(), int(finished.Load()), now))
			}
		}
	}()
	wg.Wait()
	fin.wg.Wait()
	close(stopLooking)
	<-looked
	if auto == nil {
		os.Remove(filepath.Join(expDir, record.ConcurrencyFile)) // an earlier start's at -j auto: not this one's
	} else {
		out.Concurrency = auto.record()
		if err := record.WriteJSONAtomic(filepath.Join(expDir, record.ConcurrencyFile), out.Concurrency); err != nil {
			return out, &supervisor.InfraError{Err: err}
		}
	}
	if stop != nil && stop.record != nil {
		out.StoppedEarly = stop.record
		if stopErr != nil {
			return out, &supervisor.InfraError{Err: fmt.Errorf("record the early stop: %w", stopErr)}
		}
	}
	for _, r := range out.Records {
		if r == nil && out.StoppedEarly == nil || r != nil && r.Outcome != nil && r.Outcome.Interrupted {
			out.Interrupted = true
		}
	}
	out.Interrupted = out.Interrupted || ctx.Err() != nil
	if !out.Interrupted && out.StoppedEarly == nil && len(plan.Images) > 0 && !onKube {
		// Finished: images prune may take its images again once no run uses them.
		_ = images.MarkPinned(context.WithoutCancel(ctx), o.Run.Client, plan.Images, o.Run.RunID, "")
	}
	return out, nil
}

// pinImages pins every image the experiment's tasks name (sandbox.image, verifier
// criteria's images; ceval's own are named by their inputs and not pinned) into plan, the
// pins of an earlier start first. On a cluster whose nodes pull from a registry the tags
// are resolved there, not pulled here, ceval's own images and the init image too where
// kubernetes.registry maps them; images imported into the nodes (pull policy Never) are not
// pinned.
func pinImages(ctx context.Context, e *task.Experiment, o supervisor.Options, old []record.ImagePin, plan *record.Plan) error {
	k := kubeOptions(o.Backend)
	if o.Pins == nil || k != nil && k.PullPolicy == kube.PullNever {
		plan.Images = old
		return nil
	}
	o.Pins.Set(old)
	for i, en := range e.Entries {
		names := taskImages(en.Task)
		if k != nil && i == 0 {
			if _, mapped := k.Registry.Ref(k.InitImage); mapped {
				names = append(names, k.InitImage) // the Pods' init image, pushed with the rest
			}
		}
		for _, name := range names {
			if k != nil {
				// ceval's own images, where ceval images push --kubernetes put them
				// (kubernetes.registry): pinned as the registry images are.
				if ref, ok := k.Registry.Ref(name); ok {
					name = ref
				}
			}
			if !images.Pinnable(name) {
				continue
			}
			var err error
			if k != nil {
				_, err = o.Pins.Remote(ctx, name)
			} else {
				_, err = o.Pins.Pin(ctx, o.Client, name)
			}
			if err != nil {
				err = fmt.Errorf("image %s (task %s): %w", name, en.Task.ID, err)
				if errors.Is(err, registry.ErrConfig) || errors.Is(err, registry.ErrRefused) || errors.Is(err, errdefs.ErrNotFound) {
					return &sandbox.InputError{Err: err}
				}
				return &supervisor.InfraError{Err: err}
			}
		}
	}
	plan.Images = o.Pins.Pins()
	return nil
}

// taskImages lists the images a task's runs use: its sandbox's and its verifier
// criteria's.
func taskImages(t *task.Task) []string {
	out := []string{t.Sandbox.Image}
	for i := range t.Criteria {
		if v := t.Criteria[i].Verifier(); v != nil && !slices.Contains(out, v.Image) {
			out = append(out, v.Image)
		}
	}
	return out
}

// runPlanned runs one planned run, unless an earlier start completed it, retrying only a
// failure that happened before the agent started, and gives done its record (nil when it
// was not run). d.first, when set, is its first attempt, prepared ahead (a warm sandbox),
// whose deletion and record fin does after its grade, in the background, when no retry can
// follow; the retries start cold.
func runPlanned(ctx context.Context, e *task.Experiment, plan *record.Plan, expDir string, pr record.PlannedRun, o Options, d *dueRun, fin *finisher, done func(*RunRecord)) {
	en := plan.Entries[pr.Entry]
	rec := d.rec
	if rec == nil {
		rec = newRecord(plan, expDir, pr)
	}
	if rec.Resumed {
		if o.OnFinish != nil {
			o.OnFinish(rec)
		}
		done(rec)
		return
	}
	if ctx.Err() != nil {
		d.discard(ctx)
		done(nil)
		return
	}
	if d.first == nil && rec.Err == nil {
		clearDir(rec)
	}
	if rec.Err != nil {
		done(rec)
		return
	}
	if o.OnStart != nil {
		o.OnStart(pr, &en)
	}
	finished := func() {
		if o.OnFinish != nil {
			o.OnFinish(rec)
		}
		done(rec)
	}
	t := e.Entries[pr.Entry].Task
	retries := o.Retries
	for attempt := 1; ; attempt++ {
		var res *record.Result
		var err error
		a := d.first
		switch {
		case attempt > 1 || a == nil:
			a = &try{}
			res, err = runAttempt(ctx, t, attemptOptions(o, en, pr, attempt, a))
		default:
			err = a.p.Execute(ctx, d.due)
			if err == nil || a.started.Load() {
				// Nothing of the agent's runs any more, and no retry can follow.
				fin.do(func() {
					rec.Result, rec.Err = a.p.Finish(ctx, err)
					rec.Attempts = 1
					finished()
				})
				return
			}
			res, err = a.p.Finish(ctx, err)
		}
		started := a.started.Load()
		rec.Result, rec.Err, rec.Attempts = res, err, attempt
		var infra *supervisor.InfraError
		var lost *kube.PodLostError
		// After the agent started, only a loss it could not have caused is tried again:
		// an eviction for the node's pressure could be the agent's own doing.
		podLost := errors.As(err, &lost) && !lost.AgentCouldCause()
		if err == nil || started && !podLost || !errors.As(err, &infra) || ctx.Err() != nil || attempt > retries {
			break
		}
		// Before the agent started nothing of the agent's can have happened, and a Pod lost
		// for a reason that is not the agent's (deleted, evicted for the node's pressure,
		// never scheduled) ended nothing the agent did: try again, and say so in the run's
		// events. A Pod its own limits ended is a kube.PodLimitError, never retried.
		fields := map[string]any{"attempt": attempt + 1, "error": err.Error()}
		if kept := keepAttemptLogs(rec.Dir, attempt); kept != "" {
			fields["services_logs"] = kept
		}
		if ev, eerr := supervisor.OpenEvents(rec.Dir, nil); eerr == nil {
			ev.Emit("retry", fields)
			ev.Close()
		}
		if o.OnRetry != nil {
			o.OnRetry(rec, err)
		}
	}
	finished()
}

// experimentStopper returns the stop_early test of a start, nil when there is none: the
// experiment has no stop_early, or a resume completes an experiment it stopped (the
// resume is marked in stopped_early.json). A resume of an experiment interrupted before
// the test decided tests on, over the runs the earlier start completed too.
func experimentStopper(e *task.Experiment, plan *record.Plan, runs []record.PlannedRun, expDir string, resume bool) (*stopper, error) {
	if e.StopEarly == nil {
		return nil, nil
	}
	if resume {
		prev, err := record.ReadEarlyStop(expDir)
		switch {
		case err == nil:
			if prev.Resumed == "" {
				prev.Resumed = time.Now().UTC().Format(time.RFC3339)
				if err := record.WriteJSONAtomic(filepath.Join(expDir, record.StopFile), prev); err != nil {
					return nil, &supervisor.InfraError{Err: err}
				}
			}
			return nil, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, &supervisor.InfraError{Err: err}
		}
	}
	return newStopper(e.StopEarly, plan, runs, expDir), nil
}

// keepAttemptLogs moves a failed attempt's service logs (services/, which a run creates
// afresh and never overwrites) to services.attempt-N/ before the run is tried again, so the
// retry starts with none and the log that says why the attempt failed (a service that never
// became ready) is kept beside it. It returns the directory they went to, "" when there were none.
func keepAttemptLogs(dir string, attempt int) string {
	from := filepath.Join(dir, record.ServicesDir)
	if _, err := os.Lstat(from); err != nil {
		return ""
	}
	to := fmt.Sprintf("%s.attempt-%d", record.ServicesDir, attempt)
	if err := os.Rename(from, filepath.Join(dir, to)); err != nil {
		return ""
	}
	return to
}

// requestedParallel is the runs at once asked for: the command line's (-j N or auto), else
// the experiment file's `parallel: auto` as AutoParallel; 0 leaves it to the file's number or
// the default.
func requestedParallel(flag int, e *task.Experiment) int {
	if flag == 0 && e.ParallelAuto {
		return AutoParallel
	}
	return flag
}

// kubeOptions are the Kubernetes backend's options when b runs the sandboxes as Pods of a
// cluster; nil for another backend.
func kubeOptions(b sandbox.Backend) *kubernetes.Options {
	if k, ok := b.(kubernetes.Backend); ok {
		o := k.Options()
		return &o
	}
	return nil
}
