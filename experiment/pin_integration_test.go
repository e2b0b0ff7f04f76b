package experiment

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/registry"
	"ceval.dev/ceval/supervisor"
)

// testRegistry returns the options for the registry scripts/registry.sh started (its CA in
// a hosts directory, its credentials in a Docker config file) and its host; it skips, or
// fails under CI=true, when none runs.
func testRegistry(t *testing.T) (registry.Options, string) {
	t.Helper()
	reg := os.Getenv("CEVAL_TEST_REGISTRY")
	if reg == "" {
		msg := "CEVAL_TEST_REGISTRY unset: start one with scripts/registry.sh start DIR and export its env"
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and a registry is required: " + msg)
		}
		t.Skip(msg)
	}
	hosts := t.TempDir()
	if err := os.MkdirAll(filepath.Join(hosts, reg), 0o755); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(os.Getenv("CEVAL_TEST_REGISTRY_CA"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hosts, reg, "ca.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(os.Getenv("CEVAL_TEST_REGISTRY_USER") + ":" + os.Getenv("CEVAL_TEST_REGISTRY_PASSWORD")))
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg, auth)), 0o600); err != nil {
		t.Fatal(err)
	}
	return registry.Options{HostsDir: hosts, DockerConfig: cfg}, reg
}

// deriveImage makes image name from base plus one layer holding /marker (its text), with no
// isolation label in its config (as an image from a registry has none), and returns it.
func deriveImage(t *testing.T, ctx context.Context, c *client.Client, base, name, marker string) images.Image {
	t.Helper()
	cs := c.ContentStore()
	lctx, done, err := c.WithLease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer done(context.WithoutCancel(ctx))
	rec, err := c.ImageService().Get(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	var man ocispec.Manifest
	mb, err := content.ReadBlob(ctx, cs, rec.Target)
	if err == nil {
		err = json.Unmarshal(mb, &man)
	}
	if err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	cb, err := content.ReadBlob(ctx, cs, man.Config)
	if err == nil {
		err = json.Unmarshal(cb, &cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	tw.WriteHeader(&tar.Header{Name: "marker", Mode: 0o644, Size: int64(len(marker)), ModTime: time.Unix(0, 0)})
	tw.Write([]byte(marker))
	tw.Close()
	put := func(mt string, b []byte, labels map[string]string) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := content.WriteBlob(lctx, cs, "derive-"+d.Digest.Encoded(), bytes.NewReader(b), d, content.WithLabels(labels)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	ld := put(ocispec.MediaTypeImageLayer, layer.Bytes(), nil)
	cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, ld.Digest)
	if len(cfg.History) > 0 {
		cfg.History = append(cfg.History, ocispec.History{CreatedBy: "marker " + marker})
	}
	delete(cfg.Config.Labels, images.IsolationLabel)
	nb, _ := json.Marshal(cfg)
	cd := put(ocispec.MediaTypeImageConfig, nb, nil)
	man.MediaType, man.Config, man.Layers = ocispec.MediaTypeImageManifest, cd, append(man.Layers, ld)
	nm, _ := json.Marshal(man)
	labels := map[string]string{"containerd.io/gc.ref.content.config": cd.Digest.String()}
	for i, l := range man.Layers {
		labels[fmt.Sprintf("containerd.io/gc.ref.content.l.%d", i)] = l.Digest.String()
	}
	md := put(ocispec.MediaTypeImageManifest, nm, labels)
	ctrtest.RemoveImage(ctx, c, name)
	if _, err := c.ImageService().Create(ctx, ctrimages.Image{Name: name, Target: md}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, name) })
	img, err := images.Lookup(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// freshNamespace is a containerd namespace of its own for one test, emptied and removed
// at its end.
func freshNamespace(t *testing.T, ctx context.Context, c *client.Client) context.Context {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	ns := ctrtest.Namespace + "-" + hex.EncodeToString(b)
	nctx := namespaces.WithNamespace(ctx, ns)
	t.Cleanup(func() {
		cctx := context.WithoutCancel(nctx)
		if err := ctrtest.Leftovers(cctx, c); err != nil {
			t.Errorf("left behind in namespace %s: %v", ns, err)
		}
		imgs, _ := c.ImageService().List(cctx)
		for _, img := range imgs {
			ctrtest.RemoveImage(cctx, c, img.Name)
		}
		_ = c.NamespaceService().Delete(cctx, ns)
	})
	return nctx
}

// An experiment whose task names a registry tag pulls it into a fresh namespace, pins its
// digest into plan.json before the first run, and every run uses that digest although the
// tag is moved (in the registry and in containerd) after the first run; result.json
// records the reference and the digest; a resume uses the plan's digest without asking the
// registry.
func TestExperimentPinsTheDigestAcrossATagMove(t *testing.T) {
	ro, reg := testRegistry(t)
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { removeTestImage(t, context.WithoutCancel(ctx), c) })
	def, err := images.BuildDefault(ctx, c, images.DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v1 := deriveImage(t, ctx, c, def.Name, "ceval.test/pin:v1", "v1")
	v2 := deriveImage(t, ctx, c, def.Name, "ceval.test/pin:v2", "v2")
	b := make([]byte, 4)
	rand.Read(b)
	ref := fmt.Sprintf("%s/ceval-test/pin-%s:latest", reg, hex.EncodeToString(b))
	qctx := registry.Quiet(ctx)
	res, err := ro.Resolver(qctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := images.Push(qctx, c, v1.Name, ref, res, nil); err != nil {
		t.Fatal(ro.Explain(ref, err))
	}

	nctx := freshNamespace(t, ctx, c)
	e := loadTestExperiment(t, "experiment_id: pin\ntasks: [a/task.yaml]\nrepeats: 3\n", map[string]string{
		"a": agentTask("a", "cat /marker > which.txt", "  - {type: file_contains, path: which.txt, includes: [v1]}\n",
			"  image: "+ref+"\n"),
	})
	pins := images.NewPinner(images.PullMissing, ro)
	var once sync.Once
	runs := t.TempDir()
	out, err := Run(nctx, e, Options{
		Run: supervisor.Options{Client: c, RunsDir: runs, Grace: time.Second, Pins: pins}, Parallel: 1,
		OnFinish: func(*RunRecord) {
			once.Do(func() {
				// The tag moves to v2 in the registry, and in this containerd too.
				if _, err := images.Push(qctx, c, v2.Name, ref, res, nil); err != nil {
					t.Error(err)
				}
				if _, _, err := images.Pull(registry.Quiet(nctx), c, ref, images.PullOptions{Resolver: res}); err != nil {
					t.Error(err)
				}
			})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := record.ReadPlan(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Images) != 1 || plan.Images[0].Digest != v1.ManifestDigest || plan.Images[0].Name != ref {
		t.Fatalf("plan.json images %+v, want %s pinned to v1's %s", plan.Images, ref, v1.ManifestDigest)
	}
	if rec, err := c.ImageService().Get(nctx, ref); err != nil || rec.Target.Digest != v2.ManifestDigest {
		t.Fatalf("the tag did not move in containerd: %v %v", rec.Target.Digest, err)
	}
	for i, r := range out.Records {
		if r == nil || r.Result == nil {
			t.Fatalf("run %d: %+v", i, r)
		}
		img := r.Result.Image
		if r.Result.Status != grader.TaskSuccess || img.Digest != v1.ManifestDigest || img.ManifestDigest != v1.ManifestDigest || img.Reference != ref || img.Source != images.SourcePulled {
			t.Errorf("run %d (repeat %d): status %s, image %+v; want SUCCESS on v1 %s", i, r.Repeat, r.Result.Status, img, v1.ManifestDigest)
		}
	}

	// Resume with the last run undone: it runs on v1 again, and nothing is pulled.
	last := out.Records[len(out.Records)-1].Dir
	if err := os.Remove(filepath.Join(last, record.ResultFile)); err != nil {
		t.Fatal(err)
	}
	pins2 := images.NewPinner(images.PullAlways, registry.Options{HostsDir: t.TempDir(), DockerConfig: filepath.Join(t.TempDir(), "none")})
	out2, err := Run(nctx, e, Options{
		Run:    supervisor.Options{Client: c, RunsDir: runs, RunID: filepath.Base(out.Dir), Grace: time.Second, Pins: pins2},
		Resume: true, Parallel: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if pins2.Pulls != 0 {
		t.Errorf("the resume pulled %d times; want the plan's pin and no registry", pins2.Pulls)
	}
	r := out2.Records[len(out2.Records)-1]
	if r.Resumed || r.Result == nil || r.Result.Image.Digest != v1.ManifestDigest || r.Result.Status != grader.TaskSuccess {
		t.Fatalf("resumed run: %+v", r.Result)
	}
}
