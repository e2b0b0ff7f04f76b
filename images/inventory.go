package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"

	"ceval.dev/ceval/record"
)

// Entry is one image of a containerd namespace as `ceval images ls` shows it.
type Entry struct {
	Name   string        `json:"name"`
	Digest digest.Digest `json:"digest"` // what the record names: a manifest or an index
	// Size is this platform's manifest, config and layers as stored (compressed); 0 when
	// some of it is missing.
	Size int64 `json:"size"`
	// Source is built, imported or pulled; "" when ceval did not make the record.
	Source    string    `json:"source,omitempty"`
	Reference string    `json:"reference,omitempty"`
	Created   time.Time `json:"created"`
	// LastUsed is when a run last resolved the image (zero: never, since ceval records it).
	LastUsed time.Time `json:"last_used,omitzero"`
	// PinnedBy are the directories of the experiments that pinned it.
	PinnedBy []string `json:"pinned_by,omitempty"`
}

// List returns the images of ctx's namespace, sorted by name.
func List(ctx context.Context, c *client.Client) ([]Entry, error) {
	recs, err := c.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]Entry, 0, len(recs))
	for _, rec := range recs {
		e := Entry{Name: rec.Name, Digest: rec.Target.Digest, Source: rec.Labels[SourceLabel], Reference: rec.Labels[ReferenceLabel], Created: rec.CreatedAt}
		if e.Source == "" && strings.HasPrefix(rec.Name, "ceval.local/") {
			e.Source = SourceBuilt
		}
		if t, err := time.Parse(time.RFC3339, rec.Labels[LastUsedLabel]); err == nil {
			e.LastUsed = t
		}
		for k, v := range rec.Labels {
			if strings.HasPrefix(k, PinnedLabelPrefix) {
				e.PinnedBy = append(e.PinnedBy, v)
			}
		}
		slices.Sort(e.PinnedBy)
		if r, err := resolve(ctx, c.ContentStore(), rec); err == nil {
			e.Size = r.manifestDesc.Size + r.configDesc.Size
			for _, l := range r.manifest.Layers {
				e.Size += l.Size
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Unfinished reports whether the experiment in dir has a planned run without a complete
// result.json (interrupted, stopped early, or running): a resume would run it.
func Unfinished(dir string) bool {
	plan, err := record.ReadPlan(dir)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // unreadable: err on keeping its images
	}
	for _, r := range plan.Runs() {
		res, err := record.ReadResult(plan.Dir(dir, r))
		if err != nil || !res.Complete {
			return true
		}
	}
	return false
}

// Pruned is one image Prune removed, or kept, and why.
type Pruned struct {
	Entry
	Why string
}

// Prune removes the images of ctx's namespace that no run used for olderThan (by their
// last use, else their creation), and their content (containerd collects it once no image
// holds it). An image an unfinished experiment pinned is always kept. With dryRun nothing
// is removed.
func Prune(ctx context.Context, c *client.Client, olderThan time.Duration, dryRun bool) (removed, kept []Pruned, err error) {
	entries, err := List(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	var errs []error
	for _, e := range entries {
		used, slack := e.LastUsed, TouchGranularity // a run that recent may not have rewritten the label
		if used.IsZero() {
			used, slack = e.Created, 0
		}
		if d := slices.IndexFunc(e.PinnedBy, Unfinished); d >= 0 {
			kept = append(kept, Pruned{e, "pinned by the unfinished experiment " + e.PinnedBy[d]})
			continue
		}
		if age := now.Sub(used); age < olderThan+slack {
			kept = append(kept, Pruned{e, fmt.Sprintf("used %s ago", age.Round(time.Second))})
			continue
		}
		if !dryRun {
			if err := c.ImageService().Delete(ctx, e.Name, images.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove image %s: %w", e.Name, err))
				continue
			}
		}
		removed = append(removed, Pruned{e, fmt.Sprintf("last used %s", used.UTC().Format(time.RFC3339))})
	}
	return removed, kept, errors.Join(errs...)
}

// TouchGranularity is how stale an image's last-used label may be: a run does not rewrite a
// label this recent (a write to containerd's metadata, which the run's own container creation
// would queue behind), and images prune keeps an image this much longer.
const TouchGranularity = 10 * time.Minute

// touched are the images this process recorded a use of already; touching counts the
// updates under way; lastUsed is each image's last-used label as this process read it.
var (
	touched  sync.Map
	touching sync.WaitGroup
	lastUsed sync.Map // name -> label value
)

// TouchOnce is Touch at most once per image and process (a run resolves its image on
// every run; one label update per experiment is enough for images prune), in the background:
// nothing of a run waits on the label (WaitTouches before the client closes). A label under
// TouchGranularity old, as the image's resolve read it, is left as it is.
func TouchOnce(ctx context.Context, c *client.Client, name string) {
	if _, done := touched.LoadOrStore(name, true); done {
		return
	}
	if v, ok := lastUsed.Load(name); ok {
		if t, err := time.Parse(time.RFC3339, v.(string)); err == nil {
			if age := time.Since(t); age >= -time.Minute && age < TouchGranularity {
				return
			}
		}
	}
	touching.Go(func() { Touch(context.WithoutCancel(ctx), c, name) })
}

// WaitTouches waits for the label updates TouchOnce started.
func WaitTouches() { touching.Wait() }
