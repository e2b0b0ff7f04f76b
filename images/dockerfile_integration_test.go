package images_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/registry"
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

// A FROM naming by its short form an image containerd holds under Docker's full name (a base
// pulled or built as ubuntu:24.04 is docker.io/library/ubuntu:24.04) is exported under that
// name: before, the second Dockerfile FROM a pulled ubuntu:24.04 failed "image
// "ubuntu:24.04": not found" (issue 40, Harbor's cookbook).
func TestDockerfileBuildFromAShortNameOfAnImageContainerdHolds(t *testing.T) {
	needBuildah(t)
	c, ctx := ctrtest.Connect(t)
	short := fmt.Sprintf("ceval-test-short-%d:v1", os.Getpid())
	base, err := images.EnsureDefault(ctx, c, images.DefaultOptions{Name: "docker.io/library/" + short})
	if err != nil {
		t.Fatal(err)
	}
	name := "ceval.local/test-df-short:latest"
	for _, n := range []string{base.Name, name} {
		t.Cleanup(func() {
			if err := c.ImageService().Delete(ctx, n, ctrimages.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
				t.Errorf("delete %s: %v", n, err)
			}
		})
	}
	df := writeDockerfile(t, "FROM "+short+"\nRUN mkdir -p /opt/x\n")
	if _, err := images.BuildDockerfile(ctx, c, images.DockerfileOptions{Name: name, Dockerfile: df, Log: logWriter{t}}); err != nil {
		t.Fatal(err)
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

// A FROM naming a registry image containerd lacks is pulled (pinned to its digest) and
// handed to buildah, whose own pulls stay off: `ceval images build -f` on a Dockerfile FROM
// the test registry's image, in two stages. With the pull policy never it is refused
// naming `ceval images pull`.
func TestDockerfileBuildPullsAFromImageContainerdLacks(t *testing.T) {
	needBuildah(t)
	reg := os.Getenv("CEVAL_TEST_REGISTRY")
	if reg == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and a registry is required: CEVAL_TEST_REGISTRY unset (scripts/registry.sh start DIR)")
		}
		t.Skip("CEVAL_TEST_REGISTRY unset: start one with scripts/registry.sh start DIR and export its env")
	}
	hosts := t.TempDir()
	ca, err := os.ReadFile(os.Getenv("CEVAL_TEST_REGISTRY_CA"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(hosts, reg), 0o755)
	os.WriteFile(filepath.Join(hosts, reg, "ca.crt"), ca, 0o644)
	dc := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte(os.Getenv("CEVAL_TEST_REGISTRY_USER") + ":" + os.Getenv("CEVAL_TEST_REGISTRY_PASSWORD")))
	os.WriteFile(dc, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg, auth)), 0o600)
	ro := registry.Options{HostsDir: hosts, DockerConfig: dc}

	c, ctx := ctrtest.Connect(t)
	ctx = registry.Quiet(ctx)
	base, err := images.EnsureDefault(ctx, c, images.DefaultOptions{Name: "ceval.local/test-df-pushed-base:latest"})
	if err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("%s/ceval-test/df-base-%d:v1", reg, os.Getpid())
	res, err := ro.Resolver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := images.Push(ctx, c, base.Name, ref, res, nil); err != nil {
		t.Fatal(ro.Explain(ref, err))
	}
	name := "ceval.local/test-df-pulled:latest"
	pinned := strings.TrimSuffix(ref, ":v1") + "@" + base.ManifestDigest.String()
	t.Cleanup(func() {
		for _, n := range []string{base.Name, name, ref, pinned} {
			ctrtest.RemoveImage(ctx, c, n)
		}
	})
	ctrtest.RemoveImage(ctx, c, base.Name) // containerd has it only in the registry now
	df := writeDockerfile(t, "FROM "+ref+" AS first\nRUN echo one > /one\nFROM first\nRUN test -f /one && echo two > /two\n")

	never := images.NewPinner(images.PullNever, ro)
	_, err = images.BuildDockerfile(ctx, c, images.DockerfileOptions{Name: name, Dockerfile: df, Log: logWriter{t}, Pins: never})
	if err == nil || !strings.Contains(err.Error(), "ceval images pull "+ref) {
		t.Fatalf("build FROM a missing image with the pull policy never: %v, want a refusal naming ceval images pull", err)
	}

	pins := images.NewPinner(images.PullMissing, ro)
	img, err := images.BuildDockerfile(ctx, c, images.DockerfileOptions{Name: name, Dockerfile: df, Log: logWriter{t}, Pins: pins})
	if err != nil {
		t.Fatal(err)
	}
	if got := pins.Pins(); len(got) != 1 || got[0].Digest != base.ManifestDigest {
		t.Fatalf("pins %+v, want %s pinned to %s", got, ref, base.ManifestDigest)
	}
	if _, err := c.ImageService().Get(ctx, pinned); err != nil {
		t.Fatalf("the pinned base %s: %v", pinned, err)
	}
	pc, _ := images.NewPreflightCache("")
	rep, err := pc.Preflight(ctx, c, img.Name)
	if err != nil || rep.Runnable() != nil || rep.Layers != 3 {
		t.Fatalf("built image: %+v, %v; want runnable with the base's layer and two RUN layers", rep, err)
	}
}
