package verifier

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// Defaults of Options.
const (
	DefaultMaxOutput = 1 << 20
	DefaultGrace     = 2 * time.Second
	// DefaultMaxReferenceBytes bounds the copy of a reference directory made per criterion.
	DefaultMaxReferenceBytes = 256 << 20
)

// Container paths of a verifier.
const (
	ReferencePath   = "/reference" // the task's reference, for a criterion with uses_reference
	GraderFilesPath = "/task"      // the task's grader_files, when it has them
)

// Options configure an Executor. Client is required.
type Options struct {
	Client    *client.Client
	Namespace string                 // containerd namespace; "" = the one ctx carries
	Busybox   string                 // for building the default image on first use
	Preflight *images.PreflightCache // nil: images.Preflight without a disk cache
	Pins      *images.Pinner         // pins (and pulls) criteria's images; nil: by name only
	InitDir   string                 // where the static init is installed; "" = local.DefaultInitDir()
	IDs       sandbox.IDRange        // the zero value is sandbox.DefaultIDRange
	// ScratchDir is where each criterion's directory (its workspace mount point, its copy of
	// the reference) is made; "" = os.TempDir().
	ScratchDir string
	// MaxOutput caps each of stdout and stderr kept for scoring; the rest is read and dropped.
	MaxOutput int64
	Grace     time.Duration // SIGTERM to SIGKILL at the timeout
	// AllowHostNetwork is the user's --allow-host-network: without it a criterion with
	// network: host is NOT_GRADED.
	AllowHostNetwork bool
	// Network is the user's verifier_network: "" or policy.NetworkNone (each criterion's own
	// network, none by default), or policy.NetworkHost: every criterion on the host's
	// network, for suites whose tests install their tools (apt-get, uv) at test time.
	Network string
	// Unprivileged runs the command as policy.GraderUID over the image's read-only root
	// instead of as root of its user namespace over a writable copy (the default).
	Unprivileged bool
	// MaxReferenceBytes caps each copy of grading material (the reference, grader_files); a
	// bigger one is an error of the task.
	MaxReferenceBytes int64
	// Log hears the progress of a package image's build (packages, pip); nil discards it.
	Log io.Writer
}

// Executor runs container-tier criteria; it implements grader.Executor.
type Executor struct {
	opts Options

	mu    sync.Mutex
	built map[string]bool // package images built (or found up to date) by this Executor
	// stdlibs are the CPython standard libraries of each image, by image and digests
	// (pythonStdlibs).
	stdlibs map[string][]pyStdlib
	// lent is ceval's own pytest, copied once for every criterion this Executor runs
	// (lentPytest, harborpytest.go).
	lent lentPytestCopy
}

// New returns an Executor; it holds nothing until Execute runs.
func New(opts Options) (*Executor, error) {
	if opts.Client == nil {
		return nil, errors.New("verifier: no containerd client")
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.MaxReferenceBytes <= 0 {
		opts.MaxReferenceBytes = DefaultMaxReferenceBytes
	}
	if opts.ScratchDir == "" {
		opts.ScratchDir = os.TempDir()
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	switch opts.Network {
	case "", policy.NetworkNone, policy.NetworkHost:
	default:
		return nil, fmt.Errorf("verifier: network %q: want %s or %s", opts.Network, policy.NetworkNone, policy.NetworkHost)
	}
	return &Executor{opts: opts, built: map[string]bool{}, stdlibs: map[string][]pyStdlib{}}, nil
}

// Root says whether verifier containers run as root of their user namespace over a
// writable copy of the image's root: the default, unless Options.Unprivileged or a rootless
// daemon (whose user namespace cannot idmap the image's layers).
func (e *Executor) Root() bool { return !e.opts.Unprivileged && local.RootVerifierSupported() }

// Run is what one criterion's container did: the fields grader.ScoreCommand scores, and
// how the container ended.
type Run struct {
	grader.CommandRun
	Exit      launcher.Exit
	Isolation *record.Attestation
	Resources launcher.Resources
	// Report is a pytest criterion's JUnit report, read from the workspace copy once every
	// process of the container was gone (nil when pytest wrote none).
	Report []byte
	// Reward is a harbor_reward criterion's reward as test.sh's shell wrote it (nil: none),
	// read once every process was gone; RewardFile names its file, RewardErr says why it
	// could not be read.
	Reward     []byte
	RewardFile string
	RewardErr  string
	// StdoutCut and StderrCut are the bytes written past Options.MaxOutput, dropped.
	StdoutCut, StderrCut int64
	// Guarded: a harbor_reward or isolation: process run; Started: its harness passed its
	// checks and started the task's code (see harborStarted).
	Guarded, Started bool
}

// Execute runs c's command in a fresh verifier container and scores it.
func (e *Executor) Execute(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot, reference *task.Dir) (grader.Scored, error) {
	r, err := e.Run(ctx, c, s, reference)
	var big *workspaceTooBig
	if errors.As(err, &big) {
		return grader.Scored{Details: big.Error()}, nil
	}
	if err != nil {
		return grader.Scored{}, err
	}
	sc, err := scoreRun(c, r)
	sc.Output = &grader.Output{Stdout: r.Stdout, Stderr: r.Stderr, StdoutCut: r.StdoutCut, StderrCut: r.StderrCut}
	return sc, err
}

// scoreRun scores what c's container left: pytest from its exit status and report, any
// other command as grader.ScoreCommand does.
func scoreRun(c *task.Criterion, r *Run) (grader.Scored, error) {
	if r.Guarded && !r.Started && r.Limit == "" {
		// The harness refused before any of the task's code ran: ceval's or the task's side.
		return grader.Scored{}, fmt.Errorf("verifier: the command did not start: %s", strings.TrimSpace(tailOf(r.Stderr)))
	}
	if s, ok := c.Spec.(*task.RunCommandSpec); ok && s.HarborReward {
		return scoreHarbor(s, r)
	}
	if s, ok := c.Spec.(*task.PytestSpec); ok && r.Limit == "" {
		sc, details := grader.ScorePytest(r.ExitCode, r.Report, s.AllOrNothing)
		switch {
		case s.Isolation == task.IsolationProcess:
			// The test process says what it lacked (isolatedBoot): the image's python3 has
			// no pytest and this host lends none, or ceval's does not import in it.
			// Its exit 4 is pytest's usage error's too: the note says which (score 0 either way).
			if line := isolationNote(r.Stderr); r.ExitCode == 4 && line != "" {
				details = "no pytest ran (exit 4): " + line
			}
		case r.ExitCode == 4 && lentPytestNote(r.Stderr, plainPytestWho) != "":
			// Likewise for a pytest criterion without isolation: process (pytestBoot).
			details = "no pytest ran (exit 4): " + lentPytestNote(r.Stderr, plainPytestWho)
		case r.ExitCode == 127:
			details += "; " + noPython3
		case bytes.Contains(r.Stderr, []byte("No module named 'pytest'")) || bytes.Contains(r.Stderr, []byte("No module named pytest")):
			details += "; the image's python3 has no pytest and ceval lent none: give the criterion packages: [python3-pytest] (or an image that has it)"
		}
		if len(r.Notes) > 0 {
			details += "; " + strings.Join(r.Notes, "; ")
		}
		return grader.Scored{Score: sc, Details: details}, nil
	}
	return grader.ScoreCommand(c, r.CommandRun)
}

// image resolves the criterion's image, building its package image first (once per
// Executor: later criteria find it in containerd) when it asks for packages or pip.
func (e *Executor) image(ctx context.Context, v *task.Verifier) (images.Image, error) {
	if len(v.Packages) == 0 && len(v.Pip) == 0 {
		return images.ResolvePinned(ctx, e.opts.Client, v.Image, e.opts.Pins, e.opts.Preflight, e.opts.Busybox)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.built[v.Image] {
		return images.ResolvePinned(ctx, e.opts.Client, v.Image, e.opts.Pins, e.opts.Preflight, e.opts.Busybox)
	}
	sb := task.Sandbox{Image: v.Image, Packages: v.Packages, Pip: v.Pip, PipFindLinks: v.PipFindLinks}
	img, err := images.ResolveSandbox(ctx, e.opts.Client, sb, e.opts.Pins, e.opts.Preflight, e.opts.Busybox, e.opts.Log)
	if err == nil {
		e.built[v.Image] = true
	}
	return img, err
}

// Run runs c's command in a fresh verifier container over a copy of s and returns what it
// left; an error is ceval's side (or the task's: an image that is missing or fails the
// preflight, a reference it cannot copy), never the command's.
func (e *Executor) Run(ctx context.Context, c *task.Criterion, s *snapshot.Snapshot, reference *task.Dir) (*Run, error) {
	if e.opts.Namespace != "" {
		ctx = namespaces.WithNamespace(ctx, e.opts.Namespace)
	}
	v := c.Verifier()
	if v == nil {
		return nil, fmt.Errorf("verifier: criterion %s at line %d does not declare sandbox: container", c.Type, c.Line)
	}
	if s == nil {
		return nil, errors.New("verifier: no snapshot")
	}
	// run_command's command and flags, or pytest's spec (v is set only for these two types).
	var (
		command                     string
		usesReference, harborReward bool
		pytest                      *task.PytestSpec
	)
	switch s := c.Spec.(type) {
	case *task.RunCommandSpec:
		command, usesReference, harborReward = s.Command, s.UsesReference, s.HarborReward
	case *task.PytestSpec:
		pytest = s
	}
	timeout, services := c.Execution().Timeout, c.Services()
	if usesReference && reference.Root() == nil {
		return nil, errors.New("verifier: the criterion uses_reference but the task has no reference directory")
	}
	network := policy.NetworkNone
	switch v.Network {
	case "", policy.NetworkNone:
		if e.opts.Network == policy.NetworkHost {
			network = policy.NetworkHost // the user's verifier_network, never the task's
		}
	case policy.NetworkHost:
		if !e.opts.AllowHostNetwork {
			return nil, &grader.NotGradedError{Reason: "network: host runs the agent's code on the host's network: only with --allow-host-network (or allow_host_network in ceval's config)"}
		}
		network = policy.NetworkHost
	default:
		return nil, fmt.Errorf("verifier: unknown network %q", v.Network)
	}
	// A kernel whose overlayfs takes no idmapped layers fails the root overlay's mount: say
	// so before the image is resolved (supervisor.Check said it before the run started).
	if e.Root() && !c.SharesNoPrivilegeWithItsTests() {
		if err := local.CheckRootOverlayKernel(); err != nil {
			return nil, fmt.Errorf("verifier: %w", err)
		}
	}
	// NewSandbox names the installed init by its digest: hashed (once per process) while
	// the image is resolved, which mostly waits on containerd.
	go embedded.Init.SHA256()
	img, err := e.image(ctx, v)
	if err != nil {
		return nil, fmt.Errorf("verifier image: %w", err)
	}
	dir, err := tempdir.Make(e.opts.ScratchDir, "ceval-verify-")
	if err != nil {
		return nil, fmt.Errorf("verifier: %w", err)
	}
	defer tempdir.Remove(dir)
	// Search-only for the container's user namespace, which resolves the bind sources.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, fmt.Errorf("verifier: %w", err)
	}
	// Grading material is copied through its handle, per criterion, and bound read-only.
	var mounts []oci.Mount
	var material []string
	for _, m := range []struct {
		dir  *task.Dir
		dst  string
		name string
	}{
		{reference, ReferencePath, "reference"},
	} {
		if m.dir.Root() == nil || (m.dst == ReferencePath && !usesReference) {
			continue
		}
		copyDir := filepath.Join(dir, m.name)
		if err := copyMaterial(m.dir, copyDir, e.opts.MaxReferenceBytes); err != nil {
			return nil, err
		}
		mounts = append(mounts, oci.Mount{Source: copyDir, Destination: m.dst})
		material = append(material, copyDir)
	}
	if len(v.GraderFiles) > 0 {
		copyDir := filepath.Join(dir, "grader_files")
		if err := copyGraderFiles(v.GraderFiles, copyDir, e.opts.MaxReferenceBytes); err != nil {
			return nil, err
		}
		mounts = append(mounts, oci.Mount{Source: copyDir, Destination: GraderFilesPath})
		material = append(material, copyDir)
	}
	// A criterion that reaches the task's services gets them as the agent did: their names
	// in /etc/hosts, and their declared ports relayed into its own network namespace.
	var beforeStart launcher.StartHook
	if len(services) > 0 {
		acc := sandbox.ServicesFrom(ctx)
		switch {
		case acc == nil:
			return nil, &grader.NotGradedError{Reason: fmt.Sprintf("the criterion reaches the task's services %v, which run only within ceval run", services)}
		case network != policy.NetworkNone:
			return nil, errors.New("verifier: a criterion with services needs network: none (the services are relayed into its own network namespace)")
		}
		mounts = append(mounts, acc.Hosts())
		beforeStart = acc.BeforeStart(services)
	}
	var notes []string
	stdout := &cappedBuffer{max: e.opts.MaxOutput}
	stderr := &cappedBuffer{max: e.opts.MaxOutput}
	diskMB := v.DiskMB
	if diskMB <= 0 {
		diskMB = policy.DefaultDiskMB
	}
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	argv, env := []string{"/bin/sh", "-c", command}, []string(nil)
	if pytest != nil {
		if pytest.Tests == nil {
			return nil, errors.New("verifier: pytest criterion without tests")
		}
		argv, env = pytestArgv(pytest), pytestEnv
	}
	// A hidden directory only the command's own shell (harbor_reward) or test process
	// (isolation: process) can name: see harborDir.
	var harbor *harborDir
	if harborReward || pytest != nil && pytest.Isolation == task.IsolationProcess {
		if harbor, err = newHarborDir(); err != nil {
			return nil, fmt.Errorf("verifier: %w", err)
		}
		if harborReward {
			argv, env = harborArgv(command), []string{harbor.env}
		} else {
			argv, env = isolatedArgv(pytest), append(slices.Clone(pytestEnv), isolateEnv+strings.TrimPrefix(harbor.env, harborRewardEnv))
		}
	}
	if harborReward || pytest != nil {
		// ceval's own pytest, for an image whose python3 has none (see harborpytest.go):
		// test.sh's, and every pytest criterion's test process (lentPytestImport); a host
		// without python3-pytest lends none, and each says what it lacks.
		// One read-only copy serves every criterion of this Executor.
		switch pyDir, err := e.lentPytest(); {
		case err == nil:
			mounts = append(mounts, oci.Mount{Source: pyDir, Destination: HarborPytestPath})
			env = append(env, harborPytestEnv())
		case !errors.Is(err, errNoHostPytest):
			return nil, fmt.Errorf("verifier: %w", err)
		}
	}
	// The agent's sandbox.outputs, each copied into a capped scratch filesystem of its own
	// at the same container path, as the workspace is.
	var outputs []string
	for _, o := range s.Outputs {
		outputs = append(outputs, o.Path)
	}
	// Every python3 a command starts (python3 -c, -m, a script, pytest, one a script
	// starts) runs ceval's import guard from its sitecustomize first: a name the image
	// provides never imports from the workspace or an output (see importGuard). The pytest
	// criteria run the guard in their boot.
	// Every CPython of the image, however it starts (-S, -I, -E, env -i, any PYTHONPATH, a
	// venv, a shebang), runs the guard first from its own encodings package (pystart.go).
	libs, err := e.pythonStdlibs(ctx, img)
	if err != nil {
		return nil, err
	}
	startMounts, err := pythonStartMounts(filepath.Join(dir, "python-start"), libs, append([]string{oci.WorkspacePath}, outputs...))
	if err != nil {
		return nil, fmt.Errorf("verifier: %w", err)
	}
	mounts = append(mounts, startMounts...)
	var prependEnv []string
	if c.Type != task.Pytest {
		hook := filepath.Join(dir, "python")
		if err := writePythonHook(hook, append([]string{oci.WorkspacePath}, outputs...)); err != nil {
			return nil, fmt.Errorf("verifier: %w", err)
		}
		mounts = append(mounts, oci.Mount{Source: hook, Destination: pythonHookPath})
		prependEnv = []string{"PYTHONPATH=" + pythonHookPath}
		if !harborReward {
			argv = pythonHookArgv(command)
		}
	}
	sb, err := local.NewSandbox(ctx, sandbox.Config{
		Outputs: outputs,
		PrepareOutput: func(i int, dir string) error {
			n, err := copySnapshot(s.Outputs[i].Snapshot, dir)
			for _, note := range n {
				notes = append(notes, "output "+outputs[i]+": "+note)
			}
			var big *workspaceTooBig
			if errors.As(err, &big) {
				return &workspaceTooBig{path: outputs[i] + "/" + big.path} // the output's, by its container path
			}
			return err
		},
		Client: e.opts.Client, Image: img.Name, ID: "verify-" + hex.EncodeToString(id),
		Argv: argv, Env: env, PrependEnv: prependEnv,
		Limits:  task.Limits{Timeout: timeout, MemoryMB: v.MemoryMB, CPUs: policy.DefaultCPUs, Pids: v.Pids, DiskMB: diskMB},
		Network: network, Grace: e.opts.Grace, InitDir: e.opts.InitDir, IDs: e.opts.IDs,
		Dir: filepath.Join(dir, "sandbox"), Mounts: mounts, UID: policy.GraderUID, Root: e.Root() && !c.SharesNoPrivilegeWithItsTests(),
		Stdout: stdout, Stderr: stderr, BeforeStart: beforeStart,
		Prepare: func(workspace, home string) error {
			var err error
			if notes, err = copySnapshot(s, workspace); err != nil {
				return err
			}
			if harbor != nil {
				if err := harbor.make(home); err != nil {
					return err
				}
			}
			// A report the snapshot planted where pytest writes its own must never be read.
			return os.RemoveAll(filepath.Join(workspace, pytestReportDir))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("verifier container: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = sb.Close(ctx)
		}
	}()
	if harbor != nil {
		if err := harbor.seal(); err != nil {
			return nil, err
		}
	}
	for _, d := range material {
		// The grader's alone, read-only: no other host account reads grading material.
		if err := handTo(d, int(sb.HostUID())); err != nil {
			return nil, err
		}
	}
	out, runErr := sb.Run(ctx, nil)
	var report []byte
	var reportErr error
	if runErr == nil && c.Type == task.Pytest {
		// Run returned with the container's cgroup empty: nothing can write the report now.
		if harbor != nil {
			report, reportErr = harbor.readReport()
		} else {
			report, reportErr = readReport(sb.Workspace)
		}
	}
	var reward []byte
	var rewardFile, rewardErr string
	started := runErr == nil && harbor != nil && harbor.started()
	if runErr == nil && harborReward {
		// Likewise for the reward: the container's processes are all gone.
		var err error
		if reward, rewardFile, err = harbor.read(); err != nil {
			rewardErr = err.Error()
		}
	}
	// Delete the container before reading its output: the IO copy completes only then, and
	// nothing of the command's can write any more.
	closed = true
	if err := sb.Close(ctx); err != nil {
		return nil, errors.Join(runErr, fmt.Errorf("verifier container: %w", err))
	}
	if runErr != nil {
		return nil, fmt.Errorf("verifier container: %w", runErr)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("verifier: grading stopped: %w", err)
	}
	r := &Run{Exit: out.Exit, Isolation: out.Isolation, Resources: out.Resources, Report: report,
		Reward: reward, RewardFile: rewardFile, RewardErr: rewardErr, Guarded: harbor != nil, Started: started}
	r.ExitCode = out.Exit.Code
	r.Stdout, r.Stderr = stdout.bytes(), stderr.bytes()
	r.StdoutCut, r.StderrCut = stdout.cut, stderr.cut
	r.Notes = append(notes, unguardedNotes(libs)...)
	switch {
	case out.Exit.TimedOut:
		r.Limit = fmt.Sprintf("timeout: still running after the %v limit; stopped", timeout)
	case out.Resources.OOMKills > 0:
		r.Limit = fmt.Sprintf("memory limit: %d process(es) killed over the %d MiB limit", out.Resources.OOMKills, v.MemoryMB)
	case stdout.cut > 0:
		r.Limit = fmt.Sprintf("stdout limit: more than %d bytes written (%d bytes over)", e.opts.MaxOutput, stdout.cut)
	}
	if reportErr != nil {
		r.Notes = append(r.Notes, reportErr.Error())
	}
	if stderr.cut > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("stderr over %d bytes was cut", e.opts.MaxOutput))
	}
	if p := out.Resources; p.PidsLimit > 0 && p.PidsPeak >= p.PidsLimit {
		r.Notes = append(r.Notes, fmt.Sprintf("pids limit %d reached", p.PidsLimit))
	}
	return r, nil
}

// cappedBuffer keeps the first max bytes written to it and counts the rest.
type cappedBuffer struct {
	mu  sync.Mutex
	max int64
	buf []byte
	cut int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - int64(len(b.buf))
	keep := min(int64(len(p)), max(room, 0))
	b.buf = append(b.buf, p[:keep]...)
	b.cut += int64(len(p)) - keep
	return len(p), nil
}

func (b *cappedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...)
}

// tailOf is the last 300 bytes of b, quoted.
func tailOf(b []byte) string {
	const n = 300
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strconv.Quote(string(b))
}
