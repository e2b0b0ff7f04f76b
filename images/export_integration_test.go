package images

import (
	"bytes"
	"errors"
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
