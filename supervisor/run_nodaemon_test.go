package supervisor

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// fakeRuntime stands in for containerd: its sandbox is two directories, and its "agent" is
// a Go function over them, so Run's phases are tested without a daemon.
type fakeRuntime struct {
	imageErr  error
	createErr error
	closeErr  error
	// agent acts as the agent in the workspace and says how the container ended.
	agent func(ws, home string) (*sandbox.Outcome, error)
	// step acts as a setup or after_agent step (argv is `sh -c RUN`), writing its output to
	// log; nil: every step exits 0.
	step     func(name string, argv []string, ws string, log io.Writer) (launcher.Exit, error)
	steps    []string // the names of the steps run, in order
	launched int
	closed   int
	cfg      sandbox.Config
	again    []sandbox.AgainConfig // each iteration after the first
}

func (f *fakeRuntime) Prepare() sandbox.Reservation { return nil }

// Check is the local backend's, as the runs it stands in for were checked.
func (f *fakeRuntime) Check(t *task.Task) error { return local.CheckRootVerifier(t) }

func (f *fakeRuntime) ResolveImage(_ context.Context, sb task.Sandbox) (images.Image, error) {
	return images.Image{Name: sb.Image, ManifestDigest: "sha256:fake"}, f.imageErr
}

func (f *fakeRuntime) NewSandbox(_ context.Context, cfg sandbox.Config) (sandbox.Sandbox, error) {
	if f.createErr != nil {
		return nil, f.createErr
	}
	f.cfg = cfg
	sb := &fakeSandbox{f: f, ws: filepath.Join(cfg.Dir, "workspace"), home: filepath.Join(cfg.Dir, "home")}
	for _, d := range []string{sb.ws, sb.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := cfg.Prepare(sb.ws, sb.home); err != nil {
		return nil, err
	}
	f.launched++
	return sb, nil
}

type fakeSandbox struct {
	f        *fakeRuntime
	ws, home string
}

func (s *fakeSandbox) Run(_ context.Context, emit func(string, map[string]any)) (*sandbox.Outcome, error) {
	emit("agent_started", nil)
	for _, p := range []string{s.f.cfg.StdoutPath, s.f.cfg.StderrPath} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			return nil, err
		}
	}
	return s.f.agent(s.ws, s.home)
}

func (s *fakeSandbox) Close(context.Context) error {
	s.f.closed++
	return s.f.closeErr
}

func (s *fakeSandbox) Dirs() (string, string) { return s.ws, s.home }

func (s *fakeSandbox) OutputDirs() []string { return nil }

func (s *fakeSandbox) TakeSnapshot(_ context.Context, dst string, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	return snapshot.Take(s.ws, dst, lim)
}

func (s *fakeSandbox) RunStep(_ context.Context, name string, argv []string, _ time.Duration, logPath string) (launcher.Exit, error) {
	s.f.steps = append(s.f.steps, name)
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return launcher.Exit{}, err
	}
	defer f.Close()
	if s.f.step == nil {
		return launcher.Exit{CgroupEmpty: true}, nil
	}
	return s.f.step(name, argv, s.ws, f)
}

func (s *fakeSandbox) Again(_ context.Context, next sandbox.AgainConfig) error {
	s.f.again = append(s.f.again, next)
	if next.Prepare != nil {
		if err := next.Prepare(s.ws); err != nil {
			return err
		}
	}
	s.f.cfg.Argv, s.f.cfg.Env, s.f.cfg.StdoutPath, s.f.cfg.StderrPath = next.Argv, next.Env, next.StdoutPath, next.StderrPath
	return nil
}

func (s *fakeSandbox) DeleteContainer(context.Context) error { return nil }

// exited is an agent's clean exit with code.
func exited(code int) *sandbox.Outcome {
	return &sandbox.Outcome{Exit: launcher.Exit{Code: code, Duration: 10 * time.Millisecond, CgroupEmpty: true}}
}

// writesHello is an agent that leaves hello.txt and exits 0.
func writesHello(ws, _ string) (*sandbox.Outcome, error) {
	return exited(0), os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\n"), 0o644)
}

// runFake loads a task that wants hello.txt and runs it on rt.
func runFake(t *testing.T, rt *fakeRuntime, events *[]string) (*record.Result, error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	doc := agentTask("hello", "true", "  - {type: file_exists, path: hello.txt}\n")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tk.Close() })
	o := Options{RunsDir: t.TempDir(), InitDir: t.TempDir(), Backend: rt, LookupEnv: hostEnv(nil)}
	if events != nil {
		o.Progress = func(ev string, _ map[string]any) { *events = append(*events, ev) }
	}
	return Run(context.Background(), tk, o)
}

func TestRunWithoutDaemonGradesWhatTheAgentLeft(t *testing.T) {
	rt := &fakeRuntime{agent: writesHello}
	var events []string
	res, err := runFake(t, rt, &events)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "SUCCESS" || !res.Complete || res.Agent.ExitCode == nil || *res.Agent.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	if rt.launched != 1 || rt.closed != 1 {
		t.Fatalf("sandbox launched %d, closed %d times; want 1 and 1", rt.launched, rt.closed)
	}
	onDisk, err := record.ReadResult(res.Dir)
	if err != nil || onDisk.Status != "SUCCESS" || !onDisk.Complete || onDisk.Image.ManifestDigest != "sha256:fake" {
		t.Fatalf("result.json %+v, %v", onDisk, err)
	}
	want := []string{"run_started", "image_ready", "agent_started", "agent_exited", "snapshot_taken", "graded", "container_deleted", "run_finished"}
	if !slices.Equal(events, want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	prompt, err := os.ReadFile(filepath.Join(filepath.Dir(rt.cfg.StdoutPath), scratchSubdir, "home", ".ceval", "prompt.md"))
	if err != nil || string(prompt) != "do the task" {
		t.Fatalf("prompt in the agent's home %q, %v", prompt, err)
	}
}

// TestRunFailureNamesItsPhase: whatever phase fails, Run's error and result.json's error
// name it, the run is ERROR and incomplete, and a created sandbox is closed exactly once.
func TestRunFailureNamesItsPhase(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		phase  string
		rt     *fakeRuntime
		before func(runDir string) // called when the agent runs
		closed int
	}{
		{PhasePrepare, &fakeRuntime{imageErr: boom, agent: writesHello}, nil, 0},
		{PhaseLaunch, &fakeRuntime{createErr: boom, agent: writesHello}, nil, 0},
		{PhaseAgent, &fakeRuntime{agent: func(string, string) (*sandbox.Outcome, error) { return nil, boom }}, nil, 1},
		{PhaseSnapshot, &fakeRuntime{agent: writesHello}, func(runDir string) {
			// A file where the snapshot's directory goes.
			os.WriteFile(filepath.Join(runDir, record.WorkspaceDir), nil, 0o600)
		}, 1},
		{PhaseCleanup, &fakeRuntime{closeErr: boom, agent: writesHello}, nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.phase, func(t *testing.T) {
			if tc.before != nil {
				agent := tc.rt.agent
				tc.rt.agent = func(ws, home string) (*sandbox.Outcome, error) {
					tc.before(filepath.Dir(tc.rt.cfg.Dir)) // cfg.Dir is RUNDIR/.scratch
					return agent(ws, home)
				}
			}
			res, err := runFake(t, tc.rt, nil)
			var pe *PhaseError
			var ie *InfraError
			if !errors.As(err, &pe) || pe.Phase != tc.phase || !errors.As(err, &ie) {
				t.Fatalf("err %v (%T), want an InfraError of phase %s", err, err, tc.phase)
			}
			if res == nil || res.Status != record.StatusError || res.Complete || !strings.HasPrefix(res.Error, tc.phase+": ") {
				t.Fatalf("result %+v", res)
			}
			onDisk, rerr := record.ReadResult(res.Dir)
			if rerr != nil || onDisk.Error != res.Error || onDisk.Complete {
				t.Fatalf("result.json %+v, %v", onDisk, rerr)
			}
			if tc.rt.closed != tc.closed {
				t.Fatalf("sandbox closed %d times, want %d", tc.rt.closed, tc.closed)
			}
		})
	}
}

// TestRunRecordsTheLimitsTheAgentHit: a timed-out agent is TIMEOUT however its work grades,
// and the container's OOM kills and pids peak are in limits_hit.
func TestRunRecordsTheLimitsTheAgentHit(t *testing.T) {
	rt := &fakeRuntime{agent: func(ws, home string) (*sandbox.Outcome, error) {
		out, err := writesHello(ws, home)
		out.Exit.TimedOut, out.Exit.Code = true, 137
		out.Resources = launcher.Resources{OOMKills: 2, PidsPeak: 128, PidsLimit: 128, MemoryPeakBytes: 1 << 20}
		return out, err
	}}
	res, err := runFake(t, rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != record.StatusTimeout || !res.Agent.TimedOut || res.Resources.OOMKills != 2 || res.Resources.PeakMemoryBytes != 1<<20 {
		t.Fatalf("result %+v", res)
	}
	hits := strings.Join(res.LimitsHit, "\n")
	for _, want := range []string{"OOM-killed", "pids limit 128 reached", "timeout 1m0s"} {
		if !strings.Contains(hits, want) {
			t.Errorf("limits_hit %q lacks %q", hits, want)
		}
	}
}

// TestRunInterruptedAgentIsNotGraded: Ctrl-C during the agent leaves the run incomplete and
// ungraded, so a resume runs it again.
func TestRunInterruptedAgentIsNotGraded(t *testing.T) {
	rt := &fakeRuntime{agent: func(ws, home string) (*sandbox.Outcome, error) {
		out, err := writesHello(ws, home)
		out.Exit.Interrupted = true
		return out, err
	}}
	var events []string
	res, err := runFake(t, rt, &events)
	if err == nil || !strings.HasPrefix(err.Error(), PhaseCollect+": interrupted") || !res.Interrupted || res.Complete {
		t.Fatalf("err %v, result %+v", err, res)
	}
	if slices.Contains(events, "graded") || rt.closed != 1 {
		t.Fatalf("events %v, closed %d", events, rt.closed)
	}
}

// TestAgentLogsAreRedactedWhenTheRunFailsAfterTheAgent: an agent that prints a provider key
// ceval holds, in a run that then fails (here its snapshot), leaves no key in its logs: the
// redaction runs however the run ends, not only as the last phase of a run that got there.
func TestAgentLogsAreRedactedWhenTheRunFailsAfterTheAgent(t *testing.T) {
	const key = "sk-ant-redact-me-0123456789"
	var runDir string
	rt := &fakeRuntime{}
	rt.agent = func(ws, home string) (*sandbox.Outcome, error) {
		runDir = filepath.Dir(rt.cfg.Dir) // cfg.Dir is RUNDIR/.scratch
		for _, p := range []string{rt.cfg.StdoutPath, rt.cfg.StderrPath} {
			if err := os.WriteFile(p, []byte("leaked "+key+"\n"), 0o600); err != nil {
				return nil, err
			}
		}
		// A file where the snapshot's directory goes: the snapshot phase fails.
		return exited(0), os.WriteFile(filepath.Join(runDir, record.WorkspaceDir), nil, 0o600)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(p, []byte(agentTask("leaky", "true", "  - {type: file_exists, path: x}\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Close()
	o := Options{RunsDir: t.TempDir(), InitDir: t.TempDir(), Backend: rt, LookupEnv: hostEnv(map[string]string{"ANTHROPIC_API_KEY": key})}
	res, err := Run(context.Background(), tk, o)
	var pe *PhaseError
	if !errors.As(err, &pe) || pe.Phase != PhaseSnapshot || res.Status != record.StatusError {
		t.Fatalf("err %v, result %+v: want an ERROR in the snapshot phase", err, res)
	}
	for _, f := range []string{record.StdoutFile, record.StderrFile} {
		b, err := os.ReadFile(filepath.Join(runDir, f))
		if err != nil || strings.Contains(string(b), key) || !strings.Contains(string(b), "leaked ") {
			t.Errorf("%s after a failed run: %q, %v; want the key redacted", f, b, err)
		}
	}
}
