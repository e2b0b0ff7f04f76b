package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"ceval.dev/ceval/record"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

const (
	// DefaultName is the image build-default makes and EnsureDefault returns.
	DefaultName = "ceval.local/default:latest"
	// IsolationLabel marks an image config as checked for running as UID/GID 2000 with no
	// privileges; a run refuses an image without it.
	IsolationLabel = "dev.ceval.agent-isolation"
	// IsolationLabelValue is the only value of IsolationLabel this version accepts.
	IsolationLabelValue = "uid-gid-v1"
	// Snapshotter is the snapshotter images are unpacked for.
	Snapshotter = "overlayfs"
)

// Image is the run record's image: see record.Image.
type Image = record.Image

// NotFoundError says an image is missing from a containerd namespace. It unwraps to
// errdefs.ErrNotFound.
type NotFoundError struct {
	Name      string
	Namespace string
}

func (e *NotFoundError) Error() string {
	if e.Name == AgentName {
		return fmt.Sprintf("image %s not found in containerd namespace %s; build it with: ceval images build-agent (add --namespace %s if that is not your default)", e.Name, e.Namespace, e.Namespace)
	}
	return fmt.Sprintf("image %s not found in containerd namespace %s; build it with ceval images build-default or import it with ceval images import FILE", e.Name, e.Namespace)
}

func (e *NotFoundError) Unwrap() error { return errdefs.ErrNotFound }

// Lookup resolves name in ctx's namespace to its manifest and config for this platform.
func Lookup(ctx context.Context, c *client.Client, name string) (Image, error) {
	rec, err := getRecord(ctx, c, name)
	if err != nil {
		return Image{}, err
	}
	r, err := resolve(ctx, sizedContent(c), rec)
	if err != nil {
		return Image{}, err
	}
	return r.image, nil
}

// getRecord finds name as written, or else as Docker normalises it (ubuntu:24.04 is
// docker.io/library/ubuntu:24.04, the name ceval images build and pull tag).
func getRecord(ctx context.Context, c *client.Client, name string) (images.Image, error) {
	rec, err := c.ImageService().Get(ctx, name)
	if errdefs.IsNotFound(err) {
		if full, nerr := NormalizeName(name); nerr == nil && full != name {
			if r, ferr := c.ImageService().Get(ctx, full); ferr == nil {
				return r, nil
			}
		}
	}
	if errdefs.IsNotFound(err) {
		ns, _ := namespaces.Namespace(ctx)
		return images.Image{}, &NotFoundError{Name: name, Namespace: ns}
	}
	if err != nil {
		return images.Image{}, fmt.Errorf("look up image %s: %w", name, err)
	}
	return rec, nil
}

// resolved is an image record with its platform manifest and config read.
type resolved struct {
	image        Image
	record       images.Image
	manifestDesc ocispec.Descriptor
	manifest     ocispec.Manifest
	configDesc   ocispec.Descriptor
	config       ocispec.Image
}

// resolve picks the manifest for this platform (descending one index level at most twice)
// and reads it and its config.
func resolve(ctx context.Context, cs content.Provider, rec images.Image) (*resolved, error) {
	return resolveFor(ctx, cs, rec, platforms.Default(), platforms.DefaultString())
}

// resolveFor is resolve for the platforms match accepts (named want in errors).
func resolveFor(ctx context.Context, cs content.Provider, rec images.Image, match platforms.MatchComparer, want string) (*resolved, error) {
	desc := rec.Target
	for depth := 0; images.IsIndexType(desc.MediaType); depth++ {
		if depth == 2 {
			return nil, fmt.Errorf("image %s: index nested too deeply", rec.Name)
		}
		var idx ocispec.Index
		if err := readJSON(ctx, cs, desc, &idx); err != nil {
			return nil, fmt.Errorf("image %s: read index: %w", rec.Name, err)
		}
		var pick *ocispec.Descriptor
		for i, m := range idx.Manifests {
			if m.Platform != nil && !match.Match(*m.Platform) {
				continue
			}
			if _, ok := m.Annotations[images.AnnotationManifestSubject]; ok {
				continue
			}
			if pick == nil || (m.Platform != nil && (pick.Platform == nil || match.Less(*m.Platform, *pick.Platform))) {
				pick = &idx.Manifests[i]
			}
		}
		if pick == nil {
			return nil, fmt.Errorf("image %s has no manifest for platform %s", rec.Name, want)
		}
		desc = *pick
	}
	if !images.IsManifestType(desc.MediaType) {
		return nil, fmt.Errorf("image %s: unexpected media type %q for %s", rec.Name, desc.MediaType, desc.Digest)
	}
	r := &resolved{record: rec, manifestDesc: desc}
	if err := readJSON(ctx, cs, desc, &r.manifest); err != nil {
		return nil, fmt.Errorf("image %s: read manifest: %w", rec.Name, err)
	}
	r.configDesc = r.manifest.Config
	if err := readJSON(ctx, cs, r.configDesc, &r.config); err != nil {
		return nil, fmt.Errorf("image %s: read config: %w", rec.Name, err)
	}
	r.image = newImage(rec.Name, desc.Digest, r.configDesc.Digest, r.config.Config.Labels)
	r.remember()
	r.image.Source = rec.Labels[SourceLabel]
	if v := rec.Labels[LastUsedLabel]; v != "" {
		lastUsed.Store(rec.Name, v)
	}
	return r, nil
}

// newImage is the record of image name from its manifest and config digests and its config
// labels (the agent CLIs it holds).
func newImage(name string, manifest, config digest.Digest, labels map[string]string) Image {
	img := Image{Name: name, ManifestDigest: manifest, ConfigDigest: config}
	var clis []string
	for k, v := range labels {
		if typ, ok := strings.CutPrefix(k, AgentVersionLabelPrefix); ok && typ != "" {
			clis = append(clis, typ+"@"+v)
		}
	}
	slices.Sort(clis)
	img.AgentCLIs = strings.Join(clis, " ")
	return img
}

// maxJSONBlob bounds manifests, indexes and configs read into memory.
const maxJSONBlob = 8 << 20

func readJSON(ctx context.Context, cs content.Provider, desc ocispec.Descriptor, v any) error {
	if desc.Size > maxJSONBlob {
		return fmt.Errorf("blob %s is %d bytes, more than %d", desc.Digest, desc.Size, maxJSONBlob)
	}
	b, err := content.ReadBlob(ctx, cs, desc)
	if err != nil {
		return err
	}
	if digest.FromBytes(b) != desc.Digest {
		return errors.New("blob " + desc.Digest.String() + " does not match its digest")
	}
	return json.Unmarshal(b, v)
}

// layers returns the manifest's filesystem layers, the ones that make up the rootfs.
func (r *resolved) layers() []ocispec.Descriptor {
	var out []ocispec.Descriptor
	for _, l := range r.manifest.Layers {
		if images.IsLayerType(l.MediaType) {
			out = append(out, l)
		}
	}
	return out
}

// RunConfig returns the run configuration of image name's config for this platform (its
// Env, Entrypoint, Cmd, WorkingDir, User), read from the content store and checked against
// its digest, as Lookup reads it.
func RunConfig(ctx context.Context, c *client.Client, name string) (ocispec.ImageConfig, error) {
	rec, err := getRecord(ctx, c, name)
	if err != nil {
		return ocispec.ImageConfig{}, err
	}
	r, err := resolve(ctx, c.ContentStore(), rec)
	if err != nil {
		return ocispec.ImageConfig{}, err
	}
	return r.config.Config, nil
}
