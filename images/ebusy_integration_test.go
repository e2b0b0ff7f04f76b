package images

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"

	"ceval.dev/ceval/internal/ctrtest"
)

// TestImportRidesOutAHolderOfContainerdsTempMount holds the temporary mount containerd
// applies a layer on (ROOT/tmpmounts/containerd-mount*) for 8 s, as a host tool that walks
// every mount does: past the layer's extraction (seconds under load: a 5 s hold ended
// before it once) containerd's own unmount gives up after 2.5 s and the unpack fails with
// 'device or resource busy'; Import tries the unpack again and succeeds.
func TestImportRidesOutAHolderOfContainerdsTempMount(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	tmpmounts := daemonRoot(t, ctx, c) + "/tmpmounts/containerd-mount"

	// Enough files that applying the layer takes long enough to catch its mount.
	var entries []tarEntry
	// The nonce tells this import's temporary mount from those of other tests sharing the
	// daemon (other packages' tests import images at the same time).
	nonce := rand.Text()
	entries = append(entries, file("etc/passwd", agentPasswd, 0o644), file("nonce", nonce, 0o644))
	for i := range 4000 {
		entries = append(entries, file(fmt.Sprintf("d%d/f%d", i%40, i), strings.Repeat("x", 64), 0o644))
	}
	name := testImageName(t)
	cfg := ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: hostArch(t)}, RootFS: ocispec.RootFS{Type: "layers"}}
	b, diffID, err := gzipLayer(layerTar(t, entries...))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, diffID)
	var buf bytes.Buffer
	if _, err := writeLayout(&buf, name, cfg, []blob{b}); err != nil {
		t.Fatal(err)
	}
	deleteImageAtEnd(t, ctx, c, name)

	var held atomic.Bool
	var heldPath string // set before held
	t.Cleanup(func() {
		// containerd 1.6 leaves the temporary mount it gave up on mounted (on its aborted
		// snapshot's directory, deleted since): its own leftover, gone at its next start.
		// Only the one this test held: detaching another test's temporary mount would pull
		// the layer it is applying from under containerd ('UtimesNanoAt ... dev: no such file
		// or directory' in a clean-clone run, when this cleanup detached them all).
		if !held.Load() {
			return
		}
		for _, m := range mountPointsUnder(tmpmounts) {
			if m == heldPath {
				t.Logf("containerd left its temporary mount %s mounted; detaching it", m)
				_ = unix.Unmount(m, unix.MNT_DETACH)
				_ = os.Remove(m)
			}
		}
	})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // hold this import's temp mount for 8 s, once its nonce is written
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, m := range mountPointsUnder(tmpmounts) {
				f, err := os.Open(m)
				if err != nil {
					continue
				}
				if !onMount(f, m) { // unmounted between the read and the open
					f.Close()
					continue
				}
				if b, err := os.ReadFile(filepath.Join(m, "nonce")); err != nil || string(b) != nonce {
					f.Close() // another test's, or this one's before its nonce is there
					continue
				}
				heldPath = m
				held.Store(true)
				time.Sleep(8 * time.Second)
				f.Close()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	start := time.Now()
	imgs, err := Import(ctx, c, &buf)
	close(stop)
	<-done
	if !held.Load() {
		t.Fatalf("the layer's temporary mount under %s was never caught (import took %s): the test held nothing", tmpmounts, time.Since(start))
	}
	if err != nil {
		t.Fatalf("import while containerd's temporary mount was held for 8 s: %v", err)
	}
	if len(imgs) != 1 || imgs[0].Name != name {
		t.Fatalf("imported %v, want one image %s", imgs, name)
	}
	assertUnpacked(t, ctx, c, name)
}

// daemonRoot is containerd's root directory, read from where its snapshotter keeps a new
// snapshot (ROOT/io.containerd.snapshotter.v1.overlayfs/snapshots/N/fs).
func daemonRoot(t *testing.T, ctx context.Context, c *client.Client) string {
	t.Helper()
	sn := c.SnapshotService(Snapshotter)
	key := "ceval-test-root-probe-" + rand.Text()
	ms, err := sn.Prepare(ctx, key, "")
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Remove(context.WithoutCancel(ctx), key)
	const marker = "/io.containerd.snapshotter.v1."
	for _, m := range ms {
		if i := strings.Index(m.Source, marker); i > 0 {
			return m.Source[:i]
		}
	}
	t.Fatalf("no containerd root in the snapshot's mounts %+v", ms)
	return ""
}

func mountPointsUnder(prefix string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && strings.HasPrefix(fields[4], prefix) {
			out = append(out, fields[4])
		}
	}
	return out
}

// onMount says whether the open directory f is the root of a mount, not the directory m
// under it: its mount differs from its parent's (a bind mount keeps the device).
func onMount(f *os.File, m string) bool {
	var st, parent unix.Statx_t
	if unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &st) != nil ||
		unix.Statx(unix.AT_FDCWD, filepath.Dir(m), 0, unix.STATX_MNT_ID, &parent) != nil {
		return false
	}
	return st.Mnt_id != parent.Mnt_id
}
