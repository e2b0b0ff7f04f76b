package images_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// needMmdebstrap skips (or under CI=true fails) when the host cannot build package images.
func needMmdebstrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and mmdebstrap is missing: apt-get install mmdebstrap (make setup)")
		}
		t.Skip("mmdebstrap missing: apt-get install mmdebstrap")
	}
}

// TestPackageImageIsKeptThenImportedFromTheCacheWithTheSameDigest builds python3, nodejs
// and git (from the user's image cache after the first build on this machine: CI stays
// fast), builds again (kept: containerd has the same inputs), deletes it from containerd
// and builds again (imported from the cache, same manifest), and runs the preflight a run
// does: labeled, no setuid/setgid file, no file capability left.
func TestPackageImageIsKeptThenImportedFromTheCacheWithTheSameDigest(t *testing.T) {
	needMmdebstrap(t)
	c, ctx := ctrtest.Connect(t)
	name := "ceval.local/test-packages:latest"
	del := func() {
		if err := c.ImageService().Delete(ctx, name, ctrimages.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
			t.Errorf("delete %s: %v", name, err)
		}
	}
	t.Cleanup(del)
	opts := images.PackageOptions{Name: name, Packages: []string{"python3", "nodejs", "git"}, Log: logWriter{t}}

	start := time.Now()
	first, err := images.BuildPackages(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first build (cached on disk: %v): %s, %d MB", first.Cached, time.Since(start).Round(time.Millisecond), first.Size>>20)
	kept, err := images.BuildPackages(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !kept.Kept || kept.Image != first.Image {
		t.Fatalf("second build: %+v, want the first image %+v kept", kept.Image, first.Image)
	}
	del()
	start = time.Now()
	again, err := images.BuildPackages(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("from the image cache: %s", time.Since(start).Round(time.Millisecond))
	if !again.Cached || again.Image.ManifestDigest != first.Image.ManifestDigest {
		t.Fatalf("after deleting it from containerd: cached %v manifest %s, want the cache's %s", again.Cached, again.Image.ManifestDigest, first.Image.ManifestDigest)
	}
	pc, err := images.NewPreflightCache("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := images.Resolve(ctx, c, name, pc, ""); err != nil {
		t.Fatalf("the package image does not pass the preflight a run does: %v", err)
	}
	rep, err := pc.Preflight(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if rep.AgentUser != "agent" || rep.AgentHomeOwner != "2000:2000" || len(rep.Dangerous) != 0 {
		t.Errorf("preflight: user %q home owner %q dangerous %v", rep.AgentUser, rep.AgentHomeOwner, rep.Dangerous)
	}
}
