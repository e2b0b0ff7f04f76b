package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/atif"
	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/phasetime"
	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/registry"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// Options configure one run; the zero value of each optional field takes a sane default.
type Options struct {
	RunsDir string // default ./runs
	RunID   string // default record.NewRunID(now)
	Variant string // default "default"
	Repeat  int    // default 1
	Attempt int    // 0 or 1 for a first try; a retry (see experiment.Run) records its number

	Client *client.Client // connected; the ctx given to Run carries the namespace

	Allow Allow
	// VerifierNetwork is the user's verifier_network ("" or "none", or "host"), recorded in
	// result.json's verifier for a task with sandbox: container criteria; the executor
	// applies it.
	VerifierNetwork string
	LookupEnv       func(string) (string, bool) // host environment; default os.LookupEnv
	Grace           time.Duration
	Version         string                 // ceval's version, recorded in the result
	Preflight       *images.PreflightCache // nil: images.Preflight without a disk cache
	// Pins pins the images tasks name to digests, pulling them as its policy allows; nil:
	// images are only looked up in containerd, by name.
	Pins     *images.Pinner
	Busybox  string                               // for building the default image on first use
	InitDir  string                               // where the static init is installed; default under the user cache dir
	Progress func(event string, f map[string]any) // optional: live events for the CLI
	// ImageWorkdirEnv is sandbox.Config.ImageWorkdirEnv of the agent's sandbox (ceval audit
	// sets it for its built-in agents); "" for none.
	ImageWorkdirEnv string
	Executor        grader.Executor // grades run_command and wasm criteria; nil leaves them NOT_GRADED
	// IDs is the subordinate range runs take their user namespaces' host IDs from (ceval's
	// config id_range); the zero value is sandbox.DefaultIDRange.
	IDs sandbox.IDRange
	// Prices are USD per million tokens by model (the prices table of ceval's config); the
	// gateway prices calls with them, and run_limits.max_usd needs the task's model here.
	Prices map[string]gateway.Price
	// GatewayAllow is, per API, what the model gateway forwards of the agent's requests (the
	// gateway_allow section of ceval's config; a task never sets it); nil: the defaults.
	GatewayAllow map[string]gateway.Allowlist
	// Judge is the judge model of ceval's config, for llm_judge (each run gets its own
	// budget and judge_calls.jsonl); nil: only criteria with a judge_fixture are judged.
	Judge *judge.Judge
	// AgentOverride is ceval run --agent as given, when it replaced the task's agent (the
	// task given to Run already has the replacement); recorded as result.json's agent.override.
	AgentOverride string

	// Backend makes the agent's sandbox: a Pod of a Kubernetes cluster (sandbox/kubernetes,
	// ceval run --backend kubernetes; Client may then be nil), or any other sandbox.Backend;
	// nil: the local containerd backend through Client (sandbox/local). Tests of the run
	// logic give a fake.
	Backend sandbox.Backend

	// judgeAgent runs the task's agent as an agent_judge's judge (agentjudge.go): its CLI
	// starts in JudgeDir, never in the judged copy at /workspace, with judgeArgv's flags.
	judgeAgent bool
}

// backend is o's Backend, or the local containerd backend through o.Client.
func (o Options) backend() sandbox.Backend {
	if o.Backend != nil {
		return o.Backend
	}
	return &local.Backend{Client: o.Client, Pins: o.Pins, Preflight: o.Preflight, Busybox: o.Busybox, IDs: o.IDs}
}

// InfraError is a failure on ceval's side (containerd, images, the host): the run is ERROR
// and the CLI exits 3.
type InfraError struct{ Err error }

func (e *InfraError) Error() string { return e.Err.Error() }
func (e *InfraError) Unwrap() error { return e.Err }

// release frees what the backend's Prepare reserved, if anything.
func release(r sandbox.Reservation) error {
	if r == nil {
		return nil
	}
	return r.Release()
}

// Phases of a run, in order. An error Run returns names the phase it came from, and so does
// result.json's error. The agent phase is the sandbox's own sequence: start the container,
// attest the init, let the agent go, wait for it and reap everything (Sandbox.Run).
const (
	PhasePrepare  = "prepare"  // inputs, run directory, plugins, mocks, gateway, image
	PhaseLaunch   = "launch"   // scratch filesystems, workspace, the created container
	PhaseAgent    = "agent"    // start, attest, wait, reap
	PhaseCollect  = "collect"  // servers stopped, plugins re-verified, what the agent did
	PhaseSnapshot = "snapshot" // the workspace copied out
	PhaseGrade    = "grade"    // the criteria over the snapshot
	PhaseRecord   = "record"   // the agent's logs redacted, result.json written
	PhaseCleanup  = "cleanup"  // the container deleted, its scratch filesystems unmounted
	// PhaseSetup (after launch) and PhaseAfterAgent (after collect) are in steps.go.
)

// Run takes one task from file to graded result, phase by phase (see the Phase constants):
// it prepares the run directory and the workspace, runs the agent in its container, attests
// its isolation, reaps everything, snapshots the workspace and grades the snapshot on the
// host. The result is written to result.json in the run directory whatever happens after
// that directory exists.
func Run(ctx context.Context, t *task.Task, o Options) (*record.Result, error) {
	p, err := prepareRun(ctx, t, o, false)
	if p == nil {
		return nil, err
	}
	return p.Run(ctx)
}

// phase is one named step of a run (see the Phase constants).
type phase struct {
	name string
	do   func(context.Context) error
}

// phaseTable is every phase of a run in order; prepare and launch may run ahead of the
// others (Prepare).
func (r *run) phaseTable() []phase {
	return []phase{
		{PhasePrepare, r.prepare},
		{PhaseLaunch, r.launch},
		{PhaseServices, r.startServices},
		{PhaseSetup, r.setup},
		{PhaseAgent, r.runAgent},
		{PhaseCollect, r.collect},
		{PhaseAfterAgent, r.afterAgent},
		{PhaseSnapshot, r.snapshot},
		{PhaseGrade, r.grade},
	}
}

// runPhases runs the phases from the one at index from; after each grade the agent may go
// again (iterations.go).
func (r *run) runPhases(ctx context.Context, from int) error {
	phases := r.phaseTable()
	for _, p := range phases[from:] {
		endPhase := phasetime.Span("phase " + p.name)
		err := p.do(ctx)
		endPhase()
		if err != nil {
			if errors.Is(err, errEndedByLimits) {
				return nil
			}
			return inPhase(p.name, err)
		}
		for p.name == PhaseGrade {
			more, err := r.nextIteration(ctx)
			if err != nil {
				return inPhase(PhaseIterate, err)
			}
			if !more {
				break
			}
			// The phases from the agent's to the grade again: prepare, launch and setup
			// happen once per run.
			for _, again := range phases {
				if !slices.Contains(iterationPhases, again.name) {
					continue
				}
				if err := again.do(ctx); err != nil {
					if errors.Is(err, errEndedByLimits) { // as in the first run of the agent
						return nil
					}
					return inPhase(again.name, err)
				}
			}
		}
	}
	return nil
}

// close ends what the run holds however it ended, as Run always did: the simulated user's
// log, the sandbox (after which the backend's reservation), then the servers and services,
// the logs redacted and result.json written with err (see record); the events last.
// Returns err or the first failure of these.
func (r *run) close(ctx context.Context, err error) error {
	r.iter.user.close()
	if r.sb != nil {
		endClose := phasetime.Span("close: sandbox")
		cerr := r.sb.Close(ctx)
		endClose()
		if cerr != nil && err == nil {
			err = inPhase(PhaseCleanup, &InfraError{cerr})
		}
		r.emit("container_deleted", nil)
	}
	// After the sandbox, which released it already if it took it over (release is
	// idempotent): a run that ended before its launch keeps no slot or holder.
	if rerr := release(r.ids); rerr != nil && err == nil {
		err = inPhase(PhaseCleanup, &InfraError{rerr})
	}
	// Whatever happened, result.json says it, and the servers are stopped.
	if serr := errors.Join(r.stopServers(), r.stopServices()); serr != nil && err == nil {
		err = inPhase(PhaseCollect, serr)
	}
	// The agent's logs are redacted however the run ended: one that failed in its
	// snapshot or grade phase keeps what the agent printed too.
	if rerr := r.redactLogs(ctx); rerr != nil && err == nil {
		err = inPhase(PhaseRecord, rerr)
	}
	endRecord := phasetime.Span("close: record")
	err = r.record(err)
	endRecord()
	r.ev.Close()
	return err
}

// run is one run's state as it goes through its phases.
type run struct {
	t       *task.Task
	o       Options
	start   time.Time
	dir     string
	argv    []string
	env     []string
	secrets []string
	redact  func(string) string
	ev      *Events
	res     *record.Result

	plugins []record.PluginResult
	mounts  []oci.Mount
	mocks   *mockRun
	gw      *gatewayRun
	svcs    *serviceSet // the task's services; nil when it has none
	img     images.Image
	ids     sandbox.Reservation // the backend's Prepare (the local one's ID slot and user namespace holder)
	sb      sandbox.Sandbox
	ws      string // the agent's workspace on the host
	home    string // the agent's home on the host
	out     *sandbox.Outcome
	snap    *snapshot.Snapshot
	iter    iterations
}

// newRun checks the task's inputs against what the user allowed, and opens the run
// directory and its events; from here on result.json is written.
func newRun(t *task.Task, o Options, start time.Time) (*run, error) {
	r := &run{t: t, o: o, start: start}
	var err error
	argv := AgentArgv
	if o.judgeAgent {
		argv = judgeArgv // agentjudge.go
	}
	if r.argv, err = argv(t); err != nil {
		return nil, &sandbox.InputError{Err: err}
	}
	if r.env, r.secrets, err = AgentEnv(t, o.Allow, o.LookupEnv); err != nil {
		return nil, &sandbox.InputError{Err: err}
	}
	if o.judgeAgent {
		r.env = append(r.env, judgeEnv(t, o.Backend)...) // agentjudge.go
	}
	if err := Check(t, o); err != nil {
		return nil, err
	}
	r.redact = Redactor(r.secrets)
	r.dir = record.RunDir(o.RunsDir, o.RunID, o.Variant, t.ID, o.Repeat)
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, &InfraError{fmt.Errorf("run directory: %w", err)}
	}
	_ = os.Chmod(r.dir, 0o700)
	if r.ev, err = OpenEvents(r.dir, r.redact); err != nil {
		return nil, &InfraError{err}
	}
	r.res = &record.Result{RunID: o.RunID, Variant: o.Variant, Repeat: o.Repeat, Attempt: o.Attempt, CevalVersion: o.Version, Dir: r.dir,
		Agent: record.AgentResult{Type: t.Agent.Type, Model: t.Agent.Model, Override: o.AgentOverride}}
	r.res.TaskID = t.ID
	r.res.Criteria = []grader.CriterionResult{}
	r.res.Image.Name = t.Sandbox.Image
	if t.NeedsVerifier() {
		r.res.Verifier = local.VerifierInfo(o.VerifierNetwork, t)
	}
	r.emit("run_started", map[string]any{"task_id": t.ID, "run_dir": r.dir, "image": t.Sandbox.Image})
	return r, nil
}

// emit records a lifecycle event and tells the CLI.
func (r *run) emit(name string, f map[string]any) {
	r.ev.Emit(name, f)
	if r.o.Progress != nil {
		r.o.Progress(name, f)
	}
}

// prepare hashes the task, puts its plugins into the run directory, starts its mocks and
// model gateway, and resolves its image.
func (r *run) prepare(ctx context.Context) error {
	t, res := r.t, r.res
	var err error
	if res.TaskSHA256, err = task.Digest(t); err != nil {
		return &InfraError{err}
	}
	r.plugins, r.mounts, err = preparePlugins(t, r.dir, r.emit)
	res.Plugins = r.plugins
	if err != nil {
		return err
	}
	mcpMounts, err := prepareMCP(t, r.dir) // mcp.go: the CLI's MCP configuration, read-only
	if err != nil {
		return err
	}
	r.mounts = append(r.mounts, mcpMounts...)
	mocks, mockMounts, err := startMocks(t, r.dir, r.o.InitDir, policy.AgentUID)
	if err != nil {
		return &InfraError{fmt.Errorf("protected mocks: %w", err)}
	}
	if mocks != nil {
		r.mocks = mocks
		res.Mocks = mocks.result
		r.mounts = append(r.mounts, mockMounts...)
	}
	if r.gw, err = startGateway(t, r.dir, r.o.LookupEnv, r.o.Prices, r.o.GatewayAllow); err != nil {
		return err
	}
	if r.gw != nil {
		res.Gateway = r.gw.result
		r.env = append(r.env, GatewayEnv(t, r.gw.key)...)
	}
	if name := t.Sandbox.PackageImage(); name != "" && name == t.Sandbox.Image {
		r.emit("package_image", map[string]any{"image": name, "packages": t.Sandbox.Packages, "pip": t.Sandbox.Pip}) // built now unless kept or cached
	}
	// The launch's longest waits start while the image is resolved (which mostly waits on
	// containerd); Run releases what no sandbox took over.
	r.ids = r.o.Backend.Prepare()
	endResolve := phasetime.Span("prepare: resolve image")
	r.img, err = r.o.Backend.ResolveImage(ctx, t.Sandbox)
	endResolve()
	if err != nil {
		if errors.Is(err, registry.ErrRefused) { // the registry the task named sent what ceval refuses
			return &sandbox.InputError{Err: err}
		}
		if hint := images.HarborBuildHint(t, t.Sandbox.Image); hint != "" && errors.As(err, new(*images.NotFoundError)) {
			err = fmt.Errorf("%w; this task was imported from Harbor: build its image as ceval import harbor said: %s", err, hint)
		}
		return &InfraError{err}
	}
	hosts, err := r.prepareServices(ctx)
	if err != nil {
		return err
	}
	r.mounts = append(r.mounts, hosts...)
	res.Image = r.img
	r.emit("image_ready", map[string]any{"image": r.img.Name, "digest": r.img.ManifestDigest})
	return nil
}

// launch mounts the scratch filesystems, prepares the workspace and the agent's home, and
// creates the container.
func (r *run) launch(ctx context.Context) error {
	t, o := r.t, r.o
	cfg := sandbox.Config{
		Image: r.img.Name, ImageConfig: r.img.ConfigDigest, ID: fmt.Sprintf("%s-%s-%s-%d", o.RunID, o.Variant, t.ID, o.Repeat),
		Argv: r.argv, Env: iterationEnv(r.env, t, 1), Limits: t.Sandbox.Limits, Network: t.Sandbox.Network, Grace: o.Grace,
		InitDir: o.InitDir, Dir: filepath.Join(r.dir, scratchSubdir), Mounts: r.mounts, IDs: o.IDs,
		StdoutPath: filepath.Join(r.dir, record.StdoutFile), StderrPath: filepath.Join(r.dir, record.StderrFile),
		BeforeStart: r.beforeStart, Stop: r.gw.stopAgent(),
		StepBeforeStart: r.svcs.stepBeforeStart(), StepMounts: r.svcs.mounts(),
		Prepare: r.prepareScratch, Reserved: r.ids,
		ImageWorkdir: local.ImageWorkdirMode(t.Sandbox), Emit: r.emit, Outputs: t.Sandbox.Outputs, OutputsFromImage: true,
		ImageWorkdirEnv: o.ImageWorkdirEnv,
	}
	if o.judgeAgent {
		cfg.Cwd = JudgeDir // agentjudge.go
		judgeShells(t, &cfg)
	}
	if r.gw != nil {
		cfg.Gateway = r.gw
	}
	if r.mocks != nil {
		cfg.MockSocket = r.mocks.socket
		if _, remote := o.Backend.(sandbox.Remote); remote {
			// The Pod's init relays the agent's mock calls through this process: the agent's
			// UID reaches the mock server as ours.
			if err := r.mocks.server.UseUIDMappings([]specs.LinuxIDMapping{{ContainerID: policy.AgentUID, HostID: uint32(os.Getuid()), Size: 1}}); err != nil {
				return &InfraError{err}
			}
		}
	}
	sb, err := o.Backend.NewSandbox(ctx, cfg)
	if err != nil {
		return asRunError(err)
	}
	r.sb = sb
	r.ws, r.home = sb.Dirs()
	if k, ok := sb.(interface {
		ResolvedImage(images.Image) images.Image
	}); ok {
		r.res.Image = k.ResolvedImage(r.res.Image) // the node resolved it (a Pod's)
	}
	r.res.Timings.Prepare = time.Since(r.start).Seconds()
	return nil
}

// beforeStart runs between create and start: the mock server learns how the agent's UID
// appears here, and the gateway opens its socket inside the container's network namespace.
func (r *run) beforeStart(ctx context.Context, pid uint32) error {
	if err := r.mocks.beforeStart(ctx, pid); err != nil {
		return err
	}
	if err := r.svcs.beforeStart(ctx, pid); err != nil {
		return err
	}
	if r.gw != nil {
		return r.gw.beforeStart(ctx, pid)
	}
	return nil
}

// prepareScratch fills the fresh workspace and home before the agent's UID gets them.
func (r *run) prepareScratch(ws, home string) error {
	t := r.t
	if err := PrepareWorkspace(ws, t); err != nil {
		return err
	}
	if t.Agent.Type == task.AgentCodex {
		if err := linkCodexSkills(home, r.plugins); err != nil {
			return err
		}
		if r.gw != nil {
			if err := writeCodexConfig(home, t.Agent.Model); err != nil {
				return err
			}
		}
	}
	return prepareHome(home, t.Prompt)
}

// runAgent starts the container, attests it, lets the agent run and reaps it; the limits
// the container hit are recorded even when this fails.
func (r *run) runAgent(ctx context.Context) error {
	waitStart := time.Now()
	out, err := r.sb.Run(ctx, r.emit)
	runEnd := time.Now()
	if out != nil {
		r.recordContainer(out)
	}
	if err != nil {
		if r.endedByLimits(err) {
			return errEndedByLimits
		}
		return &InfraError{err}
	}
	r.out = out
	// Summed over the iterations of the agent, when there are several.
	r.res.Timings.Agent += out.Exit.Duration.Seconds()
	r.res.Timings.Launch += max(0, runEnd.Sub(waitStart)-out.Exit.Duration-out.Exit.Reap).Seconds()
	r.res.Timings.Reap += (out.Exit.Reap + time.Since(runEnd)).Seconds()
	return nil
}

// errEndedByLimits ends a run whose result endedByLimits has recorded.
var errEndedByLimits = errors.New("the agent's sandbox was ended by its limits")

// endedByLimits records a run whose sandbox its own limits ended, or the agent broke, before
// its workspace could be copied out (a Pod OOM-killed as a whole, evicted for its disk use,
// its init signalled or starved: any error with an AgentCaused method): the agent's doing, so the run is a FAILURE with score 0 and the limit named, never an ERROR that an
// agent could provoke to escape its grade, nor a retry.
func (r *run) endedByLimits(err error) bool {
	var ac interface{ AgentCaused() string }
	if !errors.As(err, &ac) {
		return false
	}
	res := r.res
	res.LimitsHit = append(res.LimitsHit, ac.AgentCaused())
	res.Status, res.Score, res.Complete = grader.TaskFailure, 0, true
	res.Agent.StoppedBy = err.Error()
	r.emit("graded", map[string]any{"status": res.Status, "score": res.Score, "reason": err.Error()})
	if r.t.MultiStep() {
		r.stepEndedByLimits(err.Error()) // multistep.go
	}
	return true
}

// recordContainer puts the container's attestation and peaks into the result.
func (r *run) recordContainer(out *sandbox.Outcome) {
	res := r.res
	res.Isolation = out.Isolation
	rs := out.Resources
	res.Resources = record.Resources{PeakMemoryBytes: rs.MemoryPeakBytes, PeakPids: rs.PidsPeak, OOMKills: rs.OOMKills}
	if rs.OOMKills > 0 {
		res.LimitsHit = append(res.LimitsHit, fmt.Sprintf("memory limit %d MiB: %d process(es) OOM-killed", r.t.Sandbox.Limits.MemoryMB, rs.OOMKills))
	}
	if rs.PidsLimit > 0 && rs.PidsPeak >= rs.PidsLimit {
		res.LimitsHit = append(res.LimitsHit, fmt.Sprintf("pids limit %d reached", rs.PidsLimit))
	}
}

// stopServers stops the mocks and the model gateway, each once: after the agent (no call can
// come any more, and their logs are complete for grading), or when the run ends early.
func (r *run) stopServers() error {
	var errs []error
	if err := r.gw.stop(); err != nil {
		errs = append(errs, &InfraError{fmt.Errorf("model gateway: %w", err)})
	}
	if err := r.mocks.stop(r.dir); err != nil {
		errs = append(errs, &InfraError{fmt.Errorf("protected mocks: %w", err)})
	}
	return errors.Join(errs...)
}

// collect stops the servers, verifies the plugins again and records what the agent did:
// its exit, the limits it hit, its usage and its CLI's sessions.
func (r *run) collect(context.Context) error {
	if r.t.MaxRuns() > 1 {
		r.pauseServers() // another iteration may use them; Run stops them at its end
	} else if err := r.stopServers(); err != nil {
		return err
	}

	res, exit := r.res, r.out.Exit
	if err := verifyPluginsAfter(res.Plugins, r.emit); err != nil {
		return &InfraError{err}
	}
	code := exit.Code
	res.Agent.ExitCode = &code
	res.Agent.TimedOut = exit.TimedOut
	res.Agent.OutputCut = exit.OutputCut
	if r.out.Stopped {
		res.Agent.StoppedBy = "model gateway budget: " + r.gw.result.ExceededLimit
		r.emit("agent_stopped", map[string]any{"reason": res.Agent.StoppedBy})
	}
	r.emit("agent_exited", map[string]any{"exit_code": exit.Code, "timed_out": exit.TimedOut, "interrupted": exit.Interrupted, "cgroup_empty": exit.CgroupEmpty})
	if exit.Interrupted {
		res.Interrupted = true
		r.emit("interrupted", map[string]any{"reason": "ceval was interrupted; the agent was stopped and the run was not graded"})
		return &InfraError{errors.New("interrupted: the agent was stopped and the run was not graded")}
	}
	if exit.OutputCut {
		res.LimitsHit = append(res.LimitsHit, "agent output over the log cap was cut")
	}
	if full, note := scratchFull(r.ws); full {
		res.LimitsHit = append(res.LimitsHit, note)
	}
	for i, d := range r.sb.OutputDirs() {
		if full, note := scratchFull(d); full {
			res.LimitsHit = append(res.LimitsHit, "output "+r.t.Sandbox.Outputs[i]+": "+strings.TrimPrefix(note, "workspace "))
		}
	}
	if u := agentUsage(r.t.Agent.Type, filepath.Join(r.dir, record.StdoutFile)); u != nil {
		addUsage(&res.Agent, u) // summed over the iterations
	}
	_, home := r.sb.Dirs() // a Pod's home is copied out after the agent
	sessions, notes, err := copySessions(r.t.Agent.Type, home, r.dir)
	res.Agent.Sessions = sessions
	res.LimitsHit = append(res.LimitsHit, notes...)
	if err != nil {
		return &InfraError{err}
	}
	return nil
}

// snapshot copies the workspace out, never following a link: everything of the agent's is
// dead by now.
func (r *run) snapshot(ctx context.Context) error {
	res := r.res
	snapStart := time.Now()
	snap, err := r.sb.TakeSnapshot(ctx, filepath.Join(r.dir, record.WorkspaceDir), snapshot.DefaultLimits())
	if err != nil {
		if r.endedByLimits(err) {
			return errEndedByLimits
		}
		return &InfraError{err}
	}
	// Durable with result.json, by its one sync of the run directory's filesystem (see
	// writeResult): only a complete result.json makes a reader trust the manifest.
	if err := snap.WriteManifestUnsynced(filepath.Join(r.dir, record.SnapshotFile)); err != nil {
		return &InfraError{err}
	}
	outs, hits, err := takeSandboxOutputs(ctx, r.t.Sandbox.Outputs, r.sb, r.dir)
	if err != nil {
		return &InfraError{err}
	}
	snap.Outputs = outs
	res.LimitsHit = append(res.LimitsHit, hits...)
	r.snap = snap
	res.Timings.Snapshot = time.Since(snapStart).Seconds()
	// Every cap the snapshot reached, by name: what it left out stays visible to the
	// criteria (omitted), and these lines say why.
	res.LimitsHit = append(res.LimitsHit, snap.LimitsHit...)
	r.emit("snapshot_taken", map[string]any{"entries": len(snap.Entries), "bytes": snap.Bytes, "notes": len(snap.Notes)})
	return nil
}

// grade runs the criteria over the snapshot and decides the run's status.
func (r *run) grade(ctx context.Context) error {
	t, res := r.t, r.res
	// Verifier containers (sandbox: container) start only once the agent's is deleted.
	if t.NeedsVerifier() {
		closeSandbox := r.sb.Close
		if t.MaxRuns() > 1 {
			closeSandbox = r.sb.DeleteContainer // the scratch filesystems serve the next iteration
		}
		if err := closeSandbox(ctx); err != nil {
			return &InfraError{err}
		}
	}
	gradeStart := time.Now()
	gopts := grader.Options{Reference: t.Reference, Executor: r.o.Executor}
	if r.mocks != nil {
		gopts.MockCallsPath = filepath.Join(r.dir, record.MockCallsFile)
	}
	gt := r.gradedTask() // a multi-step task's current step (multistep.go)
	res.ToolCalls = readToolCalls(gt, r.dir, &gopts)
	j, closeJudge, err := runJudge(gt, r.dir, r.o.Judge, false)
	if err != nil {
		return &InfraError{err}
	}
	defer closeJudge()
	gopts.Judge = j
	gopts.AgentJudge = &agentJudges{o: r.o, t: gt, dir: r.dir}
	gctx := ctx
	if r.svcs != nil && t.GradesWithServices() {
		gctx = sandbox.WithServices(ctx, &ServiceAccess{r.svcs})
	}
	g := grader.Grade(gctx, gt, r.snap, gopts)
	saveCriterionOutputs(r.dir, g, r.redact)
	if t.MaxRuns() == 1 && t.GradesWithServices() {
		if err := r.stopServices(); err != nil {
			return err
		}
	}
	res.Grade = *g
	res.Timings.Grade = time.Since(gradeStart).Seconds()
	if ctx.Err() != nil && res.Status == grader.TaskError {
		// A grade cut short by Ctrl-C is not the run's grade: leave it incomplete, so a
		// resume runs it again.
		res.Interrupted = true
		return &InfraError{errors.New("interrupted while grading: the run was not graded")}
	}
	var hits []string
	res.Status, hits = record.FinalStatus(res.Status, res.Agent, res.Gateway, t.Sandbox.Limits.Timeout)
	res.LimitsHit = append(res.LimitsHit, hits...)
	if res.Status != grader.TaskError {
		if why := res.Gateway.ProviderDownError(); why != "" {
			return &InfraError{errors.New(why)}
		}
	}
	res.Complete = true
	r.emit("graded", map[string]any{"status": res.Status, "score": res.Score})
	return nil
}

// redactLogs replaces every secret in the agent's logs; a log it cannot rewrite fails the run,
// since the secret would stay on disk.
func (r *run) redactLogs(context.Context) error {
	if len(r.secrets) == 0 {
		return nil
	}
	for _, f := range []string{record.StdoutFile, record.StderrFile} {
		if err := redactFile(filepath.Join(r.dir, f), r.redact); err != nil {
			r.res.Complete = false
			return &InfraError{fmt.Errorf("redacting the agent's log %s: %w", f, err)}
		}
	}
	return nil
}

// record writes result.json (err, if any, makes the run ERROR and incomplete) and returns
// err, or the write's failure.
func (r *run) record(err error) error {
	res := r.res
	res.Timings.Total = time.Since(r.start).Seconds()
	if err != nil {
		res.Status = record.StatusError
		res.Error = err.Error()
		res.Complete = false
	}
	// trajectory.json (Harbor's ATIF) from the gateway's transcript, before result.json,
	// whose write makes it durable; a run without model turns has none, and a transcript
	// that cannot be exported is an event, never the run's failure.
	if terr := atif.WriteRun(r.dir, res, r.redact, false); terr != nil {
		var skip *atif.SkipError
		if !errors.As(terr, &skip) {
			r.emit("trajectory_not_written", map[string]any{"error": terr.Error()})
		}
	}
	if werr := writeResult(r.dir, res, r.redact, r.ev); werr != nil && err == nil {
		err = inPhase(PhaseRecord, &InfraError{werr})
	}
	r.emit("run_finished", map[string]any{"status": res.Status, "score": res.Score})
	return err
}

// PhaseError is a run's failure in one of its phases; it unwraps to the sandbox.InputError or
// InfraError that says whose fault it was.
type PhaseError struct {
	Phase string
	Err   error
}

func (e *PhaseError) Error() string { return e.Phase + ": " + e.Err.Error() }
func (e *PhaseError) Unwrap() error { return e.Err }

// inPhase names the phase err came from, once.
func inPhase(phase string, err error) error {
	var pe *PhaseError
	if err == nil || errors.As(err, &pe) {
		return err
	}
	return &PhaseError{Phase: phase, Err: err}
}

// asRunError keeps a sandbox.InputError as it is and makes anything else an InfraError.
func asRunError(err error) error {
	var ie *sandbox.InputError
	if errors.As(err, &ie) {
		return ie
	}
	return &InfraError{err}
}

// WithDefaults fills what o leaves unset: the runs directory (absolute), a new run ID, the
// variant, the repeat, the environment, the grace period, the init directory and the backend.
func (o Options) WithDefaults(now time.Time) Options {
	if o.RunsDir == "" {
		o.RunsDir = "runs"
	}
	if abs, err := filepath.Abs(o.RunsDir); err == nil {
		o.RunsDir = abs
	}
	if o.RunID == "" {
		o.RunID = record.NewRunID(now)
	}
	if o.Variant == "" {
		o.Variant = "default"
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Grace == 0 {
		o.Grace = policy.DefaultGrace
	}
	if o.InitDir == "" {
		o.InitDir = local.DefaultInitDir()
	}
	o.Backend = o.backend()
	return o
}

func prepareHome(home, prompt string) error {
	root, err := os.OpenRoot(home)
	if err != nil {
		return err
	}
	defer root.Close()
	return writeInRoot(root, ".ceval/prompt.md", []byte(prompt), 0o644)
}

// scratchFull says whether the workspace filesystem is (nearly) out of space or inodes.
func scratchFull(dir string) (bool, string) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false, ""
	}
	if st.Bavail*100 < st.Blocks || st.Ffree*100 < st.Files {
		return true, fmt.Sprintf("workspace disk limit reached (%d MiB or its inode cap)", st.Blocks*uint64(st.Bsize)>>20)
	}
	return false, ""
}

func agentUsage(agentType, stdoutLog string) *Usage {
	f, err := os.Open(stdoutLog)
	if err != nil {
		return nil
	}
	defer f.Close()
	return ParseUsage(agentType, f)
}

// writeResult puts result.json in place atomically and durably, together with everything
// the run wrote before it (the snapshot's files and manifest, the logs, the events so far):
// the new result goes to a temporary file, one syncfs of the directory's filesystem makes
// all of it durable, then the rename publishes it and a fsync of the directory makes the
// rename durable. A crash before that leaves the previous result.json (or none): a complete
// result.json never vouches for files that did not reach the disk. Two syncs in all, where
// a fsync per file took six.
//
// syncfs reports a writeback error only if its descriptor has not reported it yet and it
// happened after the descriptor was opened, or had been seen by no one by then; a syncfs of
// another run on the same filesystem (an experiment's runs share it) marks an error seen.
// So ev, the run's events file, opened before the run wrote anything, is the descriptor it
// syncs through: a snapshot file whose background writeback failed before the result's
// temporary file existed still fails the write. The price: an unrelated writeback error
// on that filesystem since the run started fails it too (the agent's own files are on a
// separate tmpfs, so the agent cannot cause one). With no events (a regrade, whose files an
// earlier process wrote), the temporary file serves.
func writeResult(dir string, res *record.Result, redact func(string) string, ev *Events) (err error) {
	tmp := *res
	data, err := record.Marshal(&tmp)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+record.ResultFile+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // no-op once renamed
	_, err = f.Write([]byte(redact(string(data))))
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		if ev != nil {
			err = ev.SyncFS()
		} else {
			err = unix.Syncfs(int(f.Fd()))
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, record.ResultFile))
	}
	if err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// redactFile rewrites a log with every secret replaced; a log that does not exist has
// nothing to redact.
func redactFile(path string, redact func(string) string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	out := redact(string(data))
	if out == string(data) {
		return nil
	}
	return record.WriteFileAtomic(path, []byte(out), 0o600)
}
