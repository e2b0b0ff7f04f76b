package images

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/opencontainers/image-spec/identity"
	"reflect"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/internal/ctrtest"
)

// deleteImageAtEnd removes name (and, through a synchronous GC, its content and
// snapshots) when the test ends, before ctrtest looks for leftovers.
func deleteImageAtEnd(t *testing.T, ctx context.Context, c *client.Client, name string) {
	t.Helper()
	t.Cleanup(func() {
		err := c.ImageService().Delete(ctx, name, images.SynchronousDelete())
		if err != nil && !errdefs.IsNotFound(err) {
			t.Errorf("delete image %s: %v", name, err)
		}
	})
}

func testImageName(t *testing.T) string {
	return fmt.Sprintf("ceval.local/test-%s:latest", t.Name())
}

// importLayers imports an image made of hand-made uncompressed layers, labeled or not.
func importLayers(t *testing.T, ctx context.Context, c *client.Client, name string, labeled bool, layers ...[]byte) Image {
	t.Helper()
	var blobs []blob
	cfg := ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}, RootFS: ocispec.RootFS{Type: "layers"}}
	if labeled {
		cfg.Config.Labels = map[string]string{IsolationLabel: IsolationLabelValue}
	}
	for _, l := range layers {
		b, diffID, err := gzipLayer(l)
		if err != nil {
			t.Fatal(err)
		}
		blobs = append(blobs, b)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, diffID)
	}
	cfg.Architecture = hostArch(t)
	var buf bytes.Buffer
	if _, err := writeLayout(&buf, name, cfg, blobs); err != nil {
		t.Fatal(err)
	}
	deleteImageAtEnd(t, ctx, c, name)
	imgs, err := Import(ctx, c, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 1 || imgs[0].Name != name {
		t.Fatalf("imported %v, want one image %s", imgs, name)
	}
	return imgs[0]
}

func hostArch(t *testing.T) string {
	t.Helper()
	_, arch, err := readStaticBusybox(DefaultBusybox)
	if err != nil {
		return "amd64"
	}
	return arch
}

func assertUnpacked(t *testing.T, ctx context.Context, c *client.Client, name string) {
	t.Helper()
	rec, err := c.ImageService().Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := client.NewImage(c, rec).IsUnpacked(ctx, Snapshotter)
	if err != nil || !ok {
		t.Fatalf("image %s unpacked for %s = %v, %v; want true", name, Snapshotter, ok, err)
	}
}

func TestBuildDefaultTwiceGivesSameDigestAndAgentUser(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	needBusybox(t)
	name := testImageName(t)
	deleteImageAtEnd(t, ctx, c, name)

	start := time.Now()
	first, err := BuildDefault(ctx, c, DefaultOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	cold := time.Since(start)
	second, err := BuildDefault(ctx, c, DefaultOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("build-default: first %v, second %v", cold, time.Since(start)-cold)
	if first != second {
		t.Fatalf("two builds differ: %+v vs %+v", first, second)
	}
	assertUnpacked(t, ctx, c, name)

	pc, err := NewPreflightCache("")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := pc.Preflight(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if rep.AgentUser != "agent" || rep.AgentHome != "/home/agent" || rep.AgentHomeOwner != "2000:2000" {
		t.Errorf("passwd: user %q home %q owner %q, want agent /home/agent 2000:2000", rep.AgentUser, rep.AgentHome, rep.AgentHomeOwner)
	}
	if err := rep.Runnable(); err != nil {
		t.Errorf("default image not runnable: %v", err)
	}
}

func TestEnsureDefaultBuildsWhenMissingThenReusesIt(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	needBusybox(t)
	name := testImageName(t)
	deleteImageAtEnd(t, ctx, c, name)

	start := time.Now()
	built, err := EnsureDefault(ctx, c, DefaultOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	cold := time.Since(start)
	// A busybox path that does not exist proves the warm call does not rebuild.
	start = time.Now()
	again, err := EnsureDefault(ctx, c, DefaultOptions{Name: name, Busybox: "/nonexistent/busybox"})
	if err != nil {
		t.Fatalf("warm EnsureDefault rebuilt: %v", err)
	}
	t.Logf("EnsureDefault: cold %v, warm %v", cold, time.Since(start))
	if built != again || built.Name != name || built.ManifestDigest == "" || built.ConfigDigest == "" {
		t.Fatalf("EnsureDefault = %+v then %+v", built, again)
	}
}

func TestPreflightFindsSetuidAndCapabilityAndLabelRefusesImage(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	name := testImageName(t)
	img := importLayers(t, ctx, c, name, false,
		layerTar(t, file("etc/passwd", agentPasswd, 0o644), file("usr/bin/sudo", "x", 0o4755)),
		layerTar(t, capFile("usr/bin/ping")))

	pc, _ := NewPreflightCache("")
	rep, err := pc.Preflight(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(rep.Dangerous), []string{"/usr/bin/ping:file-capability", "/usr/bin/sudo:setuid"}; !reflect.DeepEqual(got, want) {
		t.Errorf("findings = %v, want %v", got, want)
	}
	if err := rep.Runnable(); !errors.Is(err, ErrNotRunnable) {
		t.Errorf("Runnable() = %v, want ErrNotRunnable", err)
	}

	_, err = Label(ctx, c, name)
	if !errors.Is(err, ErrNotRunnable) || !bytes.Contains([]byte(err.Error()), []byte("/usr/bin/sudo")) || !bytes.Contains([]byte(err.Error()), []byte("/usr/bin/ping")) {
		t.Fatalf("Label() = %v, want a refusal listing /usr/bin/sudo and /usr/bin/ping", err)
	}
	after, err := Lookup(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if after != img {
		t.Errorf("refused Label changed the image: %+v -> %+v", img, after)
	}
}

func TestLabelAddsLabelAndKeepsLayers(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	name := testImageName(t)
	before := importLayers(t, ctx, c, name, false,
		layerTar(t, dirEntry("home/agent/", 2000, 2000), file("etc/passwd", agentPasswd, 0o644)),
		layerTar(t, file("bin/tool", "x", 0o755)))
	layersOf := func() []ocispec.Descriptor {
		rec, err := c.ImageService().Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := resolve(ctx, c.ContentStore(), rec)
		if err != nil {
			t.Fatal(err)
		}
		return r.manifest.Layers
	}
	oldLayers := layersOf()

	pc, _ := NewPreflightCache("")
	rep, err := pc.Preflight(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Runnable(); err == nil {
		t.Fatal("unlabeled image is runnable")
	}

	after, err := Label(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if after.ManifestDigest == before.ManifestDigest || after.ConfigDigest == before.ConfigDigest {
		t.Errorf("Label kept the manifest or config: %+v -> %+v", before, after)
	}
	if got := layersOf(); !reflect.DeepEqual(got, oldLayers) {
		t.Errorf("layers changed: %v -> %v", oldLayers, got)
	}
	rep, err = pc.Preflight(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Runnable(); err != nil {
		t.Errorf("labeled image not runnable: %v", err)
	}
	if rep.Image != after {
		t.Errorf("preflight saw %+v, Label returned %+v", rep.Image, after)
	}
	assertUnpacked(t, ctx, c, name)
	// A garbage collection must not take the unpacked snapshot: the new config refers to it.
	rec, err := c.ImageService().Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	rec.Name = name + "-gc-trigger"
	if _, err := c.ImageService().Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := c.ImageService().Delete(ctx, rec.Name, images.SynchronousDelete()); err != nil {
		t.Fatal(err)
	}
	assertUnpacked(t, ctx, c, name)

	again, err := Label(ctx, c, name)
	if err != nil || again != after {
		t.Errorf("labeling a labeled image: %+v, %v; want it unchanged", again, err)
	}
}

func TestImportOCILayoutNamesAndUnpacksImage(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	name := testImageName(t)
	img := importLayers(t, ctx, c, name, true, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
	assertUnpacked(t, ctx, c, name)
	got, err := Lookup(ctx, c, name)
	if err != nil || got != img {
		t.Fatalf("Lookup = %+v, %v; want %+v", got, err, img)
	}
}

// dockerSave writes a `docker save` archive: manifest.json, a config and uncompressed
// layer tars, each layer in its own directory.
func dockerSave(t *testing.T, tag string, layers ...[]byte) []byte {
	t.Helper()
	cfg := map[string]any{
		"architecture": hostArch(t),
		"os":           "linux",
		"config":       map[string]any{"Env": []string{"PATH=/bin"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{}},
	}
	var diffIDs, layerFiles []string
	files := map[string][]byte{}
	for i, l := range layers {
		diffIDs = append(diffIDs, digestOf(l).String())
		f := fmt.Sprintf("layer%d/layer.tar", i)
		layerFiles = append(layerFiles, f)
		files[f] = l
	}
	cfg["rootfs"].(map[string]any)["diff_ids"] = diffIDs
	cfgJSON, _ := json.Marshal(cfg)
	cfgName := digestOf(cfgJSON).Encoded() + ".json"
	files[cfgName] = cfgJSON
	man, _ := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{tag}, "Layers": layerFiles}})
	files["manifest.json"] = man

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range []string{"manifest.json", cfgName} {
		writeTestFile(t, tw, n, files[n])
	}
	for i, f := range layerFiles {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: fmt.Sprintf("layer%d/", i), Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, tw, f, files[f])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeTestFile(t *testing.T, tw *tar.Writer, name string, data []byte) {
	t.Helper()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
}

func TestImportDockerSaveArchiveNormalizesTagAndUnpacks(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	const name = "docker.io/ceval-test/docker-save:1"
	deleteImageAtEnd(t, ctx, c, name)
	archive := dockerSave(t, "ceval-test/docker-save:1",
		layerTar(t, dirEntry("home/", 0, 0), dirEntry("home/agent/", 2000, 2000), file("etc/passwd", agentPasswd, 0o644)),
		layerTar(t, file("bin/tool", "x", 0o755)))
	imgs, err := Import(ctx, c, bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 1 || imgs[0].Name != name {
		t.Fatalf("imported %+v, want one image %s", imgs, name)
	}
	assertUnpacked(t, ctx, c, name)

	pc, _ := NewPreflightCache("")
	rep, err := pc.Preflight(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Layers != 2 || rep.AgentUser != "agent" || rep.Labeled() {
		t.Errorf("report = %+v, want 2 layers, agent user, no label", rep)
	}
	// A docker image can be labeled too: its docker config keeps its other fields.
	if _, err := Label(ctx, c, name); err != nil {
		t.Fatal(err)
	}
	if rep, err = pc.Preflight(ctx, c, name); err != nil || rep.Runnable() != nil {
		t.Fatalf("after label: %v, %v", err, rep.Runnable())
	}
}

func TestMissingImageErrorSaysHowToGetIt(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	const name = "ceval.local/does-not-exist:latest"
	want := fmt.Sprintf("image %s not found in containerd namespace %s; build it with ceval images build-default or import it with ceval images import FILE", name, ctrtest.Namespace)
	pc, _ := NewPreflightCache("")
	for _, call := range []struct {
		name string
		fn   func() error
	}{
		{"Preflight", func() error { _, err := pc.Preflight(ctx, c, name); return err }},
		{"Lookup", func() error { _, err := Lookup(ctx, c, name); return err }},
		{"Label", func() error { _, err := Label(ctx, c, name); return err }},
	} {
		err := call.fn()
		if err == nil || err.Error() != want || !errdefs.IsNotFound(err) {
			t.Errorf("%s: err = %v, want %q (errdefs.ErrNotFound)", call.name, err, want)
		}
	}
}

func TestPreflightCacheHitDoesNotRescan(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	needBusybox(t)
	name := testImageName(t)
	deleteImageAtEnd(t, ctx, c, name)
	if _, err := BuildDefault(ctx, c, DefaultOptions{Name: name}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pc, err := NewPreflightCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	timed := func(pc *PreflightCache) (*Report, time.Duration) {
		start := time.Now()
		rep, err := pc.Preflight(ctx, c, name)
		if err != nil {
			t.Fatal(err)
		}
		return rep, time.Since(start)
	}
	cold, tCold := timed(pc)
	warm, tWarm := timed(pc)
	// A new cache on the same directory stands for the next ceval process.
	pc2, err := NewPreflightCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	disk, tDisk := timed(pc2)
	t.Logf("preflight: cold %v, memory cache %v, disk cache %v", tCold, tWarm, tDisk)

	if cold.Cached || !warm.Cached || !disk.Cached {
		t.Errorf("cached flags: cold %v warm %v disk %v, want false true true", cold.Cached, warm.Cached, disk.Cached)
	}
	if pc.scans.Load() != 1 || pc2.scans.Load() != 0 {
		t.Errorf("scans: %d and %d, want 1 and 0", pc.scans.Load(), pc2.scans.Load())
	}
	warm.Cached, disk.Cached = false, false
	if !reflect.DeepEqual(cold, warm) || !reflect.DeepEqual(cold, disk) {
		t.Errorf("cached reports differ:\n%+v\n%+v\n%+v", cold, warm, disk)
	}
}

// An image retagged after its name's report was cached (a tag moved to one with a setuid
// file) must be scanned, not served the report of the manifest the name used to mean.
func TestPreflightOfRetaggedImageIsNotServedTheOldReport(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	name := testImageName(t)
	clean := importLayers(t, ctx, c, name, true,
		layerTar(t, dirEntry("home/agent/", 2000, 2000), file("etc/passwd", agentPasswd, 0o644)))
	pc, err := NewPreflightCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := pc.PreflightOf(ctx, c, clean)
	if err != nil || rep.Runnable() != nil {
		t.Fatalf("clean image: report %+v, err %v; want runnable", rep, err)
	}
	if again, err := pc.PreflightOf(ctx, c, clean); err != nil || !again.Cached || pc.scans.Load() != 1 {
		t.Fatalf("clean image again: cached %v, scans %d, err %v; want a cache hit", again != nil && again.Cached, pc.scans.Load(), err)
	}
	moved := importLayers(t, ctx, c, name, true,
		layerTar(t, dirEntry("home/agent/", 2000, 2000), file("etc/passwd", agentPasswd, 0o644), file("usr/bin/sudo", "x", 0o4755)))
	if moved.ManifestDigest == clean.ManifestDigest {
		t.Fatal("the retagged image has the same manifest digest")
	}
	rep, err = pc.PreflightOf(ctx, c, moved)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cached || rep.Image != moved || !errors.Is(rep.Runnable(), ErrNotRunnable) {
		t.Errorf("retagged image: cached %v, image %+v, Runnable() %v; want a fresh scan of %+v refusing /usr/bin/sudo", rep.Cached, rep.Image, rep.Runnable(), moved)
	}
}

// The quick check that the default image is unpacked (one Stat of its chain ID) must still
// see a snapshot that went missing (containerd's GC, a `ctr snapshot rm`) and unpack again,
// or every container of the run would fail to create.
func TestEnsureDefaultUnpacksAgainWhenItsSnapshotIsGone(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	needBusybox(t)
	name := testImageName(t)
	deleteImageAtEnd(t, ctx, c, name)
	if _, err := EnsureDefault(ctx, c, DefaultOptions{Name: name}); err != nil {
		t.Fatal(err)
	}
	rec, err := c.ImageService().Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	diffs, err := client.NewImage(c, rec).RootFS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sn := c.SnapshotService(Snapshotter)
	// Remove the chain from its top: a parent with a child cannot go.
	for i := len(diffs); i > 0; i-- {
		if err := sn.Remove(ctx, identity.ChainID(diffs[:i]).String()); err != nil {
			t.Fatalf("remove snapshot of layer %d: %v", i, err)
		}
	}
	if ok, _ := client.NewImage(c, rec).IsUnpacked(ctx, Snapshotter); ok {
		t.Fatal("the image is still unpacked after its snapshots were removed")
	}
	if _, err := EnsureDefault(ctx, c, DefaultOptions{Name: name, Busybox: "/nonexistent/busybox"}); err != nil {
		t.Fatal(err)
	}
	assertUnpacked(t, ctx, c, name)
}
