package local

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/containerd/containerd/v2/client"
	ctroci "github.com/containerd/containerd/v2/pkg/oci"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/closed"
	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/internal/phasetime"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
)

// Sandbox is a created agent container with its scratch filesystems.
type Sandbox struct {
	Workspace string   // host path of /workspace (a capped tmpfs)
	Home      string   // host path of /home/agent (a capped tmpfs)
	Outputs   []string // host paths of sandbox.Config.Outputs, in order (capped tmpfs each)
	cfg       sandbox.Config
	ctr       *launcher.Container
	created   *launcher.Task // Ready's task, created and not yet started; Start takes it
	primed    *primedInit    // Prime's task, started and attested, its init waiting for the go-ahead; Start takes it
	undo      []func() error // in reverse order on Close
	goW       *io.PipeWriter
	ids       *IDSlot
	userns    *launcher.UserNS
	ocfg      oci.Config    // the agent container's; a step's container is made from a copy (see RunStep)
	imageEnv  []string      // the image config's Env as ceval applies it (imageEnv), under cfg.Env
	chainID   digest.Digest // the image's layers (its snapshot's key), when its config was read by digest
	initPath  string
	bootID    string
	lifeline  *launcher.Lifeline
	rootPath  string // the RootOverlay of a Root sandbox
}

// pidsSampleInterval is how often the container's pids are read while the agent runs.
const pidsSampleInterval = 200 * time.Millisecond

// supervisorFIFOName is the FIFO in sandbox.Config.Dir that the container's init watches.
const supervisorFIFOName = "supervisor.fifo"

const (
	homeMB     = 512
	homeInodes = 65536
)

func workspaceInodes(diskMB int64) int64 {
	return min(max(diskMB*256, 4096), 1_000_000)
}

// DefaultInitDir is where the static init is installed when no directory is given.
func DefaultInitDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ceval", "init")
	}
	return filepath.Join(os.TempDir(), "ceval-init")
}

// NewSandbox mounts the capped scratch filesystems, prepares them, hands them to the
// agent's UID without following links, and creates the container. Close undoes it all.
func NewSandbox(ctx context.Context, cfg sandbox.Config) (_ *Sandbox, err error) {
	if cfg.InitDir == "" {
		cfg.InitDir = DefaultInitDir()
	}
	if cfg.Grace == 0 {
		cfg.Grace = policy.DefaultGrace
	}
	if cfg.UID == 0 && !cfg.Root {
		cfg.UID = policy.AgentUID
	}
	s := &Sandbox{cfg: cfg, Workspace: filepath.Join(cfg.Dir, "workspace"), Home: filepath.Join(cfg.Dir, "home")}
	defer func() {
		if err != nil {
			_ = s.Close(ctx)
		}
	}()
	for i := range cfg.Outputs {
		s.Outputs = append(s.Outputs, filepath.Join(cfg.Dir, "outputs", strconv.Itoa(i)))
	}
	for _, d := range append([]string{s.Workspace, s.Home}, s.Outputs...) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	s.undo = append(s.undo, func() error { return os.RemoveAll(cfg.Dir) })
	if cfg.IDs == (sandbox.IDRange{}) {
		cfg.IDs = sandbox.DefaultIDRange
	}
	// Three independent chains overlap here, as they each wait on something else (the /proc
	// scan and the holder's fork and exec; hashing the init; mounts and files): the run's IDs
	// and its user namespace's holder, the init's installation, and the scratch filesystems.
	// Nothing that needs the IDs (the chown, the container) runs before they are joined.
	ids, _ := cfg.Reserved.(*idChain)
	if ids == nil {
		ids = startIDs(cfg.IDs)
	}
	// The slot is released last (undo runs backwards): after the container and its
	// processes are gone, and the scratch filesystems owned by its IDs with them. Undo
	// waits for the chain, so a failure elsewhere never leaves its slot or holder behind.
	s.undo = append(s.undo, ids.Release)
	initc := make(chan error, 1)
	go func() {
		var err error
		if s.initPath, err = embedded.Init.Install(cfg.InitDir); err != nil {
			err = fmt.Errorf("install init: %w", err)
		}
		initc <- err
	}()
	initDone := false
	defer func() {
		if !initDone {
			<-initc // s.initPath is written by that goroutine: never return before it
		}
	}()
	endScratch := phasetime.Span("sandbox: scratch mounts")
	unmountWS, err := launcher.MountScratch(s.Workspace, cfg.Limits.DiskMB, workspaceInodes(cfg.Limits.DiskMB), 0, 0)
	if err != nil {
		return nil, err
	}
	s.undo = append(s.undo, unmountWS)
	unmountHome, err := launcher.MountScratch(s.Home, homeMB, homeInodes, 0, 0)
	if err != nil {
		return nil, err
	}
	s.undo = append(s.undo, unmountHome)
	for _, d := range s.Outputs {
		unmount, err := launcher.MountScratch(d, cfg.Limits.DiskMB, workspaceInodes(cfg.Limits.DiskMB), 0, 0)
		if err != nil {
			return nil, err
		}
		s.undo = append(s.undo, unmount)
	}
	// The image's config: its WorkingDir's tree starts the workspace, its ENV (PATH to its
	// tools, above all) is the processes' as Docker gives it, under ceval's own variables.
	endScratch()
	endRC := phasetime.Span("sandbox: image config")
	rc, chain, err := imageConfig(ctx, cfg)
	endRC()
	if err != nil {
		return nil, err
	}
	s.chainID = chain
	endWD := phasetime.Span("sandbox: workdir")
	cp, err := copyImageWorkdir(ctx, cfg.Client, cfg.Image, chain, rc.WorkingDir, cfg.ImageWorkdir, s.Workspace, cfg.Limits.DiskMB)
	endWD()
	if err != nil {
		return nil, &sandbox.InputError{Err: err}
	}
	if (cp.Entries > 0 || len(cp.Skipped) > 0) && cfg.Emit != nil {
		cfg.Emit("image_workdir", map[string]any{"image": cfg.Image, "dir": cp.Dir, "entries": cp.Entries, "bytes": cp.Bytes, "skipped": cp.Skipped})
	}
	if cfg.OutputsFromImage {
		skipped, err := copyImageOutputs(ctx, cfg.Client, cfg.Image, cfg.Outputs, s.Outputs, cfg.Limits.DiskMB)
		if err != nil {
			return nil, &sandbox.InputError{Err: err}
		}
		if len(skipped) > 0 && cfg.Emit != nil {
			cfg.Emit("image_outputs", map[string]any{"image": cfg.Image, "skipped": skipped})
		}
	}
	var dropped []string
	s.imageEnv, dropped = sandbox.ImageEnv(rc.Env, cp.Dir)
	if cfg.ImageWorkdirEnv != "" && cp.Dir != "" {
		// under cfg.Env as the image's own variables are, and in every step's process
		s.imageEnv = append(s.imageEnv, cfg.ImageWorkdirEnv+"="+cp.Dir)
	}
	if (len(s.imageEnv) > 0 || len(dropped) > 0) && cfg.Emit != nil {
		cfg.Emit("image_env", map[string]any{"image": cfg.Image, "env": s.imageEnv, "dropped": dropped})
	}
	if len(rc.Entrypoint) > 0 && cfg.Emit != nil {
		// ceval starts its init and the task's command, never the image's ENTRYPOINT.
		cfg.Emit("image_entrypoint_not_run", map[string]any{"image": cfg.Image, "entrypoint": rc.Entrypoint,
			"note": "the image's ENTRYPOINT does not run in ceval: give the task a setup step that runs it (the Harbor import does)"})
	}
	if cfg.Prepare != nil {
		if err := cfg.Prepare(s.Workspace, s.Home); err != nil {
			return nil, &sandbox.InputError{Err: err}
		}
	}
	if cfg.PrepareOutput != nil {
		for i, d := range s.Outputs {
			if err := cfg.PrepareOutput(i, d); err != nil {
				return nil, &sandbox.InputError{Err: fmt.Errorf("output %s: %w", cfg.Outputs[i], err)}
			}
		}
	}
	if s.bootID, err = launcher.BootID(); err != nil {
		return nil, err
	}
	// Held by this process alone until Close, after the container is deleted: if ceval dies
	// first, the kernel closes it and the init kills the agent (see launcher.Lifeline).
	if s.lifeline, err = launcher.NewLifeline(filepath.Join(cfg.Dir, supervisorFIFOName)); err != nil {
		return nil, err
	}
	s.undo = append(s.undo, s.lifeline.Close)
	endIDs := phasetime.Span("sandbox: ids wait")
	s.ids, s.userns, err = ids.wait()
	endIDs()
	if err != nil {
		return nil, err
	}
	s.undo = append(s.undo, s.userns.Close) // idempotent: hardenTask closes it at start
	if cfg.Root {
		cfg.UID = 0
		root, closeRoot, err := mountRootOverlay(ctx, cfg.Client, cfg.Image, s.userns.Path(), s.ids.HostID, cfg.Limits.DiskMB)
		if err != nil {
			return nil, err
		}
		s.undo = append(s.undo, closeRoot)
		s.rootPath = root
	}
	for _, d := range append([]string{s.Workspace, s.Home}, s.Outputs...) {
		if err := launcher.ChownTree(d, int(s.ids.HostID+cfg.UID), int(s.ids.HostID+cfg.UID)); err != nil {
			return nil, err
		}
	}
	initDone = true
	endInit := phasetime.Span("sandbox: init install wait")
	err = <-initc
	endInit()
	if err != nil {
		return nil, err
	}
	s.cfg = cfg
	defer phasetime.Span("sandbox: create container")()
	if err := s.create(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// create makes the container of s.cfg over the scratch filesystems, in a fresh holder of
// the run's user namespace (runc joins it, then Run's start lets it go).
func (s *Sandbox) create(ctx context.Context) (err error) {
	cfg := s.cfg
	userns := oci.UserNS{HostID: s.ids.HostID}
	if s.userns == nil { // NewSandbox made the first one; Again needs a fresh one
		if s.userns, err = launcher.NewUserNS(userns.HostID, oci.IDRangeSize); err != nil {
			return err
		}
		s.undo = append(s.undo, s.userns.Close)
	}
	userns.Path = s.userns.Path()
	var outputs []oci.Mount
	for i, p := range cfg.Outputs {
		outputs = append(outputs, oci.Mount{Source: s.Outputs[i], Destination: p})
	}
	extra := cfg.Mounts
	for _, d := range cfg.InitBinds {
		extra = append(slices.Clip(extra), oci.Mount{Source: s.initPath, Destination: d})
	}
	if cfg.Passwd != nil {
		p, err := installPasswd(filepath.Dir(s.initPath), cfg.Passwd)
		if err != nil {
			return err
		}
		extra = append(slices.Clip(extra), oci.Mount{Source: p, Destination: "/etc/passwd"})
	}
	ocfg := oci.Config{Outputs: outputs,
		RunID: launcher.ContainerID(cfg.ID), PID: os.Getpid(), BootID: s.bootID,
		Args: cfg.Argv, Env: sandbox.MergeImageEnv(sandbox.PrependImageEnv(s.imageEnv, cfg.PrependEnv), cfg.Env), WorkspaceDir: s.Workspace, HomeDir: s.Home, InitPath: s.initPath, ExtraMounts: extra,
		SupervisorFIFO: s.lifeline.Path(), WaitForGo: true, Timeout: cfg.Limits.Timeout, Grace: cfg.Grace,
		MemoryMB: cfg.Limits.MemoryMB, CPUs: cfg.Limits.CPUs, Pids: cfg.Limits.Pids, Network: cfg.Network,
		UserNS: userns, UID: cfg.UID, RootInUserNS: cfg.Root, RootPath: s.rootPath, Cwd: cfg.Cwd, UserName: cfg.UserName,
	}
	opts, err := specOpts(ocfg)
	if err != nil {
		return err
	}
	img, err := s.image(ctx)
	if err != nil {
		return err
	}
	s.ocfg = ocfg
	goR, goW := io.Pipe()
	s.goW = goW
	s.ctr, err = launcher.Create(ctx, cfg.Client, launcher.Spec{
		ID: ocfg.RunID, Image: img, ImageName: cfg.Image, ChainID: s.chainID, Opts: opts, Labels: oci.Labels(ocfg),
		Snapshotter: images.Snapshotter, // where images unpacked it: no lookup of the namespace's default
		StdoutPath:  cfg.StdoutPath, StderrPath: cfg.StderrPath, Stdout: cfg.Stdout, Stderr: cfg.Stderr,
		LogCap: cfg.LogCap, Stdin: goR, RootPath: s.rootPath,
	})
	return err
}

// image is the agent's image for launcher.Spec: nil when its layers' chain ID is known
// (launcher.Create then makes the rootfs from that snapshot without a lookup), else looked up.
func (s *Sandbox) image(ctx context.Context) (client.Image, error) {
	if s.chainID != "" {
		return nil, nil
	}
	img, err := s.cfg.Client.GetImage(ctx, s.cfg.Image)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.cfg.Image, err)
	}
	return img, nil
}

// imageConfig is the run configuration of cfg's image and its layers' chain ID: read by the
// config digest it was resolved to when cfg has it (images.ConfigOf), else by name (chain "").
func imageConfig(ctx context.Context, cfg sandbox.Config) (ocispec.ImageConfig, digest.Digest, error) {
	if cfg.ImageConfig != "" {
		ic, err := images.ConfigOf(ctx, cfg.Client, cfg.ImageConfig)
		if err != nil {
			return ocispec.ImageConfig{}, "", fmt.Errorf("image %s: %w", cfg.Image, err)
		}
		return ic.Config, images.ChainID(ic), nil
	}
	rc, err := images.RunConfig(ctx, cfg.Client, cfg.Image)
	if err != nil {
		return rc, "", fmt.Errorf("image %s: %w", cfg.Image, err)
	}
	return rc, "", nil
}

// Again deletes the container, whose agent Run has reaped, and creates a fresh one over the
// same workspace and home (owned by the same IDs) for the agent's next iteration, with its
// own argv, environment, timeout and output files; Run starts it, attested like the first.
func (s *Sandbox) Again(ctx context.Context, next sandbox.AgainConfig) error {
	cleanupCtx, cancel := launcher.CleanupContext(ctx)
	defer cancel()
	if s.ctr != nil {
		if err := s.ctr.Delete(cleanupCtx); err != nil {
			return fmt.Errorf("delete the container of the last iteration: %w", err)
		}
		s.ctr, s.created, s.primed = nil, nil, nil
	}
	if next.Prepare != nil {
		if err := next.Prepare(s.Workspace); err != nil {
			return err
		}
		if err := launcher.ChownTree(s.Workspace, int(s.HostUID()), int(s.HostUID())); err != nil {
			return err
		}
	}
	s.cfg.Argv, s.cfg.Env, s.cfg.Limits.Timeout = next.Argv, next.Env, next.Timeout
	s.cfg.StdoutPath, s.cfg.StderrPath = next.StdoutPath, next.StderrPath
	s.userns = nil // the last container's was closed at its start
	return s.create(ctx)
}

// Config is the configuration the sandbox was made from, its defaults filled in.
func (s *Sandbox) Config() sandbox.Config { return s.cfg }

// DeleteContainer deletes the container (its agent reaped) and keeps the scratch
// filesystems for another iteration: verifier containers start only once it is gone.
func (s *Sandbox) DeleteContainer(ctx context.Context) error {
	if s.ctr == nil {
		return nil
	}
	cleanupCtx, cancel := launcher.CleanupContext(ctx)
	defer cancel()
	err := s.ctr.Delete(cleanupCtx)
	s.ctr, s.created, s.primed = nil, nil, nil
	return err
}

// HostUID is the host UID (and GID) of the container's process: its user namespace's base
// plus sandbox.Config.UID. A file chowned to it is the process's alone.
func (s *Sandbox) HostUID() uint32 { return s.ids.HostID + s.cfg.UID }

// Run starts the container, attests the init after its execve, lets the agent start only
// when the attestation matches policy, and waits for it with the timeout and grace, killing
// and reaping everything. emit (may be nil) hears "attested" and "agent_started".
func (s *Sandbox) Run(ctx context.Context, emit func(string, map[string]any)) (*sandbox.Outcome, error) {
	if emit == nil {
		emit = func(string, map[string]any) {}
	}
	cleanupCtx, cancel := launcher.CleanupContext(ctx)
	defer cancel()
	out := &sandbox.Outcome{}
	tk, att, err := s.Start(ctx)
	out.Isolation = att
	if err != nil {
		return out, err
	}
	emit("attested", map[string]any{"isolation": att})
	emit("agent_started", map[string]any{"argv0": s.cfg.Argv[0]})
	// cgroups keep no peak of pids: sample it while the agent runs.
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(pidsSampleInterval)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				_, _ = tk.Metrics(cleanupCtx)
			}
		}
	}()
	// Stop ends the agent through Wait's own stop path: cancelling the context Wait watches.
	waitCtx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	stopped := make(chan struct{})
	if s.cfg.Stop != nil {
		go func() {
			select {
			case <-s.cfg.Stop:
				close(stopped)
				stopAgent()
			case <-waitCtx.Done():
			}
		}()
	}
	endWait := phasetime.Span("agent: wait")
	exit, werr := tk.Wait(waitCtx, s.cfg.Limits.Timeout, s.cfg.Grace)
	endWait()
	if exit.Interrupted && ctx.Err() == nil && closed.Is(stopped) {
		exit.Interrupted, out.Stopped = false, true
	}
	close(stopSampling)
	<-sampled
	out.Exit = exit
	if r, err := tk.Metrics(cleanupCtx); err == nil {
		out.Resources = r
	}
	if werr != nil {
		return out, werr
	}
	if !exit.Interrupted && !exit.CgroupEmpty {
		return out, fmt.Errorf("processes remained in the container after the kill (%s)", exit.CgroupError)
	}
	return out, nil
}

// primedInit is what Prime did ahead of the run's turn: the task started (or its failure)
// and the init's attestation (or its failure), for Start.
type primedInit struct {
	tk  *launcher.Task
	att *record.Attestation
	err error
}

// Prime starts the readied container's init and attests it ahead of the run's turn
// (sandbox.Primer): the init then waits for the go-ahead Start gives. Whatever it met (a
// failed start, an attestation that does not match policy) is Start's to return, at the turn.
func (s *Sandbox) Prime(ctx context.Context) {
	if s.primed != nil || s.created == nil {
		return
	}
	tk := s.created
	s.created = nil
	p := &primedInit{}
	s.primed = p
	if p.err = tk.Start(ctx); p.err != nil {
		return
	}
	p.tk = tk
	p.att, p.err = s.attestInit(ctx, tk.Pid())
}

// Start starts the container, attests the init after its execve and, when the attestation
// matches policy, lets the process start; the caller waits for it (Run does). The
// attestation is returned whenever it was read; on an error the init has exited without
// starting the process, or Start failed before. A primed sandbox (Prime) was started and
// attested ahead: Start gives the go-ahead, or returns what Prime met.
func (s *Sandbox) Start(ctx context.Context) (*launcher.Task, *record.Attestation, error) {
	var tk *launcher.Task
	var att *record.Attestation
	var err error
	if p := s.primed; p != nil {
		s.primed = nil
		if p.tk == nil {
			return nil, nil, p.err
		}
		tk, att, err = p.tk, p.att, p.err
	} else {
		if err := s.Ready(ctx); err != nil {
			return nil, nil, err
		}
		tk = s.created
		s.created = nil
		endStart := phasetime.Span("agent: task start")
		err = tk.Start(ctx)
		endStart()
		if err != nil {
			return nil, nil, err
		}
		endAttest := phasetime.Span("agent: attest")
		att, err = s.attestInit(ctx, tk.Pid())
		endAttest()
	}
	if err != nil {
		s.goW.Close() // EOF without the go-ahead: the init exits without starting the process
		cleanupCtx, cancel := launcher.CleanupContext(ctx)
		defer cancel()
		_, _ = tk.Wait(cleanupCtx, 5*time.Second, time.Second)
		return nil, att, err
	}
	tk.GoAhead(time.Now()) // the agent's deadline counts from here, as the init's does
	if _, err := s.goW.Write([]byte("go\n")); err != nil {
		return tk, att, fmt.Errorf("start %s: %w", s.cfg.Argv[0], err)
	}
	s.goW.Close()
	return tk, att, nil
}

// Ready creates the container's task ahead of Start (sandbox.Readier): runc makes its
// namespaces, cgroup and root, PID 1 is created and waits, and the BeforeStart hooks run (the
// user namespace's holder goes, the init's rlimits are lowered, the gateway listens in the
// task's network namespace); nothing of the image's or the agent's runs before Start. Again,
// or after Start, it does nothing until Start has taken the task.
func (s *Sandbox) Ready(ctx context.Context) error {
	if s.created != nil || s.primed != nil {
		return nil
	}
	if s.ctr == nil {
		return errors.New("ready: the sandbox has no container")
	}
	endCreate := phasetime.Span("agent: task create")
	tk, err := s.ctr.CreateTask(ctx, s.beforeStart)
	endCreate()
	if err != nil {
		return err
	}
	s.created = tk
	return nil
}

// specOpts is the container spec of ocfg (the agent's, or a step's made from it): oci's
// hardening, then, on a rootless daemon, the mode's limits (see Rootless.specOpts).
func specOpts(ocfg oci.Config) ([]ctroci.SpecOpts, error) {
	opts, err := oci.SpecOpts(ocfg)
	if err != nil {
		return nil, err
	}
	if rl := RootlessMode(); rl != nil {
		opts = append(opts, rl.specOpts(ocfg.RunID, ocfg.Pids, ocfg.MemoryMB)...)
	}
	return opts, nil
}

// attestInit waits for a container's init (host PID pid) to exec, reads its isolation and
// checks it against the sandbox's policy; the attestation is returned whenever it was read.
func (s *Sandbox) attestInit(ctx context.Context, pid uint32) (*record.Attestation, error) {
	att, err := attest(ctx, pid)
	if err != nil {
		return nil, err
	}
	att.Network = s.cfg.Network
	att.LimitsEnforcedBy = policy.RootfulLimits
	p := sandbox.Policy{
		UID: int(s.cfg.UID), GID: int(s.cfg.UID), PidsMax: s.cfg.Limits.Pids, Network: s.cfg.Network,
		IDMap: oci.UserNS{HostID: s.ids.HostID}.Mappings(), Rlimits: oci.Rlimits(),
	}
	if s.cfg.Root {
		p.Caps = oci.VerifierRootCaps
	}
	if rl := RootlessMode(); rl != nil {
		att.LimitsEnforcedBy = rl.limits()
		p.Rlimits = rl.policyRlimits(s.cfg.Limits.Pids)
		p.PidsByRlimit = rl.Delegated == ""
		// Checked in the daemon's numbering, where the spec's maps are; recorded in the host's.
		if err := sandbox.CheckAttestation(att, p); err != nil {
			return att, err
		}
		return att, rl.toHost(att)
	}
	return att, sandbox.CheckAttestation(att, p)
}

// beforeStart runs once the container's task exists: see hardenTask; then the caller's hook.
func (s *Sandbox) beforeStart(ctx context.Context, pid uint32) error {
	if err := s.hardenTask(s.userns, pid); err != nil {
		return err
	}
	if s.cfg.BeforeStart != nil {
		return s.cfg.BeforeStart(ctx, pid)
	}
	return nil
}

// hardenTask runs between a container's create and start (pid is its init's host PID): runc
// has joined the user namespace, so its holder can go; the init's rlimits are lowered as the
// process's own host IDs (see oci.Rlimits).
func (s *Sandbox) hardenTask(userns *launcher.UserNS, pid uint32) error {
	if err := userns.Close(); err != nil {
		return err
	}
	host := s.ids.HostID + s.cfg.UID
	return launcher.LowerRlimits(pid, host, host, oci.Rlimits())
}

// Close deletes the container and unmounts and removes the scratch filesystems; it runs on
// a context the caller's cancel does not cancel, so Ctrl-C still cleans up.
func (s *Sandbox) Close(ctx context.Context) error {
	cleanupCtx, cancel := launcher.CleanupContext(ctx)
	defer cancel()
	var errs []error
	if s.goW != nil {
		s.goW.Close()
	}
	if s.ctr != nil {
		endDelete := phasetime.Span("close: container delete")
		errs = append(errs, s.ctr.Delete(cleanupCtx)) // a task Ready created or Prime started and Start never took too
		endDelete()
		s.ctr, s.created, s.primed = nil, nil, nil
	}
	endUndo := phasetime.Span("close: unmounts")
	for i := len(s.undo) - 1; i >= 0; i-- {
		errs = append(errs, s.undo[i]())
	}
	endUndo()
	s.undo = nil
	return errors.Join(errs...)
}

// idChain is the run's IDs and the holder of its user namespace, made on a goroutine of
// their own (see NewSandbox): the /proc scan and the holder's fork and exec are waits.
type idChain struct {
	done   chan struct{}
	slot   *IDSlot
	userns *launcher.UserNS
	err    error
}

// StartIDs allocates an ID slot of r (or of the rootless user's subordinate range) and
// starts the holder of a user namespace mapping it, in the background: the local backend's
// Prepare, which Config.Reserved hands to NewSandbox.
func StartIDs(r sandbox.IDRange) sandbox.Reservation { return startIDs(r) }

func startIDs(r sandbox.IDRange) *idChain {
	c := &idChain{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		if rl := RootlessMode(); rl != nil {
			c.slot, c.err = allocateSlot(rl.ids(), rl.LockDir) // slices of the user's subordinate range
		} else {
			c.slot, c.err = AllocateIDs(r, IDLockDir)
		}
		if c.err != nil {
			return
		}
		c.userns, c.err = launcher.NewUserNS(c.slot.HostID, oci.IDRangeSize)
	}()
	return c
}

// wait returns the slot and the holder, or the first error (nothing is then held).
func (c *idChain) wait() (*IDSlot, *launcher.UserNS, error) {
	<-c.done
	if c.err != nil {
		return nil, nil, errors.Join(c.err, c.Release())
	}
	return c.slot, c.userns, nil
}

// Release waits for the chain, ends the holder (idempotent) and releases the slot; again,
// or on nil, it does nothing.
func (c *idChain) Release() error {
	if c == nil {
		return nil
	}
	<-c.done
	var errs []error
	if c.userns != nil {
		errs = append(errs, c.userns.Close())
	}
	if c.slot != nil {
		errs = append(errs, c.slot.Release())
		c.slot = nil
	}
	return errors.Join(errs...)
}

// attest waits until the init has exec'd (seccomp is applied just before execve, so an
// earlier read shows Seccomp: 0), then reads its isolation from the host's /proc.
func attest(ctx context.Context, pid uint32) (*record.Attestation, error) {
	deadline := time.Now().Add(10 * time.Second)
	for !execed(pid, "init") {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("attest: the container's init (pid %d) did not start within 10s", pid)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return ReadAttestation(pid)
}

// installPasswd writes data beside the installed init (a directory every container's mount
// reaches), named by its digest, readable by all, and returns its path.
func installPasswd(dir string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	p := filepath.Join(dir, "passwd-"+hex.EncodeToString(sum[:8]))
	if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, data) {
		return p, nil
	}
	f, err := os.CreateTemp(dir, ".passwd-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		return "", fmt.Errorf("install the judge's passwd in %s: %w", dir, err)
	}
	return p, nil
}
