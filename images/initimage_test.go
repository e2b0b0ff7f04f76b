package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"regexp"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/internal/embedded"
)

func TestInitLayoutIsReproducibleAndNamedByTheBinaries(t *testing.T) {
	needBusybox(t)
	if !regexp.MustCompile(`^ceval\.dev/ceval-init:[0-9a-f]{12}$`).MatchString(InitName()) {
		t.Fatalf("InitName() = %q", InitName())
	}
	var a, b bytes.Buffer
	da, err := WriteInit(&a, InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := WriteInit(&b, InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if da.Digest != db.Digest || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two builds differ: %s vs %s", da.Digest, db.Digest)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(readLayout(t, a.Bytes())["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].Annotations["io.containerd.image.name"] != InitName() {
		t.Errorf("index names %v, want %s", idx.Manifests, InitName())
	}
}

// The init container runs as the agent's UID: it must find the binaries executable, and no
// file of the image may raise a privilege.
func TestInitLayerHoldsTheEmbeddedBinariesRootOwnedAndNotWritable(t *testing.T) {
	needBusybox(t)
	var buf bytes.Buffer
	desc, err := WriteInit(&buf, InitOptions{Name: "example.test/init:1"})
	if err != nil {
		t.Fatal(err)
	}
	files := readLayout(t, buf.Bytes())
	var m ocispec.Manifest
	if err := json.Unmarshal(blobOf(t, files, desc), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 1 {
		t.Fatalf("layers = %d, want 1", len(m.Layers))
	}
	zr, err := gzip.NewReader(bytes.NewReader(blobOf(t, files, m.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: owner %d:%d mtime %v, want 0:0 at %v", h.Name, h.Uid, h.Gid, h.ModTime, epoch)
		}
		if h.Typeflag == tar.TypeReg {
			if h.Mode != 0o555 {
				t.Errorf("%s: mode %o, want 0555", h.Name, h.Mode)
			}
			contents[h.Name], _ = io.ReadAll(tr)
		}
	}
	for name, want := range map[string][]byte{"ceval-init": embedded.Init.Bytes(), "ceval-mock": embedded.Mock.Bytes()} {
		if !bytes.Equal(contents[name], want) {
			t.Errorf("%s: %d bytes, not the embedded binary (%d bytes)", name, len(contents[name]), len(want))
		}
	}
	if len(contents["bin/busybox"]) == 0 {
		t.Error("layer lacks bin/busybox")
	}
	if r := scanLayers(t, layer); len(r.Dangerous) != 0 {
		t.Errorf("privilege-raising files in the init layer: %v", r.Dangerous)
	}
}
