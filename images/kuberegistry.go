package images

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/distribution/reference"
	digest "github.com/opencontainers/go-digest"

	cevalregistry "ceval.dev/ceval/registry"
)

// LocalPrefix starts the names of the images ceval builds itself (default, agent, package,
// init and import images): they exist in a containerd, in no registry.
const LocalPrefix = "ceval.local/"

// NodeRegistry maps ceval's own images (Own: ceval.local/..., the init image) to the registry a cluster's nodes
// pull from (ceval's config: kubernetes.registry and kubernetes.images, never a task's).
// ceval images push --kubernetes pushes each image a run needs under its mapped reference;
// a run resolves that reference at the registry, pins the digest and names REPO@DIGEST in
// its Pod.
type NodeRegistry struct {
	// Prefix is a repository prefix (HOST[:PORT]/PATH): ceval.local/NAME:TAG maps to
	// Prefix/NAME:TAG. "" maps only what Images names.
	Prefix string
	// Images maps single ceval.local names to references of their own (before Prefix).
	Images map[string]string
}

// Empty reports whether r maps nothing.
func (r NodeRegistry) Empty() bool { return r.Prefix == "" && len(r.Images) == 0 }

// Own reports whether name is one of ceval's own images, which live in a containerd and in
// no registry: ceval.local/PATH:TAG (default, agent, package, import images) or the init
// image (InitRepo:TAG); rest is the PATH:TAG it keeps under a registry prefix.
func Own(name string) (rest string, ok bool) {
	if r, ok := strings.CutPrefix(name, LocalPrefix); ok {
		return r, r != ""
	}
	if r, ok := strings.CutPrefix(name, InitRepo+":"); ok {
		return path.Base(InitRepo) + ":" + r, r != ""
	}
	return "", false
}

// Ref is the registry reference name maps to, and whether it is mapped: only ceval's own
// images are (Own; any other name is a registry's already).
func (r NodeRegistry) Ref(name string) (string, bool) {
	rest, own := Own(name)
	if !own {
		return "", false
	}
	if ref, ok := r.Images[name]; ok {
		n, err := cevalregistry.Normalize(ref)
		return n, err == nil
	}
	if r.Prefix == "" {
		return "", false
	}
	n, err := cevalregistry.Normalize(strings.TrimSuffix(r.Prefix, "/") + "/" + rest)
	return n, err == nil
}

// Check says what is wrong with the mapping, naming the config keys.
func (r NodeRegistry) Check() error {
	var bad []string
	if r.Prefix != "" {
		n, err := reference.ParseNormalizedNamed(r.Prefix)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("kubernetes.registry %q: %v; write HOST[:PORT]/PATH (a repository prefix, no tag)", r.Prefix, err))
		case !reference.IsNameOnly(n):
			bad = append(bad, fmt.Sprintf("kubernetes.registry %q: a repository prefix takes no tag or digest; write HOST[:PORT]/PATH", r.Prefix))
		case reference.Domain(n) == "docker.io" && !strings.HasPrefix(r.Prefix, "docker.io/"):
			bad = append(bad, fmt.Sprintf("kubernetes.registry %q names no registry host; write HOST[:PORT]/PATH (docker.io/USER for Docker Hub)", r.Prefix))
		}
	}
	keys := make([]string, 0, len(r.Images))
	for k := range r.Images {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, own := Own(k); !own {
			bad = append(bad, fmt.Sprintf("kubernetes.images: %q is not one of ceval's images (%s... or %s:...); a registry image needs no mapping", k, LocalPrefix, InitRepo))
			continue
		}
		if _, err := cevalregistry.Normalize(r.Images[k]); err != nil {
			bad = append(bad, fmt.Sprintf("kubernetes.images[%s]: %v", k, err))
		} else if _, own := Own(r.Images[k]); own {
			bad = append(bad, fmt.Sprintf("kubernetes.images[%s]: %q is not a registry reference", k, r.Images[k]))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

// Pushed is one image NodePush sent: its local name, the reference it went to and the
// manifest digest the registry now holds under that reference.
type Pushed struct {
	Name      string
	Reference string
	Digest    digest.Digest
}

// ByDigest is the reference the nodes pull: REPO@DIGEST.
func (p Pushed) ByDigest() string {
	repo := p.Reference
	if n, err := reference.ParseNormalizedNamed(p.Reference); err == nil {
		repo = n.Name()
	}
	return repo + "@" + p.Digest.String()
}

// NodePush pushes each of names (ceval's own images in c's namespace, in that order,
// duplicates once) to the reference r maps it to, through containerd's pusher (the
// manifest goes last, so a reference names nothing until its image's every blob is in the
// registry), then checks that the registry resolves the reference to the pushed digest. It
// stops at the first failure, returning what was pushed before it. Each image gets a
// resolver of its own from newResolver: containerd's pusher remembers a blob it pushed by
// its digest alone, not by repository, so a layer two images share (pushed to different
// repositories) was skipped for the second, whose manifest the registry then refused
// ("blob unknown to registry").
func NodePush(ctx context.Context, c *client.Client, r NodeRegistry, names []string, newResolver func() (remotes.Resolver, error), log io.Writer) ([]Pushed, error) {
	var out []Pushed
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		ref, ok := r.Ref(name)
		if !ok {
			return out, fmt.Errorf("image %s: no registry reference for it: set kubernetes.registry (a repository prefix the nodes pull from) or kubernetes.images[%s] in ceval's config", name, name)
		}
		resolver, err := newResolver()
		if err != nil {
			return out, err
		}
		img, err := Push(ctx, c, name, ref, resolver, log)
		if err != nil {
			return out, err
		}
		_, desc, err := resolver.Resolve(ctx, ref)
		if err != nil {
			return out, fmt.Errorf("pushed %s to %s, but the registry does not resolve it: %w", name, ref, err)
		}
		if desc.Digest != img.ManifestDigest {
			return out, fmt.Errorf("pushed %s (manifest %s) to %s, but the registry resolves it to %s: another push to the same reference? push again", name, img.ManifestDigest, ref, desc.Digest)
		}
		out = append(out, Pushed{Name: name, Reference: ref, Digest: desc.Digest})
	}
	return out, nil
}
