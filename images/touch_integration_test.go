package images

import (
	"testing"
	"time"

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
