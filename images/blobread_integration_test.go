package images

import (
	"testing"

	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/internal/ctrtest"
)

// A run's resolve reads the manifest and config in one round trip each (sizedContent): the
// blobs read are what the client's store reads; a record naming a blob containerd lacks is a
// not-found error as before; one whose size is wrong (larger, smaller) fails on the digest or
// the short read, never passes.
func TestSizedContentReadsWhatTheStoreHoldsAndNothingElse(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	ctx, _ = ctrtest.FreshNamespace(t, ctx, c)
	const name = "ceval.local/sized:test"
	img, err := BuildDefault(ctx, c, DefaultOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Lookup(ctx, c, name)
	if err != nil || got.ManifestDigest != img.ManifestDigest || got.ConfigDigest != img.ConfigDigest {
		t.Fatalf("lookup: %+v, %v; want %+v", got, err, img)
	}
	rec, err := c.ImageService().Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		target ocispec.Descriptor
		notFnd bool
	}{
		{"missing blob", ocispec.Descriptor{MediaType: rec.Target.MediaType, Digest: digest.FromString("no such manifest"), Size: 100}, true},
		{"size too large", ocispec.Descriptor{MediaType: rec.Target.MediaType, Digest: rec.Target.Digest, Size: rec.Target.Size + 10}, false},
		{"size too small", ocispec.Descriptor{MediaType: rec.Target.MediaType, Digest: rec.Target.Digest, Size: rec.Target.Size - 10}, false},
	} {
		bad := images.Image{Name: "ceval.local/sized-" + map[bool]string{true: "missing", false: "size"}[tc.notFnd] + ":" + map[string]string{"missing blob": "a", "size too large": "b", "size too small": "c"}[tc.name], Target: tc.target}
		if _, err := c.ImageService().Create(ctx, bad); err != nil {
			t.Fatal(err)
		}
		_, err := Lookup(ctx, c, bad.Name)
		if err == nil {
			t.Errorf("%s: lookup passed", tc.name)
			continue
		}
		if errdefs.IsNotFound(err) != tc.notFnd {
			t.Errorf("%s: %v (not found: %v, want %v)", tc.name, err, errdefs.IsNotFound(err), tc.notFnd)
		}
	}
}
