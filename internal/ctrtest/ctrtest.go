// Package ctrtest connects integration tests to a real containerd. It starts nothing:
// outside CI a missing daemon skips the test; under CI=true it fails it loudly.
package ctrtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/containerd/v2/client"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"ceval.dev/ceval/launcher"
)

// Namespace is the containerd namespace tests in this process use: one per test binary, so
// packages tested in parallel never share cgroup paths or images.
var Namespace = fmt.Sprintf("ceval-test-%d", os.Getpid())

// Connect returns a client and a namespaced context, or skips (fails under CI=true) when no
// daemon answers at CEVAL_CONTAINERD_ADDRESS. At the end of the test it fails if any
// container, task or snapshot that the test made is left in the namespace.
func Connect(t testing.TB) (*client.Client, context.Context) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "integration tests need root to talk to containerd")
	}
	c, ctx, err := launcher.Connect(context.Background(), launcher.AddressFromEnv(), Namespace)
	if err != nil {
		skipOrFail(t, err.Error())
	}
	t.Cleanup(func() {
		defer c.Close()
		if err := Leftovers(ctx, c); err != nil {
			t.Errorf("left behind in namespace %s: %v", Namespace, err)
		}
		// Best effort: an empty namespace and the empty cgroup directories runc leaves.
		if c.NamespaceService().Delete(ctx, Namespace) == nil {
			removeCgroupDirs(Namespace)
		}
	})
	return c, ctx
}

// removeCgroupDirs removes the empty per-namespace cgroup directories runc leaves behind.
func removeCgroupDirs(ns string) {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + ns)
	dirs = append(dirs, "/sys/fs/cgroup/"+ns)
	for _, d := range dirs {
		_ = os.Remove(d)
	}
}

func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and containerd is required: %s", msg)
	}
	t.Skipf("no containerd: %s", msg)
}

// reported holds the leftovers a test already failed for (by namespace and name): later tests
// of the same binary share the namespace, and one leak failing every test after it would hide
// which test made it.
var (
	reportedMu sync.Mutex
	reported   = map[string]bool{}
)

// Leftovers reports the containers, tasks and active snapshots in ctx's namespace that no
// earlier check of this binary reported already; what it reports is marked reported (every
// caller fails its test on it), so each leftover fails one test, once.
func Leftovers(ctx context.Context, c *client.Client) error {
	ns, _ := namespaces.Namespace(ctx)
	var left []string
	reportedMu.Lock()
	for _, l := range leftovers(ctx, c) {
		if !reported[ns+" "+l] {
			if !strings.HasPrefix(l, listFailed) { // a daemon that cannot list fails every check
				reported[ns+" "+l] = true
			}
			left = append(left, l)
		}
	}
	reportedMu.Unlock()
	if len(left) > 0 {
		return fmt.Errorf("%s", strings.Join(left, ", "))
	}
	return nil
}

// listFailed starts the entry leftovers returns when containerd cannot list the namespace.
const listFailed = "(containers not listed: "

// leftovers lists the containers, tasks and active snapshots in ctx's namespace.
func leftovers(ctx context.Context, c *client.Client) []string {
	var left []string
	cs, err := c.Containers(ctx)
	if err != nil {
		return []string{listFailed + err.Error() + ")"}
	}
	for _, ctr := range cs {
		left = append(left, "container "+ctr.ID())
	}
	tasks, err := c.TaskService().List(ctx, nil)
	if err == nil {
		for _, tk := range tasks.Tasks {
			left = append(left, "task "+tk.ID)
		}
	}
	for _, name := range []string{"overlayfs", "native"} {
		sn := c.SnapshotService(name)
		_ = sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
			if info.Kind == snapshots.KindActive {
				left = append(left, "snapshot "+info.Name)
			}
			return nil
		})
	}
	return left
}

// RemoveImage deletes an image and waits for containerd's garbage collection: after an
// asynchronous delete, a test that imports the image again can unpack onto layer snapshots
// that the pending collection then removes ("parent snapshot ... does not exist").
func RemoveImage(ctx context.Context, c *client.Client, name string) {
	_ = c.ImageService().Delete(context.WithoutCancel(ctx), name, ctrimages.SynchronousDelete())
}

// FreshNamespace is ctx in a containerd namespace of the test's own (Namespace and a random
// suffix), with its name: at the test's end the test fails if a container, task or snapshot
// is left in it (Leftovers), and its images and the namespace are removed.
func FreshNamespace(t testing.TB, ctx context.Context, c *client.Client) (context.Context, string) {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	ns := Namespace + "-" + hex.EncodeToString(b)
	nctx := namespaces.WithNamespace(ctx, ns)
	t.Cleanup(func() {
		cctx := context.WithoutCancel(nctx)
		if err := Leftovers(cctx, c); err != nil {
			t.Errorf("left behind in namespace %s: %v", ns, err)
		}
		imgs, _ := c.ImageService().List(cctx)
		for _, img := range imgs {
			RemoveImage(cctx, c, img.Name)
		}
		_ = c.NamespaceService().Delete(cctx, ns)
	})
	return nctx, ns
}
