package images_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

func needBuildah(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("buildah"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and buildah is missing: apt-get install buildah (make setup)")
		}
		t.Skip("buildah missing: apt-get install buildah")
	}
}

func writeDockerfile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "Dockerfile")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDockerfileBuildFromContainerdImageRunsRunStep builds FROM an image that exists only
// in containerd (the default image; no registry is asked) with a RUN step and a build
// argument, and gets a labeled image holding the step's file.
func TestDockerfileBuildFromContainerdImageRunsRunStep(t *testing.T) {
	needBuildah(t)
	c, ctx := ctrtest.Connect(t)
	base, err := images.EnsureDefault(ctx, c, images.DefaultOptions{Name: "ceval.local/test-df-base:latest"})
	if err != nil {
		t.Fatal(err)
	}
	name := "ceval.local/test-df:latest"
	for _, n := range []string{base.Name, name} {
		t.Cleanup(func() {
			if err := c.ImageService().Delete(ctx, n, ctrimages.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
				t.Errorf("delete %s: %v", n, err)
			}
		})
	}
	df := writeDockerfile(t, "FROM "+base.Name+"\nARG WORD=unset\nUSER root\nRUN mkdir -p /opt/x && echo \"$WORD\" > /opt/x/word\nUSER 2000:2000\n")
	img, err := images.BuildDockerfile(ctx, c, images.DockerfileOptions{Name: name, Dockerfile: df, BuildArgs: []string{"WORD=built"}, Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := images.NewPreflightCache("")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := pc.Preflight(ctx, c, img.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Runnable(); err != nil || rep.Layers != 2 {
		t.Fatalf("built image: runnable %v, %d layers, want runnable with the base layer and the RUN layer", err, rep.Layers)
	}
}

// TestDockerfileBuildRefusesSetuidFromRunStep: a RUN step that sets a setuid bit gets no
// image, although the base's isolation label is inherited by buildah's config: the
// preflight of `images label` runs on every Dockerfile build, and the refused image is
// deleted.
func TestDockerfileBuildRefusesSetuidFromRunStep(t *testing.T) {
	needBuildah(t)
	c, ctx := ctrtest.Connect(t)
	base, err := images.EnsureDefault(ctx, c, images.DefaultOptions{Name: "ceval.local/test-df-base2:latest"})
	if err != nil {
		t.Fatal(err)
	}
	name := "ceval.local/test-df-setuid:latest"
	t.Cleanup(func() {
		for _, n := range []string{base.Name, name} {
			if err := c.ImageService().Delete(ctx, n, ctrimages.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
				t.Errorf("delete %s: %v", n, err)
			}
		}
	})
	df := writeDockerfile(t, "FROM "+base.Name+"\nUSER root\nRUN chmod u+s /bin/busybox\n")
	_, err = images.BuildDockerfile(ctx, c, images.DockerfileOptions{Name: name, Dockerfile: df, Log: logWriter{t}})
	if !errors.Is(err, images.ErrNotRunnable) {
		t.Fatalf("err = %v, want ErrNotRunnable for the setuid busybox", err)
	}
	if _, err := images.Lookup(ctx, c, name); !errdefs.IsNotFound(err) {
		t.Fatalf("the refused image is still there: %v", err)
	}
}

// A Dockerfile FROM a ceval image without a USER line runs its RUN steps as root, as FROM
// any Debian base (apt-get works), and buildah accepts the base (its config's history
// accounts for its layers). Red while ceval's images named User 2000:2000: the RUN step
// exited 1.
func TestDockerfileRunStepsAreRootWithoutAUserLine(t *testing.T) {
	needBuildah(t)
	c, ctx := ctrtest.Connect(t)
	base, err := images.EnsureDefault(ctx, c, images.DefaultOptions{Name: "ceval.local/test-df-root-base:latest"})
	if err != nil {
		t.Fatal(err)
	}
	name := "ceval.local/test-df-root:latest"
	for _, n := range []string{base.Name, name} {
		t.Cleanup(func() {
			if err := c.ImageService().Delete(ctx, n, ctrimages.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
				t.Errorf("delete %s: %v", n, err)
			}
		})
	}
	df := writeDockerfile(t, "FROM "+base.Name+"\nRUN test \"$(id -u)\" = 0 && mkdir -p /opt/by-root\n")
	if _, err := images.BuildDockerfile(ctx, c, images.DockerfileOptions{Name: name, Dockerfile: df, Log: logWriter{t}}); err != nil {
		t.Fatalf("a RUN step FROM a ceval image without USER did not run as root: %v", err)
	}
}
