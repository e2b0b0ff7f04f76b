package experiment

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/regtest"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/registry"
	"ceval.dev/ceval/supervisor"
)

// An experiment whose task names a registry tag pulls it into a fresh namespace, pins its
// digest into plan.json before the first run, and every run uses that digest although the
// tag is moved (in the registry and in containerd) after the first run; result.json
// records the reference and the digest; a resume uses the plan's digest without asking the
// registry.
func TestExperimentPinsTheDigestAcrossATagMove(t *testing.T) {
	ro, reg := regtest.Registry(t)
	c, ctx := ctrtest.Connect(t)
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, images.DefaultName) })
	def, err := images.BuildDefault(ctx, c, images.DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v1 := regtest.DeriveImage(t, ctx, c, def.Name, "ceval.test/pin:v1", "v1")
	v2 := regtest.DeriveImage(t, ctx, c, def.Name, "ceval.test/pin:v2", "v2")
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

	nctx, _ := ctrtest.FreshNamespace(t, ctx, c)
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
		if r == nil || resultOf(r) == nil {
			t.Fatalf("run %d: %+v", i, r)
		}
		img := resultOf(r).Image
		if resultOf(r).Status != grader.TaskSuccess || img.Digest != v1.ManifestDigest || img.ManifestDigest != v1.ManifestDigest || img.Reference != ref || img.Source != images.SourcePulled {
			t.Errorf("run %d (repeat %d): status %s, image %+v; want SUCCESS on v1 %s", i, r.Repeat, resultOf(r).Status, img, v1.ManifestDigest)
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
	if r.Resumed || resultOf(r) == nil || resultOf(r).Image.Digest != v1.ManifestDigest || resultOf(r).Status != grader.TaskSuccess {
		t.Fatalf("resumed run: %+v", resultOf(r))
	}
}
