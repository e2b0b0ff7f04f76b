package launcher

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/internal/busy"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/oci"
)

// Swept is one thing GC removed, or kept because its owner still runs, and why.
type Swept struct {
	Kind string // container, task, snapshot, lease, mount, fifo, id-slot
	ID   string
	Why  string
}

// ownerStartSlack is how much later than a container the process holding its owner's PID
// may seem to have started and still count as its owner.
const ownerStartSlack = time.Minute

// leaseContainerLabel names the container a lease of Create holds.
const leaseContainerLabel = "dev.ceval.container"

// LeasePullLabel marks the lease an image pull holds its content with (see PullLeaseLabels).
const LeasePullLabel = "dev.ceval.pull"

// PullLeaseLabels are the labels of a pull's lease: this process as its owner, so that
// GC removes the lease (and the partial content it holds) of a pull whose ceval was killed.
func PullLeaseLabels() map[string]string {
	boot, _ := BootID()
	return map[string]string{LeasePullLabel: "1", oci.LabelPID: strconv.Itoa(os.Getpid()), oci.LabelBootID: boot}
}

// GC removes from ctx's containerd namespace what a ceval process that is gone left behind:
// containers it labelled (killing their tasks first), their rootfs snapshots, its leases,
// the scratch filesystems mounted for their workspaces (MountScratch) and their supervisor
// FIFOs (Lifeline). Anything whose owner (PID plus boot id, checked against the process's
// start time) still runs is kept and listed. local.GC also frees the ID slots.
func GC(ctx context.Context, c *client.Client) (removed, kept []Swept, err error) {
	bootID, err := BootID()
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	live := map[string]bool{} // container IDs a live ceval owns
	var scratch []string      // workspace/home mount points of dead containers
	var fifos []Swept         // supervisor FIFOs of dead containers (Lifeline)
	var overlays []string     // RootOverlay directories of dead verifier containers
	ctrs, err := c.Containers(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("gc: list containers: %w", err)
	}
	for _, ctr := range ctrs {
		info, err := ctr.Info(ctx, client.WithoutRefreshedMetadata)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, ours := info.Labels[oci.LabelPID]; !ours {
			continue
		}
		why, alive := ownerAlive(info.Labels, bootID, info.CreatedAt)
		if alive {
			live[ctr.ID()] = true
			kept = append(kept, Swept{"container", ctr.ID(), why})
			continue
		}
		if spec, err := ctr.Spec(ctx); err == nil {
			if spec.Root != nil && isRootOverlay(spec.Root.Path) {
				overlays = append(overlays, filepath.Dir(spec.Root.Path))
			}
			for _, m := range spec.Mounts {
				if m.Destination == oci.WorkspacePath || m.Destination == oci.HomePath {
					scratch = append(scratch, m.Source)
				}
				if m.Destination == oci.SupervisorFIFOPath {
					fifos = append(fifos, Swept{"fifo", m.Source, why})
				}
			}
		}
		r, err := deleteDeadContainer(ctx, ctr, why)
		removed = append(removed, r...)
		if err != nil {
			errs = append(errs, err)
		}
	}

	ls := c.LeasesService()
	all, err := ls.List(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("gc: list leases: %w", err))
	}
	for _, l := range all {
		id, ours := l.Labels[leaseContainerLabel]
		if _, pull := l.Labels[LeasePullLabel]; pull {
			id, ours = "pull "+l.ID, true
		}
		if !ours {
			continue
		}
		if live[id] {
			continue
		}
		if _, labelled := l.Labels[oci.LabelPID]; !labelled {
			continue // an older ceval's lease: it expires by itself
		}
		why, alive := ownerAlive(l.Labels, bootID, l.CreatedAt)
		if alive {
			live[id] = true
			kept = append(kept, Swept{"lease", l.ID, why})
			continue
		}
		if err := ls.Delete(ctx, leases.Lease{ID: l.ID}, leases.SynchronousDelete); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("gc: delete lease %s: %w", l.ID, err))
			continue
		}
		removed = append(removed, Swept{"lease", l.ID, why})
	}

	// A snapshot keyed like a ceval container that no container and no live lease holds.
	exists := map[string]bool{}
	if ctrs, err := c.Containers(ctx); err == nil {
		for _, ctr := range ctrs {
			exists[ctr.ID()] = true
		}
	}
	for _, name := range []string{"overlayfs", "native"} {
		sn := c.SnapshotService(name)
		var keys []string
		_ = sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
			if info.Kind == snapshots.KindActive && strings.HasPrefix(info.Name, "ceval-") && !exists[info.Name] && !live[info.Name] {
				keys = append(keys, info.Name)
			}
			return nil
		})
		for _, k := range keys {
			if err := sn.Remove(ctx, k); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("gc: remove snapshot %s: %w", k, err))
				continue
			}
			removed = append(removed, Swept{"snapshot", k, "no container and no live lease holds it"})
		}
	}

	for _, f := range fifos {
		// Only a FIFO: the path comes from our own spec, but never remove anything else.
		if fi, err := os.Lstat(f.ID); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
			continue
		}
		if err := os.Remove(f.ID); err != nil {
			errs = append(errs, fmt.Errorf("gc: remove supervisor FIFO: %w", err))
			continue
		}
		removed = append(removed, f)
	}

	mounted := scratchMounts()
	for _, dir := range scratch {
		if !mounted[dir] {
			continue
		}
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("gc: unmount %s: %w", dir, err))
			continue
		}
		removed = append(removed, Swept{"mount", dir, "scratch filesystem of a removed container"})
		_ = os.Remove(dir)
		_ = os.Remove(filepath.Dir(dir)) // the run's .scratch, once both are gone
	}
	for _, dir := range overlays {
		n, err := unmountUnder(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("gc: %w", err))
			continue
		}
		if n > 0 {
			removed = append(removed, Swept{"mount", dir, "root overlay of a removed verifier container"})
		}
		_ = os.RemoveAll(filepath.Dir(dir)) // its ceval-root-* directory, nothing mounted in it now
	}
	return removed, kept, errors.Join(errs...)
}

// SweepRootOverlays unmounts and removes the root overlays in base (RootOverlayPrefix, named
// with the owner tag of the ceval that made them) whose ceval is gone: GC finds those its
// dead verifier containers name, this those of a ceval killed between mounting the overlay
// and creating the container. An overlay of a live ceval, or one without an owner tag, is
// left alone. The unmount detaches (MNT_DETACH): a container still on it keeps its view.
func SweepRootOverlays(base string) (removed []Swept, err error) {
	ents, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		// None made, or not this user's to list (search-only for others): root overlays are
		// root's verifiers' alone, so a rootless ceval's gc has none to sweep.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), RootOverlayPrefix) {
			continue
		}
		if _, tagged, gone := tempdir.OwnerGone(e.Name()); !tagged || !gone {
			continue
		}
		dir := filepath.Join(base, e.Name())
		n, err := unmountUnder(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("gc: %w", err))
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("gc: %w", err))
			continue
		}
		if n > 0 {
			removed = append(removed, Swept{"mount", filepath.Join(dir, "root"), "root overlay of a ceval that is gone (killed before its verifier container existed)"})
		}
	}
	return removed, errors.Join(errs...)
}

// isRootOverlay says whether a spec's root path is a RootOverlay's (.../ceval-root-*/root/rootfs).
func isRootOverlay(path string) bool {
	root := filepath.Dir(path)
	return filepath.IsAbs(path) && filepath.Base(path) == "rootfs" && filepath.Base(root) == "root" &&
		strings.HasPrefix(filepath.Base(filepath.Dir(root)), RootOverlayPrefix)
}

// unmountUnder detaches every mount at dir or below it, deepest first, and says how many.
func unmountUnder(dir string) (int, error) {
	var points []string
	for p := range mountPoints() {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return 0, fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	return len(points), nil
}

// deleteDeadContainer kills and deletes the container's task, then the container with its
// snapshot.
func deleteDeadContainer(ctx context.Context, ctr client.Container, why string) ([]Swept, error) {
	var out []Swept
	if tk, err := ctr.Task(ctx, nil); err == nil {
		spec, _ := ctr.Spec(ctx)
		var kill []client.KillOpts
		if !specKillsByInit(spec) {
			kill = append(kill, client.WithKillAll)
		}
		wait, werr := tk.Wait(ctx)
		if err := tk.Kill(ctx, syscall.SIGKILL, kill...); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsFailedPrecondition(err) {
			return out, fmt.Errorf("gc: kill task %s: %w", ctr.ID(), err)
		}
		if werr == nil {
			select {
			case <-wait:
			case <-time.After(10 * time.Second):
			}
		}
		if err := deleteTaskKilled(ctx, ctr, tk); err != nil {
			return out, fmt.Errorf("gc: delete task %s: %w", ctr.ID(), err)
		}
		out = append(out, Swept{"task", ctr.ID(), why})
	} else if !errdefs.IsNotFound(err) {
		return out, fmt.Errorf("gc: task of %s: %w", ctr.ID(), err)
	}
	if err := busy.Retry(ctx, func() error { return ctr.Delete(ctx, client.WithSnapshotCleanup) }); err != nil && !errdefs.IsNotFound(err) {
		return out, fmt.Errorf("gc: delete container %s: %w", ctr.ID(), err)
	}
	return append(out, Swept{"container", ctr.ID(), why}), nil
}

// ownerAlive tells whether the ceval that labelled a thing made at created still runs: same
// boot, its PID exists, and that process started no later than the thing was made (a reused
// PID started after).
func ownerAlive(labels map[string]string, bootID string, created time.Time) (string, bool) {
	if labels[oci.LabelBootID] != bootID {
		return "made before the last reboot", false
	}
	pid, err := strconv.Atoi(labels[oci.LabelPID])
	if err != nil || pid <= 0 {
		return "no owner PID", false
	}
	started, err := processStart(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("owner PID %d is gone", pid), false
	}
	if err != nil {
		return fmt.Sprintf("owner PID %d may still run (%v)", pid, err), true // when unsure, keep
	}
	// The boot time has whole seconds and drifts with clock adjustments: err towards keeping.
	if started.After(created.Add(ownerStartSlack)) {
		return fmt.Sprintf("PID %d now belongs to a later process", pid), false
	}
	return fmt.Sprintf("owner PID %d still runs", pid), true
}

// processStart returns when a process started, from /proc/<pid>/stat and the boot time.
func processStart(pid int) (time.Time, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return time.Time{}, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return time.Time{}, errors.New("bad stat")
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return time.Time{}, errors.New("short stat")
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64) // field 22: starttime
	if err != nil {
		return time.Time{}, err
	}
	bt, err := bootTime()
	if err != nil {
		return time.Time{}, err
	}
	const hz = 100 // USER_HZ on Linux
	return bt.Add(time.Duration(ticks) * time.Second / hz), nil
}

func bootTime() (time.Time, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			secs, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			return time.Unix(secs, 0), err
		}
	}
	return time.Time{}, errors.New("no btime in /proc/stat")
}

// mountPoints lists every mount point of this mount namespace.
func mountPoints() map[string]bool {
	out := map[string]bool{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if pf := strings.Fields(sc.Text()); len(pf) >= 5 {
			out[unescapeMount(pf[4])] = true
		}
	}
	return out
}

// scratchMounts lists the mount points of ceval's scratch tmpfs (MountScratch).
func scratchMounts() map[string]bool {
	out := map[string]bool{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mountpoint options... - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) >= 5 && len(qf) >= 2 && qf[0] == "tmpfs" && qf[1] == "ceval-scratch" {
			out[unescapeMount(pf[4])] = true
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
