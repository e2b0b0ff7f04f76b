// Package regtest holds what the integration tests of several packages share about the test
// registry scripts/registry.sh starts: its options (CA, credentials) and images derived from a
// base as a registry would serve them. Test code only.
package regtest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/registry"
)

// Registry returns the options for the registry scripts/registry.sh started (its CA in
// a hosts directory, its credentials in a Docker config file) and its host; it skips, or
// fails under CI=true, when none runs.
func Registry(t *testing.T) (registry.Options, string) {
	t.Helper()
	reg := os.Getenv("CEVAL_TEST_REGISTRY")
	if reg == "" {
		msg := "CEVAL_TEST_REGISTRY unset: start one with scripts/registry.sh start DIR and export its env"
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and a registry is required: " + msg)
		}
		t.Skip(msg)
	}
	hosts := t.TempDir()
	if err := os.MkdirAll(filepath.Join(hosts, reg), 0o755); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(os.Getenv("CEVAL_TEST_REGISTRY_CA"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hosts, reg, "ca.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(os.Getenv("CEVAL_TEST_REGISTRY_USER") + ":" + os.Getenv("CEVAL_TEST_REGISTRY_PASSWORD")))
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg, auth)), 0o600); err != nil {
		t.Fatal(err)
	}
	return registry.Options{HostsDir: hosts, DockerConfig: cfg}, reg
}

// DeriveImage makes image name from base plus one layer holding /marker (its text), with no
// isolation label in its config (as an image from a registry has none), and returns it.
func DeriveImage(t *testing.T, ctx context.Context, c *client.Client, base, name, marker string) images.Image {
	t.Helper()
	return DeriveImageWithFile(t, ctx, c, base, name, "marker", 0o644, []byte(marker), "marker "+marker)
}

// DeriveImageWithFile is DeriveImage with one layer holding the file at path (relative to
// the root; mode, data) instead of the marker, and history line createdBy.
func DeriveImageWithFile(t *testing.T, ctx context.Context, c *client.Client, base, name, path string, mode int64, data []byte, createdBy string) images.Image {
	t.Helper()
	cs := c.ContentStore()
	lctx, done, err := c.WithLease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer done(context.WithoutCancel(ctx))
	rec, err := c.ImageService().Get(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	var man ocispec.Manifest
	mb, err := content.ReadBlob(ctx, cs, rec.Target)
	if err == nil {
		err = json.Unmarshal(mb, &man)
	}
	if err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	cb, err := content.ReadBlob(ctx, cs, man.Config)
	if err == nil {
		err = json.Unmarshal(cb, &cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	tw.WriteHeader(&tar.Header{Name: path, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0)})
	tw.Write(data)
	tw.Close()
	put := func(mt string, b []byte, labels map[string]string) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := content.WriteBlob(lctx, cs, "derive-"+d.Digest.Encoded(), bytes.NewReader(b), d, content.WithLabels(labels)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	ld := put(ocispec.MediaTypeImageLayer, layer.Bytes(), nil)
	cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, ld.Digest)
	if len(cfg.History) > 0 {
		cfg.History = append(cfg.History, ocispec.History{CreatedBy: createdBy})
	}
	delete(cfg.Config.Labels, images.IsolationLabel)
	nb, _ := json.Marshal(cfg)
	cd := put(ocispec.MediaTypeImageConfig, nb, nil)
	man.MediaType, man.Config, man.Layers = ocispec.MediaTypeImageManifest, cd, append(man.Layers, ld)
	nm, _ := json.Marshal(man)
	labels := map[string]string{"containerd.io/gc.ref.content.config": cd.Digest.String()}
	for i, l := range man.Layers {
		labels[fmt.Sprintf("containerd.io/gc.ref.content.l.%d", i)] = l.Digest.String()
	}
	md := put(ocispec.MediaTypeImageManifest, nm, labels)
	ctrtest.RemoveImage(ctx, c, name)
	if _, err := c.ImageService().Create(ctx, ctrimages.Image{Name: name, Target: md}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(context.WithoutCancel(ctx), c, name) })
	img, err := images.Lookup(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
