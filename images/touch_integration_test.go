package images

import (
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/images"

	"ceval.dev/ceval/internal/ctrtest"
)

// The last-used label a resolve writes in the background is on the image once WaitTouches
// returns (ceval's session waits for it before closing its client), so images prune still
// sees every use.
func TestResolveLabelsTheImageUsedOnceWaited(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	ctx, _ = ctrtest.FreshNamespace(t, ctx, c)
	const name = "ceval.local/touched:test"
	if _, err := BuildDefault(ctx, c, DefaultOptions{Name: name}); err != nil {
		t.Fatal(err)
	}
	touched.Delete(name) // labelled by an earlier run of this test in this process
	before := time.Now().UTC().Truncate(time.Second)
	if _, err := Resolve(ctx, c, name, nil, ""); err != nil {
		t.Fatal(err)
	}
	WaitTouches()
	rec, err := c.ImageService().Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	used, err := time.Parse(time.RFC3339, rec.Labels[LastUsedLabel])
	if err != nil || used.Before(before) {
		t.Fatalf("label %s = %q (%v), want a time from %s on", LastUsedLabel, rec.Labels[LastUsedLabel], err, before)
	}
}

// A label under TouchGranularity old is left as it is (no metadata write on the run's path),
// an older one is rewritten, and images prune keeps an image whose label is within its
// --older-than plus TouchGranularity, since a run that recent may not have rewritten it. Red
// with every resolve writing the label (the recent label changed) and with prune reading the
// label as exact (the image labelled 35 min ago pruned at 30 min).
func TestARecentLastUsedLabelIsNotRewrittenAndPruneAllowsForIt(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	ctx, _ = ctrtest.FreshNamespace(t, ctx, c)
	const name = "ceval.local/touched-recent:test"
	if _, err := BuildDefault(ctx, c, DefaultOptions{Name: name}); err != nil {
		t.Fatal(err)
	}
	setLabel := func(ago time.Duration) string {
		t.Helper()
		v := time.Now().Add(-ago).UTC().Format(time.RFC3339)
		if _, err := c.ImageService().Update(ctx, images.Image{Name: name, Labels: map[string]string{LastUsedLabel: v}}, "labels."+LastUsedLabel); err != nil {
			t.Fatal(err)
		}
		return v
	}
	label := func() string {
		t.Helper()
		rec, err := c.ImageService().Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Labels[LastUsedLabel]
	}
	resolveAsANewProcess := func() {
		t.Helper()
		touched.Delete(name)
		if _, err := Resolve(ctx, c, name, nil, ""); err != nil {
			t.Fatal(err)
		}
		WaitTouches()
	}
	recent := setLabel(2 * time.Minute)
	resolveAsANewProcess()
	if got := label(); got != recent {
		t.Errorf("a label 2 min old was rewritten: %q, want %q kept", got, recent)
	}
	old := setLabel(TouchGranularity + 5*time.Minute)
	resolveAsANewProcess()
	if got := label(); got == old {
		t.Errorf("a label %v old was kept: %q", TouchGranularity+5*time.Minute, got)
	}
	for _, tc := range []struct {
		ago  time.Duration
		kept bool
	}{{35 * time.Minute, true}, {30*time.Minute + TouchGranularity + 5*time.Minute, false}} {
		setLabel(tc.ago)
		removed, _, err := Prune(ctx, c, 30*time.Minute, true)
		if err != nil {
			t.Fatal(err)
		}
		if gone := len(removed) == 1 && removed[0].Name == name; gone == tc.kept || len(removed) > 1 {
			t.Errorf("prune --older-than 30m of an image labelled %v ago: removed %+v, want kept %v", tc.ago, removed, tc.kept)
		}
	}
}
