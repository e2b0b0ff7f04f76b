package images

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/ctrtest"
)

func TestExportThenImportGivesBackTheSameImage(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	needBusybox(t)
	name := testImageName(t)
	deleteImageAtEnd(t, ctx, c, name)
	built, err := BuildDefault(ctx, c, DefaultOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	exported, err := Export(ctx, c, name, &archive)
	if err != nil {
		t.Fatal(err)
	}
	if exported != built {
		t.Errorf("Export returned %+v, want %+v", exported, built)
	}
	if err := c.ImageService().Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	imgs, err := Import(ctx, c, &archive)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 1 || imgs[0].Name != built.Name || imgs[0].ManifestDigest != built.ManifestDigest || imgs[0].ConfigDigest != built.ConfigDigest {
		t.Fatalf("imported %+v, want %+v", imgs, built)
	}
	assertUnpacked(t, ctx, c, name)
}

func TestExportOfMissingImageSaysItIsMissing(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	var nf *NotFoundError
	if _, err := Export(ctx, c, "ceval.test/no-such-image:1", &bytes.Buffer{}); !errors.As(err, &nf) {
		t.Fatalf("Export of a missing image: %v, want a *NotFoundError", err)
	}
}

// A task may name an image as Docker users write it (ubuntu:24.04); ceval tags what it
// builds with the normalised name (docker.io/library/ubuntu:24.04): Lookup finds either.
func TestLookupFindsAShortNameUnderItsNormalisedName(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	needBusybox(t)
	short := "cevaltest-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + ":1"
	full, err := NormalizeName(short)
	if err != nil || !strings.HasPrefix(full, "docker.io/library/") {
		t.Fatalf("NormalizeName(%q) = %q, %v", short, full, err)
	}
	deleteImageAtEnd(t, ctx, c, full)
	built, err := BuildDefault(ctx, c, DefaultOptions{Name: full})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Lookup(ctx, c, short)
	if err != nil {
		t.Fatalf("Lookup(%q) of an image tagged %q: %v", short, full, err)
	}
	if got.ManifestDigest != built.ManifestDigest {
		t.Errorf("Lookup(%q) = %+v, want %+v", short, got, built)
	}
}
