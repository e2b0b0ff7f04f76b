package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/gateway"
	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/judge"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/toolcalls"
)

// Run statuses beyond the grader's.
const (
	StatusTimeout = "TIMEOUT"
	StatusError   = grader.TaskError
)

// AgentUID and AgentGID are the agent's identity in its container.
const (
	AgentUID = 2000
	AgentGID = 2000
)

// DefaultGrace is the time between SIGTERM and SIGKILL when a run is stopped.
const DefaultGrace = 10 * time.Second

// Options configure one run; the zero value of each optional field takes a sane default.
type Options struct {
	RunsDir string // default ./runs
	RunID   string // default NewRunID(now)
	Variant string // default "default"
	Repeat  int    // default 1
	Attempt int    // 0 or 1 for a first try; a retry (see RunExperiment) records its number

	Client    *client.Client // connected; the ctx given to Run carries the namespace
	Namespace string

	Allow     Allow
	LookupEnv func(string) (string, bool) // host environment; default os.LookupEnv
	Grace     time.Duration
	Version   string                               // ceval's version, recorded in the result
	Preflight *images.PreflightCache               // nil: images.Preflight without a disk cache
	Busybox   string                               // for building the default image on first use
	InitDir   string                               // where the static init is installed; default under the user cache dir
	Progress  func(event string, f map[string]any) // optional: live events for the CLI
	Executor  grader.Executor                      // grades run_command and wasm criteria; nil leaves them NOT_GRADED
	// IDs is the subordinate range runs take their user namespaces' host IDs from (ceval's
	// config id_range); the zero value is DefaultIDRange.
	IDs IDRange
	// Prices are USD per million tokens by model (the prices table of ceval's config); the
	// gateway prices calls with them, and run_limits.max_usd needs the task's model here.
	Prices map[string]gateway.Price
	// GatewayAllow is, per API, what the model gateway forwards of the agent's requests (the
	// gateway_allow section of ceval's config; a task never sets it); nil: the defaults.
	GatewayAllow map[string]gateway.Allowlist
	// Judge is the judge model of ceval's config, for llm_judge (each run gets its own
	// budget and judge_calls.jsonl); nil: only criteria with a judge_fixture are judged.
	Judge *judge.Judge
}

// Result is result.json: the grade plus what the run was.
type Result struct {
	grader.Result
	RunID        string       `json:"run_id"`
	Variant      string       `json:"variant"`
	Repeat       int          `json:"repeat"`
	Attempt      int          `json:"attempt,omitempty"` // >1 when this is a retry
	Agent        AgentResult  `json:"agent"`
	Isolation    *Attestation `json:"isolation,omitempty"`
	Timings      Timings      `json:"timings"`
	Resources    Resources    `json:"resources"`
	Image        images.Image `json:"image"`
	TaskSHA256   string       `json:"task_sha256"`
	CevalVersion string       `json:"ceval_version"`
	LimitsHit    []string     `json:"limits_hit,omitempty"`
	Interrupted  bool         `json:"interrupted,omitempty"`
	Error        string       `json:"error,omitempty"`
	Complete     bool         `json:"complete"` // false when interrupted or failed on ceval's side
	Dir          string       `json:"-"`

	// Plugins are the task's plugin bundles, verified before the agent started and after.
	Plugins []PluginResult `json:"plugins,omitempty"`

	// Mocks are the task's protected mocks: the tools and the call counts (the calls are in
	// MockCallsFile).
	Mocks *MockResult `json:"mocks,omitempty"`

	// Gateway is the model gateway's mode and the usage it metered (the calls are in
	// ModelCallsFile); Agent.Tokens is what the CLI itself reported.
	Gateway *GatewayResult `json:"gateway,omitempty"`

	// ToolCalls counts the tool calls the model asked for, per tool, as the gateway's
	// transcript records them (package toolcalls).
	ToolCalls *toolcalls.Summary `json:"tool_calls,omitempty"`
}

// AgentResult is what the agent did, as far as ceval saw it.
type AgentResult struct {
	Type      string         `json:"type"`
	Model     string         `json:"model,omitempty"`
	ExitCode  *int           `json:"exit_code"`
	TimedOut  bool           `json:"timed_out"`
	StoppedBy string         `json:"stopped_by,omitempty"` // why ceval ended the agent early: the run budget exceeded
	OutputCut bool           `json:"output_cut,omitempty"`
	Turns     int            `json:"turns,omitempty"`
	Tokens    map[string]int `json:"tokens,omitempty"`
	Usage     string         `json:"usage_source,omitempty"`
	// Sessions are the agent CLI's own session files, copied out of its home (relative to
	// the run directory).
	Sessions []string `json:"sessions,omitempty"`
}

// Timings are the lifecycle's phases in seconds.
type Timings struct {
	Prepare  float64 `json:"prepare"`
	Launch   float64 `json:"launch"` // the container's task created and started, its init attested
	Agent    float64 `json:"agent"`
	Reap     float64 `json:"reap"` // from the agent's exit (or stop) until its task is deleted and mocks and gateway stopped
	Snapshot float64 `json:"snapshot"`
	Grade    float64 `json:"grade"`
	Total    float64 `json:"total"`
}

// Resources are the container's peaks.
type Resources struct {
	PeakMemoryBytes uint64 `json:"peak_memory_bytes"`
	PeakPids        uint64 `json:"peak_pids"`
	OOMKills        uint64 `json:"oom_kills,omitempty"`
}

// InfraError is a failure on ceval's side (containerd, images, the host): the run is ERROR
// and the CLI exits 3.
type InfraError struct{ Err error }

func (e *InfraError) Error() string { return e.Err.Error() }
func (e *InfraError) Unwrap() error { return e.Err }

// InputError is bad input (a task or a permission the user did not give): exit 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Run takes one task from file to graded result: it prepares the run directory and the
// workspace, runs the agent in its container, attests its isolation, reaps everything,
// snapshots the workspace and grades the snapshot on the host. The result is written to
// result.json in the run directory whatever happens after that directory exists.
func Run(ctx context.Context, t *task.Task, o Options) (res *Result, err error) {
	start := time.Now()
	o = o.withDefaults(start)
	argv, err := AgentArgv(t)
	if err != nil {
		return nil, &InputError{err}
	}
	env, secrets, err := AgentEnv(t, o.Allow, o.LookupEnv)
	if err != nil {
		return nil, &InputError{err}
	}
	if err := CheckNetwork(t, o.Allow); err != nil {
		return nil, &InputError{err}
	}
	if err := CheckRunLimits(t, o.Prices); err != nil {
		return nil, &InputError{err}
	}
	if err := CheckJudge(t, o.Judge); err != nil {
		return nil, &InputError{err}
	}
	redact := Redactor(secrets)
	dir := RunDir(o.RunsDir, o.RunID, o.Variant, t.ID, o.Repeat)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &InfraError{fmt.Errorf("run directory: %w", err)}
	}
	_ = os.Chmod(dir, 0o700)
	ev, err := OpenEvents(dir, redact)
	if err != nil {
		return nil, &InfraError{err}
	}
	defer ev.Close()
	emit := func(name string, f map[string]any) {
		ev.Emit(name, f)
		if o.Progress != nil {
			o.Progress(name, f)
		}
	}
	res = &Result{RunID: o.RunID, Variant: o.Variant, Repeat: o.Repeat, Attempt: o.Attempt, CevalVersion: o.Version, Dir: dir,
		Agent: AgentResult{Type: t.Agent.Type, Model: t.Agent.Model}}
	res.TaskID = t.ID
	res.Criteria = []grader.CriterionResult{}
	res.Image.Name = t.Sandbox.Image
	emit("run_started", map[string]any{"task_id": t.ID, "run_dir": dir, "image": t.Sandbox.Image})

	// Whatever happens from here, result.json says it.
	defer func() {
		res.Timings.Total = time.Since(start).Seconds()
		if err != nil {
			res.Status = StatusError
			res.Error = err.Error()
			res.Complete = false
		}
		if werr := writeResult(dir, res, redact); werr != nil && err == nil {
			err = &InfraError{werr}
		}
		emit("run_finished", map[string]any{"status": res.Status, "score": res.Score})
	}()

	if res.TaskSHA256, err = task.Digest(t); err != nil {
		return res, &InfraError{err}
	}
	plugins, mounts, err := preparePlugins(t, dir, emit)
	res.Plugins = plugins
	if err != nil {
		return res, err
	}
	mocks, mockMounts, err := startMocks(t, dir, o.InitDir, AgentUID)
	if err != nil {
		return res, &InfraError{fmt.Errorf("protected mocks: %w", err)}
	}
	if mocks != nil {
		res.Mocks = mocks.result
		mounts = append(mounts, mockMounts...)
		defer func() {
			if merr := mocks.stop(dir); merr != nil && err == nil {
				err = &InfraError{fmt.Errorf("protected mocks: %w", merr)}
			}
		}()
	}
	gw, err := startGateway(t, dir, o.LookupEnv, o.Prices, o.GatewayAllow)
	if err != nil {
		return res, err
	}
	// Between create and start: the mock server learns how the agent's UID appears here, and
	// the gateway opens its socket inside the container's network namespace.
	beforeStart := func(ctx context.Context, pid uint32) error {
		if err := mocks.beforeStart(ctx, pid); err != nil {
			return err
		}
		if gw != nil {
			return gw.beforeStart(ctx, pid)
		}
		return nil
	}
	if gw != nil {
		res.Gateway = gw.result
		env = append(env, GatewayEnv(t, gw.key)...)
		defer func() {
			if gerr := gw.stop(); gerr != nil && err == nil {
				err = &InfraError{fmt.Errorf("model gateway: %w", gerr)}
			}
		}()
	}
	if name := t.Sandbox.PackageImage(); name != "" && name == t.Sandbox.Image {
		emit("package_image", map[string]any{"image": name, "packages": t.Sandbox.Packages, "pip": t.Sandbox.Pip}) // built now unless kept or cached
	}
	img, err := ResolveTaskImage(ctx, o.Client, t.Sandbox, o.Preflight, o.Busybox, nil)
	if err != nil {
		return res, &InfraError{err}
	}
	res.Image = img
	emit("image_ready", map[string]any{"image": img.Name, "digest": img.ManifestDigest})

	sb, err := NewSandbox(ctx, SandboxConfig{
		Client: o.Client, Image: img.Name, ID: fmt.Sprintf("%s-%s-%s-%d", o.RunID, o.Variant, t.ID, o.Repeat),
		Argv: argv, Env: env, Limits: t.Sandbox.Limits, Network: t.Sandbox.Network, Grace: o.Grace,
		InitDir: o.InitDir, Dir: filepath.Join(dir, scratchSubdir), Mounts: mounts, IDs: o.IDs,
		StdoutPath: filepath.Join(dir, StdoutFile), StderrPath: filepath.Join(dir, StderrFile),
		BeforeStart: beforeStart, Stop: gw.stopAgent(),
		Prepare: func(ws, home string) error {
			if err := PrepareWorkspace(ws, t); err != nil {
				return err
			}
			if t.Agent.Type == task.AgentCodex {
				if err := linkCodexSkills(home, plugins); err != nil {
					return err
				}
				if gw != nil {
					if err := writeCodexConfig(home, t.Agent.Model); err != nil {
						return err
					}
				}
			}
			return prepareHome(home, t.Prompt)
		},
	})
	if err != nil {
		return res, asRunError(err)
	}
	defer func() {
		if cerr := sb.Close(ctx); cerr != nil && err == nil {
			err = &InfraError{cerr}
		}
		emit("container_deleted", nil)
	}()
	res.Timings.Prepare = time.Since(start).Seconds()

	waitStart := time.Now()
	out, err := sb.Run(ctx, emit)
	runEnd := time.Now()
	if out != nil {
		res.Isolation = out.Isolation
		r := out.Resources
		res.Resources = Resources{PeakMemoryBytes: r.MemoryPeakBytes, PeakPids: r.PidsPeak, OOMKills: r.OOMKills}
		if r.OOMKills > 0 {
			res.LimitsHit = append(res.LimitsHit, fmt.Sprintf("memory limit %d MiB: %d process(es) OOM-killed", t.Sandbox.Limits.MemoryMB, r.OOMKills))
		}
		if r.PidsLimit > 0 && r.PidsPeak >= r.PidsLimit {
			res.LimitsHit = append(res.LimitsHit, fmt.Sprintf("pids limit %d reached", r.PidsLimit))
		}
	}
	if err != nil {
		return res, &InfraError{err}
	}
	// The agent is gone: no call can come any more, and the log is complete for grading.
	if err := gw.stop(); err != nil {
		return res, &InfraError{fmt.Errorf("model gateway: %w", err)}
	}
	if err := mocks.stop(dir); err != nil {
		return res, &InfraError{fmt.Errorf("protected mocks: %w", err)}
	}
	if err := verifyPluginsAfter(res.Plugins, emit); err != nil {
		return res, &InfraError{err}
	}
	exit := out.Exit
	res.Timings.Agent = exit.Duration.Seconds()
	res.Timings.Launch = max(0, runEnd.Sub(waitStart)-exit.Duration-exit.Reap).Seconds()
	res.Timings.Reap = (exit.Reap + time.Since(runEnd)).Seconds()
	code := exit.Code
	res.Agent.ExitCode = &code
	res.Agent.TimedOut = exit.TimedOut
	res.Agent.OutputCut = exit.OutputCut
	if out.Stopped {
		res.Agent.StoppedBy = "model gateway budget: " + gw.result.ExceededLimit
		emit("agent_stopped", map[string]any{"reason": res.Agent.StoppedBy})
	}
	emit("agent_exited", map[string]any{"exit_code": exit.Code, "timed_out": exit.TimedOut, "interrupted": exit.Interrupted, "cgroup_empty": exit.CgroupEmpty})
	if exit.Interrupted {
		res.Interrupted = true
		emit("interrupted", map[string]any{"reason": "ceval was interrupted; the agent was stopped and the run was not graded"})
		return res, &InfraError{errors.New("interrupted: the agent was stopped and the run was not graded")}
	}
	if exit.OutputCut {
		res.LimitsHit = append(res.LimitsHit, "agent output over the log cap was cut")
	}
	if full, note := scratchFull(sb.Workspace); full {
		res.LimitsHit = append(res.LimitsHit, note)
	}
	if u := agentUsage(t.Agent.Type, filepath.Join(dir, StdoutFile)); u != nil {
		res.Agent.Turns, res.Agent.Tokens, res.Agent.Usage = u.Turns, u.Tokens, u.Source
	}

	// Everything of the agent's is dead: copy the workspace out, never following a link.
	sessions, notes, err := copySessions(t.Agent.Type, sb.Home, dir)
	res.Agent.Sessions = sessions
	res.LimitsHit = append(res.LimitsHit, notes...)
	if err != nil {
		return res, &InfraError{err}
	}
	snapStart := time.Now()
	snap, err := snapshot.Take(sb.Workspace, filepath.Join(dir, WorkspaceDir), snapshot.DefaultLimits())
	if err != nil {
		return res, &InfraError{fmt.Errorf("snapshot: %w", err)}
	}
	if err := snap.WriteManifest(filepath.Join(dir, SnapshotFile)); err != nil {
		return res, &InfraError{err}
	}
	res.Timings.Snapshot = time.Since(snapStart).Seconds()
	// Every cap the snapshot reached, by name: what it left out stays visible to the
	// criteria (omitted), and these lines say why.
	res.LimitsHit = append(res.LimitsHit, snap.LimitsHit...)
	emit("snapshot_taken", map[string]any{"entries": len(snap.Entries), "bytes": snap.Bytes, "notes": len(snap.Notes)})

	// Verifier containers (sandbox: container) start only once the agent's is deleted.
	if t.NeedsVerifier() {
		if err := sb.Close(ctx); err != nil {
			return res, &InfraError{err}
		}
	}
	gradeStart := time.Now()
	gopts := grader.Options{Reference: t.Reference, Executor: o.Executor}
	if mocks != nil {
		gopts.MockCallsPath = filepath.Join(dir, MockCallsFile)
	}
	res.ToolCalls = readToolCalls(t, dir, &gopts)
	j, closeJudge, err := runJudge(t, dir, o.Judge, false)
	if err != nil {
		return res, &InfraError{err}
	}
	defer closeJudge()
	gopts.Judge = j
	gopts.AgentJudge = &agentJudges{o: o, t: t, dir: dir}
	g := grader.Grade(ctx, t, snap, gopts)
	res.Result = *g
	res.Timings.Grade = time.Since(gradeStart).Seconds()
	if ctx.Err() != nil && res.Status == grader.TaskError {
		// A grade cut short by Ctrl-C is not the run's grade: leave it incomplete, so a
		// resume runs it again.
		res.Interrupted = true
		return res, &InfraError{errors.New("interrupted while grading: the run was not graded")}
	}
	var hits []string
	res.Status, hits = FinalStatus(res.Status, res.Agent, res.Gateway, t.Sandbox.Limits.Timeout)
	res.LimitsHit = append(res.LimitsHit, hits...)
	if res.Status != grader.TaskError {
		if why := res.Gateway.ProviderDownError(); why != "" {
			return res, &InfraError{errors.New(why)}
		}
	}
	res.Complete = true
	emit("graded", map[string]any{"status": res.Status, "score": res.Score})
	if len(secrets) > 0 {
		for _, f := range []string{StdoutFile, StderrFile} {
			_ = redactFile(filepath.Join(dir, f), redact)
		}
	}
	return res, nil
}

// asRunError keeps an InputError as it is and makes anything else an InfraError.
func asRunError(err error) error {
	var ie *InputError
	if errors.As(err, &ie) {
		return ie
	}
	return &InfraError{err}
}

func (o Options) withDefaults(now time.Time) Options {
	if o.RunsDir == "" {
		o.RunsDir = "runs"
	}
	if abs, err := filepath.Abs(o.RunsDir); err == nil {
		o.RunsDir = abs
	}
	if o.RunID == "" {
		o.RunID = NewRunID(now)
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
		o.Grace = DefaultGrace
	}
	if o.InitDir == "" {
		o.InitDir = DefaultInitDir()
	}
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

func writeResult(dir string, res *Result, redact func(string) string) error {
	tmp := *res
	data, err := marshalIndent(&tmp)
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, ResultFile), []byte(redact(string(data))), 0o600)
}

// redactFile rewrites a log with every secret replaced.
func redactFile(path string, redact func(string) string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out := redact(string(data))
	if out == string(data) {
		return nil
	}
	return WriteFileAtomic(path, []byte(out), 0o600)
}
