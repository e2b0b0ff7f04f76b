package images

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/record"
)

// images ls shows a pulled image's source, size and pin; images prune removes what no run
// used, but never an image an unfinished experiment pinned, until that experiment is done.
func TestPruneKeepsAnImageAnUnfinishedExperimentPinned(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	ctx, _ = ctrtest.FreshNamespace(t, ctx, c)
	f, host, o := startFake(t)
	pinnedMan, _ := f.addImage(t, "a", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
	otherMan, _ := f.addImage(t, "b", 0, layerTar(t, file("etc/motd", "b", 0o644)))
	pins := NewPinner(PullMissing, o)
	pin, err := pins.Pin(ctx, c, host+"/t/a:a")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pullWith(t, ctx, c, o, host+"/t/b:b"); err != nil {
		t.Fatal(err)
	}

	exp := t.TempDir()
	plan := &record.Plan{ExperimentID: "e", Repeats: 1, Variants: []string{"v"}, Entries: []record.PlanEntry{{Variant: "v", TaskID: "t"}}, Images: []record.ImagePin{pin}}
	if err := record.WriteJSONAtomic(filepath.Join(exp, record.PlanFile), plan); err != nil {
		t.Fatal(err)
	}
	if err := MarkPinned(ctx, c, plan.Images, "run1", exp); err != nil {
		t.Fatal(err)
	}
	es, err := List(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var sawPin bool
	for _, e := range es {
		if e.Source != SourcePulled || e.Size <= 0 {
			t.Errorf("ls entry %+v: want source pulled and a size", e)
		}
		if e.Name == PinnedName(pin) {
			sawPin = len(e.PinnedBy) == 1 && e.PinnedBy[0] == exp && e.Digest == digest.FromBytes(pinnedMan)
		}
	}
	if !sawPin {
		t.Fatalf("ls shows no %s pinned by %s: %+v", PinnedName(pin), exp, es)
	}

	removed, kept, err := Prune(ctx, c, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	names := func(ps []Pruned) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Name)
		}
		return strings.Join(s, " ")
	}
	if len(kept) != 1 || kept[0].Name != PinnedName(pin) || !strings.Contains(kept[0].Why, "unfinished experiment "+exp) {
		t.Fatalf("prune kept [%s], removed [%s]; want only %s kept for %s", names(kept), names(removed), PinnedName(pin), exp)
	}
	if _, err := c.ContentStore().Info(ctx, digest.FromBytes(otherMan)); !errdefs.IsNotFound(err) {
		t.Errorf("the pruned image's manifest is still stored (info: %v)", err)
	}
	if _, err := c.ContentStore().Info(ctx, digest.FromBytes(pinnedMan)); err != nil {
		t.Errorf("the pinned image's manifest is gone: %v", err)
	}

	// The experiment completes: its image goes at the next prune.
	run := plan.Dir(exp, plan.Runs()[0])
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := record.WriteJSONAtomic(filepath.Join(run, record.ResultFile), &record.Result{Complete: true, Timings: record.Timings{Total: time.Second.Seconds()}}); err != nil {
		t.Fatal(err)
	}
	removed, kept, err = Prune(ctx, c, 0, false)
	if err != nil || len(kept) != 0 || len(removed) != 1 {
		t.Fatalf("prune after the experiment completed: removed [%s], kept [%s], %v", names(removed), names(kept), err)
	}
}
