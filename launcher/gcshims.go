package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	apitasks "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// SweepOrphanShims kills the runtime shims that the containerd at address started for ceval's
// containers (IDs with ContainerIDPrefix) in ctx's namespace and that hold nothing containerd
// knows: no container and no task of that ID. containerd 1.6 leaves such a shim when the
// client that was creating the task went away mid-call (ceval killed by SIGKILL while a
// verifier's task was created: its shim ran on, and outlived the daemon when it stopped).
// A container is created before its task, so a live ceval's create in progress is never
// taken for one.
func SweepOrphanShims(ctx context.Context, c *client.Client, address string) (removed []Swept, err error) {
	ns, err := namespaces.NamespaceRequired(ctx)
	if err != nil {
		return nil, fmt.Errorf("gc: shims: %w", err)
	}
	address = strings.TrimPrefix(address, "unix://")
	var errs []error
	for _, s := range shims() {
		if s.ns != ns || filepath.Clean(s.address) != filepath.Clean(address) || !strings.HasPrefix(s.id, ContainerIDPrefix) {
			continue
		}
		if _, err := c.ContainerService().Get(ctx, s.id); !errdefs.IsNotFound(err) {
			continue // a container holds it (or containerd could not say): not an orphan
		}
		if _, err := c.TaskService().Get(ctx, &apitasks.GetRequest{ContainerID: s.id}); status.Code(err) != codes.NotFound {
			continue
		}
		if err := killShim(s); err != nil {
			errs = append(errs, fmt.Errorf("gc: shim of %s (pid %d): %w", s.id, s.pid, err))
			continue
		}
		removed = append(removed, Swept{"shim", s.id, fmt.Sprintf("pid %d: containerd holds no container or task of it", s.pid)})
	}
	return removed, errors.Join(errs...)
}

// shim is a running containerd shim as its command line names it.
type shim struct {
	pid             int
	cmdline         []byte
	ns, id, address string
}

// shims lists the long-running containerd shims (containerd-shim-*, not their start or
// delete invocations) of this host's PID namespace.
func shims() []shim {
	var out []shim
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if s, ok := parseShim(b); ok {
			s.pid = pid
			out = append(out, s)
		}
	}
	return out
}

// parseShim reads a shim's command line: containerd-shim-* -namespace NS -id ID -address
// ADDR [flags], with no action (start, delete) after them.
func parseShim(cmdline []byte) (shim, bool) {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
		return shim{}, false
	}
	s := shim{cmdline: cmdline}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return shim{}, false // an action: start or delete, not the shim itself
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasVal {
			if name == "debug" || name == "v" {
				continue
			}
			if i+1 >= len(args) {
				break
			}
			i++
			val = args[i]
		}
		switch name {
		case "namespace":
			s.ns = val
		case "id":
			s.id = val
		case "address":
			s.address = val
		}
	}
	return s, s.ns != "" && s.id != "" && s.address != ""
}

// killShim SIGKILLs s through a pidfd opened while its command line was still s's: never
// another process that took its PID since.
func killShim(s shim) error {
	fd, err := unix.PidfdOpen(s.pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.pid), "cmdline"))
	if err != nil || !bytes.Equal(b, s.cmdline) {
		return nil // gone, or its PID is another process's now
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	return nil
}
