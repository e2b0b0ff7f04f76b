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
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// Options configure one run; the zero value of each optional field takes a sane default.
type Options struct {
	RunsDir string // default ./runs
	RunID   string // default record.NewRunID(now)
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
func Run(ctx context.Context, t *task.Task, o Options) (res *record.Result, err error) {
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
	redact := Redactor(secrets)
	dir := record.RunDir(o.RunsDir, o.RunID, o.Variant, t.ID, o.Repeat)
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
	res = &record.Result{RunID: o.RunID, Variant: o.Variant, Repeat: o.Repeat, Attempt: o.Attempt, CevalVersion: o.Version, Dir: dir,
		Agent: record.AgentResult{Type: t.Agent.Type, Model: t.Agent.Model}}
	res.TaskID = t.ID
	res.Criteria = []grader.CriterionResult{}
	res.Image.Name = t.Sandbox.Image
	emit("run_started", map[string]any{"task_id": t.ID, "run_dir": dir, "image": t.Sandbox.Image})

	// Whatever happens from here, result.json says it.
	defer func() {
		res.Timings.Total = time.Since(start).Seconds()
		if err != nil {
			res.Status = record.StatusError
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
	mocks, mockMounts, err := startMocks(t, dir, o.InitDir, policy.AgentUID)
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
	img, err := ResolveImage(ctx, o.Client, t.Sandbox.Image, o.Preflight, o.Busybox)
	if err != nil {
		return res, &InfraError{err}
	}
	res.Image = img
	emit("image_ready", map[string]any{"image": img.Name, "digest": img.ManifestDigest})

	sb, err := NewSandbox(ctx, SandboxConfig{
		Client: o.Client, Image: img.Name, ID: fmt.Sprintf("%s-%s-%s-%d", o.RunID, o.Variant, t.ID, o.Repeat),
		Argv: argv, Env: env, Limits: t.Sandbox.Limits, Network: t.Sandbox.Network, Grace: o.Grace,
		InitDir: o.InitDir, Dir: filepath.Join(dir, scratchSubdir), Mounts: mounts, IDs: o.IDs,
		StdoutPath: filepath.Join(dir, record.StdoutFile), StderrPath: filepath.Join(dir, record.StderrFile),
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
	if out != nil {
		res.Isolation = out.Isolation
		r := out.Resources
		res.Resources = record.Resources{PeakMemoryBytes: r.MemoryPeakBytes, PeakPids: r.PidsPeak, OOMKills: r.OOMKills}
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
	res.Timings.Reap = max(0, time.Since(waitStart).Seconds()-res.Timings.Agent)
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
	if u := agentUsage(t.Agent.Type, filepath.Join(dir, record.StdoutFile)); u != nil {
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
	snap, err := snapshot.Take(sb.Workspace, filepath.Join(dir, record.WorkspaceDir), snapshot.DefaultLimits())
	if err != nil {
		return res, &InfraError{fmt.Errorf("snapshot: %w", err)}
	}
	if err := snap.WriteManifest(filepath.Join(dir, record.SnapshotFile)); err != nil {
		return res, &InfraError{err}
	}
	res.Timings.Snapshot = time.Since(snapStart).Seconds()
	// Every cap the snapshot reached, by name: what it left out stays visible to the
	// criteria (omitted), and these lines say why.
	res.LimitsHit = append(res.LimitsHit, snap.LimitsHit...)
	emit("snapshot_taken", map[string]any{"entries": len(snap.Entries), "bytes": snap.Bytes, "notes": len(snap.Notes)})

	gradeStart := time.Now()
	gopts := grader.Options{Reference: t.Reference, Executor: o.Executor}
	if mocks != nil {
		gopts.MockCallsPath = filepath.Join(dir, record.MockCallsFile)
	}
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
	res.Status, hits = record.FinalStatus(res.Status, res.Agent, res.Gateway, t.Sandbox.Limits.Timeout)
	res.LimitsHit = append(res.LimitsHit, hits...)
	if res.Status != grader.TaskError {
		if why := res.Gateway.ProviderDownError(); why != "" {
			return res, &InfraError{errors.New(why)}
		}
	}
	res.Complete = true
	emit("graded", map[string]any{"status": res.Status, "score": res.Score})
	if len(secrets) > 0 {
		for _, f := range []string{record.StdoutFile, record.StderrFile} {
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

func writeResult(dir string, res *record.Result, redact func(string) string) error {
	tmp := *res
	data, err := record.Marshal(&tmp)
	if err != nil {
		return err
	}
	return record.WriteFileAtomic(filepath.Join(dir, record.ResultFile), []byte(redact(string(data))), 0o600)
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
	return record.WriteFileAtomic(path, []byte(out), 0o600)
}
