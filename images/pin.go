package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	"ceval.dev/ceval/record"
	cevalregistry "ceval.dev/ceval/registry"
)

// Labels ceval puts on containerd image records (never on image configs: they change no
// digest).
const (
	// SourceLabel says where an image came from: SourceBuilt, SourceImported or SourcePulled.
	SourceLabel = "dev.ceval.source"
	// ReferenceLabel is the registry reference a pulled image was pulled as.
	ReferenceLabel = "dev.ceval.reference"
	// LastUsedLabel is when a run last resolved the image (RFC 3339, UTC).
	LastUsedLabel = "dev.ceval.last-used"
	// PinnedLabelPrefix + an experiment's run ID marks an image an experiment pinned; its
	// value is the experiment's directory (images prune keeps the image while that
	// experiment has runs left).
	PinnedLabelPrefix = "dev.ceval.pinned."

	SourceBuilt    = "built"
	SourceImported = "imported"
	SourcePulled   = "pulled"
)

// PullPolicy says when a run asks a registry for an image.
type PullPolicy string

const (
	// PullMissing pulls an image only when containerd lacks it (the default).
	PullMissing PullPolicy = "missing"
	// PullAlways asks the registry what a tag names whenever an experiment pins it.
	PullAlways PullPolicy = "always"
	// PullNever never asks a registry: a missing image is an error.
	PullNever PullPolicy = "never"
)

// ParsePullPolicy checks a --pull value ("" is PullMissing).
func ParsePullPolicy(s string) (PullPolicy, error) {
	switch p := PullPolicy(s); p {
	case "":
		return PullMissing, nil
	case PullMissing, PullAlways, PullNever:
		return p, nil
	}
	return "", fmt.Errorf("pull policy %q: give missing, always or never", s)
}

// Pinnable reports whether runs pin image name to a digest: every image but ceval's own
// (ceval.local/..., named by what they are built from).
func Pinnable(name string) bool {
	return name != "" && !strings.HasPrefix(name, "ceval.local/")
}

// Pinner resolves the images runs name to digests, once per name, pulling them as its
// policy allows, and keeps each pinned digest under a name of its own (REPO@DIGEST) so
// that a tag moved later, here or in the registry, changes nothing a run uses. It is safe
// for concurrent use.
type Pinner struct {
	Policy   PullPolicy
	Registry cevalregistry.Options
	// Log hears the pulls' progress lines (nil: none).
	Log io.Writer
	// LeaseLabels go on the lease each pull holds (ceval gc removes a dead owner's).
	LeaseLabels map[string]string

	mu       sync.Mutex
	pins     map[string]record.ImagePin // by the name as a task writes it
	resolver remotes.Resolver
	// Pulls counts the pulls this Pinner made, Resolves its registry resolutions without a
	// pull (Remote) (for tests and the bench).
	Pulls, Resolves int
}

// NewPinner returns a Pinner with the given policy and registry files.
func NewPinner(policy PullPolicy, ro cevalregistry.Options) *Pinner {
	return &Pinner{Policy: policy, Registry: ro}
}

// Set installs pins made earlier (plan.json's, on a resume): those names are never asked
// of a registry again.
func (p *Pinner) Set(pins []record.ImagePin) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	for _, pin := range pins {
		p.pins[pin.Name] = pin
	}
}

// Pins lists the pins made so far, sorted by name.
func (p *Pinner) Pins() []record.ImagePin {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]record.ImagePin, 0, len(p.pins))
	for _, pin := range p.pins {
		out = append(out, pin)
	}
	sortPins(out)
	return out
}

func (p *Pinner) init() {
	if p.pins == nil {
		p.pins = map[string]record.ImagePin{}
	}
}

func (p *Pinner) getResolver(ctx context.Context) (remotes.Resolver, error) {
	if p.resolver == nil {
		r, err := p.Registry.Resolver(ctx)
		if err != nil {
			return nil, err
		}
		p.resolver = r
	}
	return p.resolver, nil
}

// Pin resolves name to a digest (see PullPolicy), keeps that digest under REPO@DIGEST in
// containerd and returns the pin; a name pinned before returns the same pin without asking
// anyone. A reference with @sha256: pins that digest, and what containerd holds under it is
// verified to be it.
func (p *Pinner) Pin(ctx context.Context, c *client.Client, name string) (record.ImagePin, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	if pin, ok := p.pins[name]; ok {
		return pin, nil
	}
	pin, err := p.pin(ctx, c, name)
	if err != nil {
		return record.ImagePin{}, err
	}
	p.pins[name] = pin
	return pin, nil
}

func (p *Pinner) pin(ctx context.Context, c *client.Client, name string) (record.ImagePin, error) {
	ref, err := cevalregistry.Normalize(name)
	if err != nil {
		return record.ImagePin{}, err
	}
	named, _ := reference.ParseNormalizedNamed(ref)
	if can, ok := named.(reference.Canonical); ok {
		pin := record.ImagePin{Name: name, Reference: ref, Digest: can.Digest()}
		if _, err := p.ensure(ctx, c, pin); err != nil {
			return record.ImagePin{}, err
		}
		return pin, nil
	}
	var rec images.Image
	if p.Policy != PullAlways {
		rec, err = getRecord(ctx, c, name)
	}
	if p.Policy == PullAlways || errors.As(err, new(*NotFoundError)) {
		if p.Policy == PullNever {
			return record.ImagePin{}, fmt.Errorf("%w; the pull policy is never: pull it with ceval images pull %s, or run with --pull missing", err, ref)
		}
		missing := err != nil
		if rec, err = p.pull(ctx, c, ref); err != nil && missing {
			err = fmt.Errorf("image %s is not in containerd (build it with ceval images build, or import it) and its pull failed: %w", name, err)
		}
	}
	if err != nil {
		return record.ImagePin{}, err
	}
	pin := record.ImagePin{Name: name, Reference: ref, Digest: rec.Target.Digest}
	if err := p.keep(ctx, c, pin, rec); err != nil {
		return record.ImagePin{}, err
	}
	return pin, nil
}

// Remote pins name to the digest its registry resolves it to, without pulling it here: for
// a cluster's nodes, which pull REPO@DIGEST themselves. A name pinned before returns the
// same pin; a reference with @sha256: pins that digest without asking (the node verifies
// what it pulls against it).
func (p *Pinner) Remote(ctx context.Context, name string) (record.ImagePin, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	if pin, ok := p.pins[name]; ok {
		return pin, nil
	}
	ref, err := cevalregistry.Normalize(name)
	if err != nil {
		return record.ImagePin{}, err
	}
	pin := record.ImagePin{Name: name, Reference: ref}
	named, _ := reference.ParseNormalizedNamed(ref)
	if can, ok := named.(reference.Canonical); ok {
		pin.Digest = can.Digest()
	} else {
		qctx := cevalregistry.Quiet(ctx)
		res, err := p.getResolver(qctx)
		if err != nil {
			return record.ImagePin{}, err
		}
		p.Resolves++
		_, desc, err := res.Resolve(qctx, ref)
		if err != nil {
			return record.ImagePin{}, p.Registry.Explain(ref, fmt.Errorf("resolve %s: %w", ref, err))
		}
		pin.Digest = desc.Digest
	}
	p.pins[name] = pin
	return pin, nil
}

// pull pulls ref (a tag or a digest) and returns its record.
func (p *Pinner) pull(ctx context.Context, c *client.Client, ref string) (images.Image, error) {
	qctx := cevalregistry.Quiet(ctx)
	res, err := p.getResolver(qctx)
	if err != nil {
		return images.Image{}, err
	}
	p.Pulls++
	r, _, err := pull(qctx, c, ref, PullOptions{Resolver: res, Log: p.Log, LeaseLabels: p.LeaseLabels})
	if err != nil {
		return images.Image{}, p.Registry.Explain(ref, err)
	}
	return r.record, nil
}

// PinnedName is the name a pin's digest is kept under in containerd: REPO@DIGEST.
func PinnedName(pin record.ImagePin) string {
	repo := pin.Reference
	if named, err := reference.ParseNormalizedNamed(pin.Reference); err == nil {
		repo = named.Name()
	}
	return repo + "@" + pin.Digest.String()
}

// keep makes sure REPO@DIGEST names rec's target, with rec's ceval labels.
func (p *Pinner) keep(ctx context.Context, c *client.Client, pin record.ImagePin, rec images.Image) error {
	name := PinnedName(pin)
	if rec.Name == name {
		return nil
	}
	is := c.ImageService()
	got, err := is.Get(ctx, name)
	if err == nil {
		if got.Target.Digest != pin.Digest {
			return fmt.Errorf("image %s in containerd names %s, not its digest: remove it (ctr images rm %s) and run again", name, got.Target.Digest, name)
		}
		return nil
	}
	if !errdefs.IsNotFound(err) {
		return fmt.Errorf("look up image %s: %w", name, err)
	}
	labels := map[string]string{}
	for _, k := range []string{SourceLabel, ReferenceLabel} {
		if v, ok := rec.Labels[k]; ok {
			labels[k] = v
		}
	}
	if _, err := is.Create(ctx, images.Image{Name: name, Target: rec.Target, Labels: labels}); err != nil && !errdefs.IsAlreadyExists(err) {
		return fmt.Errorf("keep image %s: %w", name, err)
	}
	return nil
}

// ensure returns the record REPO@DIGEST of a pin, pulling it by digest when containerd
// lacks it (unless the policy is never); its target is checked to be the pinned digest.
func (p *Pinner) ensure(ctx context.Context, c *client.Client, pin record.ImagePin) (images.Image, error) {
	name := PinnedName(pin)
	rec, err := c.ImageService().Get(ctx, name)
	if errdefs.IsNotFound(err) {
		if p.Policy == PullNever {
			return images.Image{}, fmt.Errorf("image %s (pinned as %s) is not in containerd and the pull policy is never: pull it with ceval images pull %s: %w", pin.Name, pin.Digest, name, errdefs.ErrNotFound)
		}
		rec, err = p.pull(ctx, c, name)
	}
	if err != nil {
		return images.Image{}, err
	}
	if rec.Target.Digest != pin.Digest {
		return images.Image{}, fmt.Errorf("image %s in containerd names %s, not its pinned digest %s; refused: remove it (ctr images rm %s) and run again", name, rec.Target.Digest, pin.Digest, name)
	}
	return rec, nil
}

// Local returns the name a run uses for image name: its pin's REPO@DIGEST, present in
// containerd (pulled by digest when it went missing since the pin was made), and the pin.
func (p *Pinner) Local(ctx context.Context, c *client.Client, name string) (string, record.ImagePin, error) {
	pin, err := p.Pin(ctx, c, name)
	if err != nil {
		return "", pin, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.ensure(ctx, c, pin); err != nil {
		return "", pin, err
	}
	return PinnedName(pin), pin, nil
}

// MarkPinned labels the digest record of each pin as pinned by experiment runID (whose
// directory is dir), or removes that label when dir is "".
func MarkPinned(ctx context.Context, c *client.Client, pins []record.ImagePin, runID, dir string) error {
	key := PinnedLabelPrefix + runID
	var errs []error
	for _, pin := range pins {
		rec, err := c.ImageService().Get(ctx, PinnedName(pin))
		if err != nil {
			if !errdefs.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		if rec.Labels == nil {
			rec.Labels = map[string]string{}
		}
		if dir == "" {
			delete(rec.Labels, key)
		} else {
			rec.Labels[key] = dir
		}
		if _, err := c.ImageService().Update(ctx, rec, "labels."+key); err != nil {
			errs = append(errs, fmt.Errorf("label image %s: %w", rec.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Touch records now as image name's last use (best effort: a failure only leaves the label
// older, which images prune errs on the side of keeping for a while).
func Touch(ctx context.Context, c *client.Client, name string) {
	rec := images.Image{Name: name, Labels: map[string]string{LastUsedLabel: time.Now().UTC().Format(time.RFC3339)}}
	_, _ = c.ImageService().Update(ctx, rec, "labels."+LastUsedLabel)
}

func sortPins(pins []record.ImagePin) {
	slices.SortFunc(pins, func(a, b record.ImagePin) int { return strings.Compare(a.Name, b.Name) })
}
