package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/defaults"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/containerd/typeurl/v2"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"ceval.dev/ceval/internal/busy"
	"ceval.dev/ceval/internal/phasetime"
)

// DefaultLogCap is how much of each of stdout and stderr is kept when Spec.LogCap is 0.
const DefaultLogCap = 64 << 20

// DefaultLeaseExpiry bounds how long a container's lease can pin its snapshot and content
// if ceval dies before Delete: containerd's GC collects them after it.
const DefaultLeaseExpiry = 24 * time.Hour

// Spec is what Create needs: the container's identity, image and runtime-spec options (from
// package oci), and where its output goes.
type Spec struct {
	ID    string       // container ID, also the rootfs snapshot key
	Image client.Image // must be unpacked into Snapshotter; nil when ChainID is set
	// ChainID, when set, is the chain ID of the image's layers unpacked into Snapshotter: the
	// rootfs snapshot is made on it directly (no lookup of the image, its manifest or config),
	// and the container record names ImageName.
	ChainID     digest.Digest
	ImageName   string
	Snapshotter string            // "" = containerd's default
	Opts        []oci.SpecOpts    // applied to containerd's default spec, in order
	Labels      map[string]string // container labels (see package oci's Labels)

	StdoutPath string    // file for the task's stdout; "" uses Stdout
	StderrPath string    // file for the task's stderr; "" uses Stderr
	Stdout     io.Writer // used when StdoutPath is empty (not closed); nil discards
	Stderr     io.Writer // used when StderrPath is empty (not closed); nil discards
	LogCap     int64     // bytes kept per stream; 0 = DefaultLogCap
	Stdin      io.Reader // optional; nil gives the task /dev/null

	LeaseExpiry time.Duration // 0 = DefaultLeaseExpiry

	FIFODir string // where the task's IO FIFOs are made; "" = containerd's default (RootlessDaemon.FIFODir for a rootless daemon)

	// RootPath, when set, is the container's root filesystem, mounted by the caller (a
	// RootOverlay) and named by the spec's root.path: no snapshot is made for it.
	RootPath string
}

// Container is a created container: its record, its rootfs snapshot and the lease that
// holds them. Delete removes all three, and the task if one is left.
type Container struct {
	client  *client.Client
	ctr     client.Container
	spec    Spec
	leaseID string
	owned   bool // the container ID and snapshot key are this Container's to remove

	cgroupsPath string         // from the spec Create made, read back once
	byInit      bool           // specKillsByInit of the spec Create made
	process     *specs.Process // the spec's process: what Exec's processes are made from

	mu      sync.Mutex
	task    *Task
	deleted bool
}

// Create makes the container and its rootfs snapshot under a fresh lease that expires after
// Spec.LeaseExpiry. On any error everything it made is removed before it returns.
func Create(ctx context.Context, c *client.Client, s Spec) (_ *Container, retErr error) {
	if s.ID == "" {
		return nil, errors.New("create container: empty ID")
	}
	if s.Image == nil && (s.ChainID == "" || s.ImageName == "") && s.RootPath == "" {
		return nil, fmt.Errorf("create container %s: no image", s.ID)
	}
	if s.StdoutPath != "" && s.StdoutPath == s.StderrPath {
		return nil, fmt.Errorf("create container %s: stdout and stderr share %s", s.ID, s.StdoutPath)
	}
	if s.LogCap == 0 {
		s.LogCap = DefaultLogCap
	}
	if s.LogCap < 0 {
		return nil, fmt.Errorf("create container %s: negative log cap %d", s.ID, s.LogCap)
	}
	if s.LeaseExpiry == 0 {
		s.LeaseExpiry = DefaultLeaseExpiry
	}

	if s.Snapshotter == "" {
		// Resolved here, as the client would, so Delete knows where the snapshot lives
		// even when NewContainer fails after preparing it.
		name, err := c.GetLabel(ctx, defaults.DefaultSnapshotterNSLabel)
		if err != nil {
			return nil, fmt.Errorf("create container %s: default snapshotter: %w", s.ID, err)
		}
		if name == "" {
			name = defaults.DefaultSnapshotter
		}
		s.Snapshotter = name
	}

	endLease := phasetime.Span("create: lease")
	ls := c.LeasesService()
	lease, err := ls.Create(ctx,
		leases.WithRandomID(),
		leases.WithExpiration(s.LeaseExpiry),
		leases.WithLabel("dev.ceval.container", s.ID),
		leases.WithLabels(s.Labels), // the owner's PID and boot id, so a sweeper can tell a live run's lease
	)
	endLease()
	if err != nil {
		return nil, fmt.Errorf("create lease for container %s: %w", s.ID, err)
	}
	ctr := &Container{client: c, spec: s, leaseID: lease.ID}
	defer func() {
		if retErr != nil {
			cctx, cancel := CleanupContext(ctx)
			defer cancel()
			if err := ctr.Delete(cctx); err != nil {
				retErr = errors.Join(retErr, fmt.Errorf("clean up after failed create: %w", err))
			}
		}
	}()

	// An existing container or snapshot of this ID is someone else's: fail without touching
	// it (the deferred cleanup removes only what this call owns).
	endChecks := phasetime.Span("create: checks")
	if _, err := c.ContainerService().Get(ctx, s.ID); err == nil {
		return nil, fmt.Errorf("create container %s: %w", s.ID, errdefs.ErrAlreadyExists)
	} else if !errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("create container %s: %w", s.ID, err)
	}
	if s.RootPath == "" {
		if _, err := c.SnapshotService(s.Snapshotter).Stat(ctx, s.ID); err == nil {
			return nil, fmt.Errorf("create container %s: snapshot %s: %w", s.ID, s.ID, errdefs.ErrAlreadyExists)
		} else if !errdefs.IsNotFound(err) {
			return nil, fmt.Errorf("create container %s: snapshot %s: %w", s.ID, s.ID, err)
		}
	}
	endChecks()
	ctr.owned = true

	lctx := leases.WithLease(ctx, lease.ID)
	var spec *specs.Spec
	opts := []client.NewContainerOpts{withNewSpecKept(&spec, s.Opts...), client.WithContainerLabels(s.Labels)}
	if s.RootPath == "" {
		opts = append(opts, client.WithSnapshotter(s.Snapshotter))
		if s.ChainID != "" {
			opts = append(opts, withSnapshotOn(s.ID, s.ChainID, s.ImageName))
		} else {
			opts = append(opts, client.WithNewSnapshot(s.ID, s.Image))
		}
	} else if s.Image == nil {
		opts = append(opts, client.WithImageName(s.ImageName))
	}
	endNew := phasetime.Span("create: NewContainer")
	cc, err := c.NewContainer(lctx, s.ID, opts...)
	endNew()
	if err != nil {
		return nil, fmt.Errorf("create container %s: %w", s.ID, err)
	}
	ctr.ctr = cc
	mounts := []mount.Mount{{Type: "bind", Source: s.RootPath, Options: []string{"rbind", "rw"}}}
	if s.RootPath == "" {
		if mounts, err = c.SnapshotService(s.Snapshotter).Mounts(ctx, s.ID); err != nil {
			return nil, fmt.Errorf("create container %s: rootfs mounts: %w", s.ID, err)
		}
	}
	endMP := phasetime.Span("create: mountpoints")
	err = makeMountpoints(ctx, mounts, spec)
	endMP()
	if err != nil {
		return nil, fmt.Errorf("create container %s: %w", s.ID, err)
	}
	if spec.Linux != nil {
		ctr.cgroupsPath = spec.Linux.CgroupsPath
		ctr.byInit = specKillsByInit(spec)
	}
	ctr.process = spec.Process
	return ctr, nil
}

// withSnapshotOn is client.WithNewSnapshot for an image whose layers' chain ID the caller
// knows: the writable snapshot id is prepared on that committed snapshot (the image's unpacked
// layers) and the container names image name, without reading the image again.
func withSnapshotOn(id string, chainID digest.Digest, name string) client.NewContainerOpts {
	return func(ctx context.Context, c *client.Client, ctr *containers.Container) error {
		defer phasetime.Span("create: snapshot prepare")()
		if _, err := c.SnapshotService(ctr.Snapshotter).Prepare(ctx, id, chainID.String()); err != nil {
			return fmt.Errorf("snapshot of image %s (layers %s): %w", name, chainID, err)
		}
		ctr.SnapshotKey, ctr.Image = id, name
		return nil
	}
}

// withNewSpecKept is client.WithNewSpec that also keeps the spec it generated in *spec:
// the very spec the container record holds, without a round trip to read it back.
func withNewSpecKept(spec **specs.Spec, opts ...oci.SpecOpts) client.NewContainerOpts {
	return func(ctx context.Context, c *client.Client, ctr *containers.Container) error {
		s, err := oci.GenerateSpec(ctx, c, ctr, opts...)
		if err != nil {
			return err
		}
		if ctr.Spec, err = typeurl.MarshalAny(s); err != nil {
			return err
		}
		*spec = s
		return nil
	}
}

// ID returns the container's ID.
func (c *Container) ID() string { return c.spec.ID }

// CleanupContext returns a context for Delete and other teardown that outlives ctx's
// cancellation (Ctrl-C must still clean up) but not forever: it keeps ctx's values, such as
// the containerd namespace, and times out after a minute.
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// Delete removes the task (killing every process in it if it still runs), the container,
// its snapshot and its lease, on every path: each step runs even when an earlier one failed,
// and what is already gone counts as done, so Delete is idempotent. Pass a context that the
// run's cancellation does not cancel (see CleanupContext).
func (c *Container) Delete(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deleted {
		return nil
	}
	var errs []error
	taskGone := false
	if c.task != nil {
		// A failed background deletion is tried again here; only a second failure counts.
		endTask := phasetime.Span("delete: task")
		bgErr := c.task.waitDeletion(ctx)
		err := c.task.destroy(ctx)
		endTask()
		if err != nil {
			errs = append(errs, bgErr, err)
		} else {
			taskGone = true
		}
	}
	if c.owned && c.ctr != nil {
		// Once this Container's own task is deleted, no round trip looks for another.
		if !taskGone {
			if err := deleteLeftoverTask(ctx, c.ctr); err != nil {
				errs = append(errs, err)
			} else {
				taskGone = true
			}
		}
		// With no task left, the record goes at once: the client's Container.Delete would
		// first load the task and the record again (two round trips), and the snapshot is
		// removed below either way. A task that could not be deleted keeps its record.
		if taskGone {
			defer phasetime.Span("delete: container record")()
			if err := c.client.ContainerService().Delete(ctx, c.spec.ID); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete container %s: %w", c.spec.ID, err))
			}
		}
	}
	if c.owned && c.ctr == nil {
		// NewContainer failed, yet containerd may hold the record: its Create can complete
		// after the caller's context was cancelled mid-call (Ctrl-C while a run is prepared
		// ahead). The ID is this Container's (owned: none existed before Create), and no task
		// can exist without the handle, so the record goes by ID.
		if err := c.client.ContainerService().Delete(ctx, c.spec.ID); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete container %s: %w", c.spec.ID, err))
		}
	}
	// The snapshot may exist without the container (NewContainer failed after Prepare), and
	// goes after the container record.
	if c.owned && c.spec.RootPath == "" {
		defer phasetime.Span("delete: snapshot")()
		if err := c.client.SnapshotService(c.spec.Snapshotter).Remove(ctx, c.spec.ID); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove snapshot %s: %w", c.spec.ID, err))
		}
	}
	endLease := phasetime.Span("delete: lease")
	err := c.client.LeasesService().Delete(ctx, leases.Lease{ID: c.leaseID})
	endLease()
	if err != nil && !errdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete lease %s: %w", c.leaseID, err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("delete container %s: %w", c.spec.ID, errors.Join(errs...))
	}
	c.deleted = true
	return nil
}

// deleteLeftoverTask kills and deletes a task that containerd still has for ctr although
// this Container holds none (Start failed half-way, or Wait never ran).
func deleteLeftoverTask(ctx context.Context, ctr client.Container) error {
	t, err := ctr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load task %s: %w", ctr.ID(), err)
	}
	if err := deleteTaskKilled(ctx, ctr, t); err != nil {
		return fmt.Errorf("delete task %s: %w", ctr.ID(), err)
	}
	return nil
}

// killsByInit: the container has no cgroup of its own (rootless, rlimit mode), so runc's
// kill --all fails, and a PID namespace of its own, so SIGKILL to its PID 1 kills everything
// in it: the kernel kills the rest when a PID namespace's init dies.
func (c *Container) killsByInit() bool { return c.byInit }

func specKillsByInit(s *specs.Spec) bool {
	if s == nil || s.Linux == nil || s.Linux.CgroupsPath != "" {
		return false
	}
	for _, n := range s.Linux.Namespaces {
		if n.Type == specs.PIDNamespace && n.Path == "" {
			return true
		}
	}
	return false
}

// deleteTaskKilled deletes ctr's task t, killing whatever still runs in it: by runc's kill
// --all, or (specKillsByInit) by SIGKILL to its PID 1 and waiting for its exit.
func deleteTaskKilled(ctx context.Context, ctr client.Container, t client.Task) error {
	spec, err := ctr.Spec(ctx)
	if err != nil || !specKillsByInit(spec) {
		err := busy.Retry(ctx, func() error { _, err := t.Delete(ctx, client.WithProcessKill); return err })
		if errdefs.IsNotFound(err) {
			return nil
		}
		return err
	}
	wait, err := t.Wait(ctx)
	if err != nil {
		return err
	}
	if err := t.Kill(ctx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsFailedPrecondition(err) {
		return err
	}
	select {
	case <-wait:
	case <-time.After(killWait):
		return fmt.Errorf("no exit %s after SIGKILL to its init", killWait)
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := busy.Retry(ctx, func() error { _, err := t.Delete(ctx); return err }); err != nil && !errdefs.IsNotFound(err) {
		return err
	}
	return nil
}
