package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/policy"
)

// InitRepo is the repository of the init image a Kubernetes run's Pod installs ceval's own
// binaries from (package kube: the init container ceval-install).
const InitRepo = "ceval.dev/ceval-init"

// Paths in the init image. The binaries sit at the root, mode 0555, owned 0:0; the static
// busybox only copies them into the Pod's ceval volume, mounted at InitVolumePath.
const (
	InitBinaryPath = "/ceval-init"
	MockBinaryPath = "/ceval-mock"
	InitBusybox    = "/bin/busybox"
	InitVolumePath = "/ceval"
)

// InitName is the init image of this ceval: InitRepo tagged with the first 12 hex digits of
// sha256(sha256(ceval-init) || sha256(ceval-mock)) of the embedded binaries, so a new ceval
// never runs an old init under the same name.
func InitName() string {
	h := sha256.New()
	for _, b := range [][]byte{embedded.Init.Bytes(), embedded.Mock.Bytes()} {
		sum := sha256.Sum256(b)
		h.Write(sum[:])
	}
	return InitRepo + ":" + hex.EncodeToString(h.Sum(nil))[:12]
}

// InitOptions says how to build the init image. The zero value builds InitName() with
// DefaultBusybox.
type InitOptions struct {
	// Busybox is the path of a statically linked busybox on the host (the copy command).
	Busybox string
	// Name is the image name; "" is InitName().
	Name string
}

func (o InitOptions) withDefaults() InitOptions {
	if o.Busybox == "" {
		o.Busybox = DefaultBusybox
	}
	if o.Name == "" {
		o.Name = InitName()
	}
	return o
}

// WriteInit writes the init image as an OCI image layout tarball naming it
// (io.containerd.image.name) to w: one layer with InitBinaryPath and MockBinaryPath (the
// embedded binaries), the static busybox at InitBusybox and an empty InitVolumePath, every
// entry owned 0:0 with a fixed mtime. The same ceval and busybox always write the same bytes.
// It needs no containerd: the archive is what `ceval images import` reads or a registry tool
// pushes.
func WriteInit(w io.Writer, opts InitOptions) (ocispec.Descriptor, error) {
	opts = opts.withDefaults()
	bb, arch, err := readStaticBusybox(opts.Busybox)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layerTar, err := initRootfs(bb)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("init image %s: %w", opts.Name, err)
	}
	layer, diffID, err := gzipLayer(layerTar)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("init image %s: %w", opts.Name, err)
	}
	config := ocispec.Image{
		Platform: ocispec.Platform{OS: "linux", Architecture: arch},
		Config: ocispec.ImageConfig{
			User:       fmt.Sprintf("%d:%d", policy.AgentUID, policy.AgentGID),
			Entrypoint: []string{InitBusybox, "cp", InitBinaryPath, MockBinaryPath, InitVolumePath + "/"},
			WorkingDir: "/",
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
	}
	d, err := writeLayout(w, opts.Name, config, []blob{layer})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("init image %s: %w", opts.Name, err)
	}
	return d, nil
}

// BuildInit builds the init image (WriteInit) and imports it into ctx's namespace, replacing
// an image of the same name, and unpacks it. For a Kubernetes node's containerd use its
// socket and namespace k8s.io, and run Pods with imagePullPolicy Never.
func BuildInit(ctx context.Context, c *client.Client, opts InitOptions) (Image, error) {
	opts = opts.withDefaults()
	var buf bytes.Buffer
	if _, err := WriteInit(&buf, opts); err != nil {
		return Image{}, err
	}
	imgs, err := importArchive(ctx, c, bytes.NewReader(buf.Bytes()))
	if errdefs.IsAlreadyExists(err) {
		// Another process created the record between our update and create: import again.
		imgs, err = importArchive(ctx, c, bytes.NewReader(buf.Bytes()))
	}
	if err != nil {
		return Image{}, fmt.Errorf("import init image %s: %w", opts.Name, err)
	}
	if len(imgs) != 1 {
		return Image{}, fmt.Errorf("import init image %s: got %d images, want 1", opts.Name, len(imgs))
	}
	return imgs[0], nil
}

// initRootfs is the init image's single layer, uncompressed.
func initRootfs(busybox []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		name string
		mode int64
		data []byte
	}{
		// sorted by name; directories end in /
		{"bin/", 0o755, nil},
		{"bin/busybox", 0o555, busybox},
		{"ceval-init", 0o555, embedded.Init.Bytes()},
		{"ceval-mock", 0o555, embedded.Mock.Bytes()},
		{"ceval/", 0o755, nil},
		{"dev/", 0o755, nil},
		{"etc/", 0o755, nil},
		{"proc/", 0o755, nil},
		{"sys/", 0o755, nil},
	}
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Format: tar.FormatPAX}
		if e.data == nil {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
