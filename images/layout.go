package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"sort"
	"time"

	"github.com/containerd/containerd/v2/core/images"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// epoch is the mtime of every entry ceval writes, so the same input gives the same bytes.
var epoch = time.Unix(0, 0).UTC()

// blob is one content-addressed file of an OCI layout.
type blob struct {
	desc ocispec.Descriptor
	data []byte
}

func newBlob(mediaType string, data []byte) blob {
	return blob{desc: ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}, data: data}
}

func jsonBlob(mediaType string, v any) (blob, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return blob{}, err
	}
	return newBlob(mediaType, b), nil
}

// gzipLayer compresses an uncompressed layer tar with a fixed gzip header (no name, no
// mtime) and returns the compressed blob and the layer's diff ID.
func gzipLayer(tarball []byte) (blob, digest.Digest, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return blob{}, "", err
	}
	zw.ModTime = time.Time{}
	zw.OS = 255
	if _, err := zw.Write(tarball); err != nil {
		return blob{}, "", err
	}
	if err := zw.Close(); err != nil {
		return blob{}, "", err
	}
	return newBlob(ocispec.MediaTypeImageLayerGzip, buf.Bytes()), digest.FromBytes(tarball), nil
}

// writeLayout writes an OCI image layout tarball holding one image: its config, its
// (already compressed) layers and a manifest, named name through the
// io.containerd.image.name annotation on the index's manifest descriptor. It returns the
// manifest's descriptor. Entries are sorted and carry fixed metadata.
func writeLayout(w io.Writer, name string, config ocispec.Image, layers []blob) (ocispec.Descriptor, error) {
	cfg, err := jsonBlob(ocispec.MediaTypeImageConfig, config)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	m := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfg.desc,
	}
	for _, l := range layers {
		m.Layers = append(m.Layers, l.desc)
	}
	man, err := jsonBlob(ocispec.MediaTypeImageManifest, m)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	named := man.desc
	named.Annotations = map[string]string{images.AnnotationImageName: name}
	named.Platform = &ocispec.Platform{OS: config.OS, Architecture: config.Architecture, Variant: config.Variant}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{named},
	})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return ocispec.Descriptor{}, err
	}

	files := map[string][]byte{
		ocispec.ImageIndexFile:  index,
		ocispec.ImageLayoutFile: layout,
	}
	for _, b := range append([]blob{cfg, man}, layers...) {
		files["blobs/"+b.desc.Digest.Algorithm().String()+"/"+b.desc.Digest.Encoded()] = b.data
	}
	tw := tar.NewWriter(w)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return ocispec.Descriptor{}, err
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := writeFile(tw, n, files[n], 0o644); err != nil {
			return ocispec.Descriptor{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return ocispec.Descriptor{}, err
	}
	return man.desc, nil
}

func writeFile(tw *tar.Writer, name string, data []byte, mode int64) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}
