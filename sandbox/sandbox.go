package sandbox

import (
	"context"
	"github.com/opencontainers/go-digest"
	"io"
	"net"
	"time"

	"github.com/containerd/containerd/v2/client"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/snapshot"
	"ceval.dev/ceval/task"
)

// Backend is what a run needs of a sandbox provider: its image present and checked, and the
// agent's sandbox created. The local containerd backend is package sandbox/local; the
// Kubernetes one runs the agent as a Pod. A new backend (a remote provider, gVisor as a
// runtime class) is one package implementing it.
type Backend interface {
	// Prepare starts, while the caller resolves the image, what creating a sandbox waits on
	// longest; Config.Reserved hands it to NewSandbox. The caller releases it when no
	// sandbox took it over (Release is idempotent). nil: nothing to prepare.
	Prepare() Reservation
	// ResolveImage makes the task's image present and checked (built, pulled, preflighted).
	ResolveImage(ctx context.Context, sb task.Sandbox) (images.Image, error)
	// NewSandbox prepares the scratch filesystems and the workspace and creates the
	// container, not yet started. Close undoes it all.
	NewSandbox(ctx context.Context, cfg Config) (Sandbox, error)
	// Check refuses, before anything starts, a task this backend cannot run (an
	// *InputError), or one the host lacks something for (a plain error); nil: it can run.
	Check(t *task.Task) error
}

// Remote is a Backend whose sandboxes run away from this host (a cluster's Pod): the
// sandbox's init relays the agent's calls of the model gateway and the mocks to this
// process, where they arrive as this process's UID, and ceval's init is at InitPath in the
// sandbox, not at oci.InitPath.
type Remote interface {
	Backend
	InitPath() string
}

// Sandbox is a created agent container, as a run uses it: start, attest, wait and reap (Run),
// setup steps beside it (RunStep), copy out (TakeSnapshot, Dirs, OutputDirs), destroy
// (DeleteContainer, Close).
type Sandbox interface {
	// Run starts the container, attests it, lets the agent run and reaps everything.
	Run(ctx context.Context, emit func(string, map[string]any)) (*Outcome, error)
	// Close deletes the container and its scratch filesystems.
	Close(ctx context.Context) error
	// Dirs are the host paths of the agent's workspace and home.
	Dirs() (workspace, home string)
	// RunStep runs one setup or after_agent step in a container of its own over the
	// sandbox's workspace, as the agent's user.
	RunStep(ctx context.Context, name string, argv []string, timeout time.Duration, logPath string) (launcher.Exit, error)
	// Again replaces the reaped container with a fresh one over the same scratch
	// filesystems, for the agent's next iteration.
	Again(ctx context.Context, next AgainConfig) error
	// DeleteContainer deletes the reaped container and keeps the scratch filesystems.
	DeleteContainer(ctx context.Context) error
	// TakeSnapshot copies the reaped agent's workspace into dst, never following a link.
	TakeSnapshot(ctx context.Context, dst string, lim snapshot.Limits) (*snapshot.Snapshot, error)
	// OutputDirs are the host paths of the task's sandbox.outputs, in order.
	OutputDirs() []string
}

// Readier is a Sandbox that can be taken closer to its start ahead of its run (a warm
// sandbox of an experiment, made while other runs execute): Ready does what Run would do
// first, short of running anything of the image's or the agent's, so Run's critical path is
// the start, the attestation and the agent. The local backend creates the container's task
// (namespaces, cgroup, root, PID 1 created and waiting) and runs Config.BeforeStart there.
// Optional: Run readies a sandbox that was not (a Kubernetes Pod does all of it in Run).
// Nothing Ready makes is shared with another sandbox; Close undoes it like the rest.
type Readier interface {
	Ready(ctx context.Context) error
}

// Primer is a Readier that can also be started ahead of its run: Prime starts the readied
// container's init and attests it, and the init then waits for the go-ahead, which Run gives
// at the run's turn (the agent's deadline counts from it); nothing of the image's or the
// agent's runs before. The attestation or its failure is Run's, at the turn, as if it had been
// read then. Optional, after Ready succeeded; Close ends a primed init that never got the
// go-ahead with the rest.
type Primer interface {
	Prime(ctx context.Context)
}

// Reservation is what a Backend prepared for one sandbox; Release (idempotent) frees it.
type Reservation interface{ Release() error }

// Config describes one agent container: the lower half of a run, shared by `ceval run`,
// `ceval sandbox exec`, a task's services and the verifier, so all get exactly the same
// sandbox. Client, IDs and the scratch Dir are the local backend's; Gateway and MockSocket
// are what a backend that relays the agent's connections (the kubernetes one) needs.
type Config struct {
	Client *client.Client // the local backend's containerd
	Image  string         // an image that passed images.Resolve
	// ImageConfig is the config digest of Image as images.Resolve returned it (its
	// ConfigDigest): the local backend then reads the config and the layers' chain ID by
	// digest (images.ConfigOf), never the name again; "" looks the name up.
	ImageConfig digest.Digest
	ID          string // unique per container; labels and the container ID derive from it
	Argv        []string
	Env         []string
	// PrependEnv are KEY=VALUE entries put before the image config's value of KEY, joined by
	// a colon (PYTHONPATH=/ceval/python ahead of the image's own PYTHONPATH); Env wins over both.
	PrependEnv []string
	Limits     task.Limits
	Network    string
	Grace      time.Duration
	InitDir    string // where the static init is installed; "" = the local backend's default
	Dir        string // host directory that receives the scratch mount points

	// Mounts are read-only binds (plugin bundles); oci refuses any that overlap its own.
	Mounts []oci.Mount
	// InitBinds are container paths where the static init is bound read-only too, beside
	// its own path: a Codex judge's shells (supervisor/agentjudge.go), which confine the
	// judge's commands. The local backend only; another refuses them.
	InitBinds []string
	// Passwd, when set, is bound read-only over the image's /etc/passwd (a Codex judge's,
	// whose user's shell must be the /bin/sh bound in InitBinds). The local backend only.
	Passwd []byte

	StdoutPath, StderrPath string    // agent output files; "" uses Stdout/Stderr
	Stdout, Stderr         io.Writer // used when the paths are empty

	// Prepare fills the workspace and home directories (host paths) before they are handed
	// to the agent's UID.
	Prepare func(workspace, home string) error

	// ImageWorkdir says whether the workspace starts from the tree at the image config's
	// WorkingDir, copied before Prepare runs (so a template_dir overrides it): ImageWorkdirAuto,
	// task.ImageWorkdirCopy, or "" / task.ImageWorkdirIgnore (a verifier's or exec's
	// sandbox). Emit (may be nil) gets the "image_workdir" event of what was copied.
	ImageWorkdir string
	// ImageWorkdirEnv, when set, names a variable the container's processes get, valued the
	// image's working directory whose tree started the workspace (/app), set only when one
	// did (an empty one too): ceval audit's built-in agents map a prompt's /app/x.py to the
	// workspace's x.py with it.
	ImageWorkdirEnv string
	Emit            func(string, map[string]any)

	// Outputs are the task's sandbox.outputs: container paths each given a capped scratch
	// filesystem (Limits.DiskMB, as the workspace) bound read-write, /tmp replacing the
	// sandbox's own. OutputsFromImage starts each from what the image holds at its path (an
	// agent's sandbox); PrepareOutput (may be nil) then fills output i's host directory
	// before the container's UID gets it (a verifier copies the agent's output there).
	Outputs          []string
	PrepareOutput    func(i int, dir string) error
	OutputsFromImage bool

	// BeforeStart (may be nil) runs once the container's task exists and before its init
	// runs: the model gateway opens its socket in the task's network namespace there.
	BeforeStart launcher.StartHook
	// StepBeforeStart and StepMounts are what a setup or after_agent step's container gets
	// of the run's (the task's services: their relay and /etc/hosts); nil: nothing.
	StepBeforeStart launcher.StartHook
	StepMounts      []oci.Mount

	// IDs is the range the run's user namespace takes its host IDs from (ceval's config
	// id_range); the zero value is DefaultIDRange.
	IDs IDRange

	// UID is the process's UID and GID in the container: 0 means policy.AgentUID; a verifier
	// container (package verifier) runs as policy.GraderUID unless Root, a task's service as
	// policy.ServiceUID.
	UID uint32
	// Cwd and UserName are the process's working directory and USER ("": /workspace and
	// "agent"); LogCap bounds each of stdout and stderr (0: launcher.DefaultLogCap).
	Cwd, UserName string
	LogCap        int64

	// Root runs the process as root of its user namespace (oci.VerifierRootCaps) over a
	// writable copy of the image's root: its layers idmapped to the namespace under a tmpfs
	// capped at Limits.DiskMB (launcher.MountRootOverlay). A verifier's, never the agent's.
	Root bool

	// Stop (may be nil) ends the agent early once it is closed: the timeout's stop (SIGTERM,
	// grace, SIGKILL to everything), and Outcome.Stopped says so. The model gateway closes
	// it when a run budget is exceeded.
	Stop <-chan struct{}

	// Gateway and MockSocket are where a backend that relays the agent's connections (the
	// kubernetes one) sends them: the run's model gateway and its mock server's socket.
	// The local backend gives the container these in its own namespaces instead.
	Gateway    GatewayDialer
	MockSocket string

	// Reserved, when set, is what Backend.Prepare started for this sandbox (the local
	// backend's ID slot and user namespace holder, started while the run resolves the image);
	// NewSandbox takes it over, releasing it on Close. nil: NewSandbox starts its own.
	Reserved Reservation
}

// GatewayURL is where the agent reaches the model gateway inside its sandbox, whatever the
// backend.
const GatewayURL = "http://127.0.0.1:80"

// GatewayDialer connects to a run's model gateway from this process.
type GatewayDialer interface{ Dial() (net.Conn, error) }

// Outcome is how the agent's container ended.
type Outcome struct {
	Exit      launcher.Exit
	Stopped   bool // Config.Stop ended the agent
	Isolation *record.Attestation
	Resources launcher.Resources
}

// AgainConfig is what changes for the agent's next iteration (Sandbox.Again).
type AgainConfig struct {
	Argv, Env              []string
	Timeout                time.Duration // what is left of the task's time
	StdoutPath, StderrPath string
	// Prepare, when set, is given the workspace on the host once the last agent is reaped
	// and before the fresh container exists (a multi-step task's files for the next step);
	// what it leaves there is handed to the agent's IDs as the first workspace was.
	Prepare func(workspace string) error
}

// InputError is bad input (a task or a permission the user did not give): exit 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }
