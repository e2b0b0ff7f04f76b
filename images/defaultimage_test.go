package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func needBusybox(t *testing.T) {
	t.Helper()
	if _, _, err := readStaticBusybox(DefaultBusybox); err != nil {
		t.Skipf("no static busybox: %v", err)
	}
}

// readLayout returns the files of an OCI layout tarball by name.
func readLayout(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
	}
}

func blobOf(t *testing.T, files map[string][]byte, d ocispec.Descriptor) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+d.Digest.Encoded()]
	if !ok {
		t.Fatalf("layout lacks blob %s", d.Digest)
	}
	return b
}

func TestDefaultLayoutIsReproducible(t *testing.T) {
	needBusybox(t)
	var a, b bytes.Buffer
	da, err := writeDefaultLayout(&a, DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := writeDefaultLayout(&b, DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if da.Digest != db.Digest || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two builds differ: %s vs %s", da.Digest, db.Digest)
	}
}

func TestDefaultLayoutHoldsAgentUserBusyboxAndLabel(t *testing.T) {
	needBusybox(t)
	var buf bytes.Buffer
	desc, err := writeDefaultLayout(&buf, DefaultOptions{Name: "example.test/x:1"})
	if err != nil {
		t.Fatal(err)
	}
	files := readLayout(t, buf.Bytes())
	var idx ocispec.Index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].Annotations["io.containerd.image.name"] != "example.test/x:1" || idx.Manifests[0].Digest != desc.Digest {
		t.Fatalf("index.json = %s", files["index.json"])
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(blobOf(t, files, desc), &m); err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(blobOf(t, files, m.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Labels[IsolationLabel] != IsolationLabelValue {
		t.Errorf("config labels = %v", cfg.Config.Labels)
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
	hdrs := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s has mtime %v", h.Name, h.ModTime)
		}
		hdrs[h.Name] = h
	}
	want := []struct {
		name     string
		typ      byte
		mode     int64
		uid, gid int
	}{
		{"bin/busybox", tar.TypeReg, 0o755, 0, 0},
		{"bin/sh", tar.TypeSymlink, 0o777, 0, 0},
		{"usr/bin/env", tar.TypeSymlink, 0o777, 0, 0},
		{"tmp/", tar.TypeDir, 0o1777, 0, 0},
		{"workspace/", tar.TypeDir, 0o755, 2000, 2000},
		{"home/agent/", tar.TypeDir, 0o755, 2000, 2000},
		{"etc/passwd", tar.TypeReg, 0o644, 0, 0},
		{"etc/group", tar.TypeReg, 0o644, 0, 0},
	}
	for _, w := range want {
		h := hdrs[w.name]
		if h == nil {
			t.Errorf("layer lacks %s", w.name)
			continue
		}
		if h.Typeflag != w.typ || h.Mode != w.mode || h.Uid != w.uid || h.Gid != w.gid {
			t.Errorf("%s: type %c mode %o owner %d:%d, want %c %o %d:%d", w.name, h.Typeflag, h.Mode, h.Uid, h.Gid, w.typ, w.mode, w.uid, w.gid)
		}
	}
	if cfg.RootFS.DiffIDs[0] != digestOf(layer) {
		t.Errorf("diff ID %s does not match the layer", cfg.RootFS.DiffIDs[0])
	}
	r := scanLayers(t, layer)
	if r.AgentUser != "agent" || r.AgentHomeOwner != "2000:2000" || len(r.Dangerous) != 0 {
		t.Errorf("scan of default layer: user %q home owner %q dangerous %v", r.AgentUser, r.AgentHomeOwner, r.Dangerous)
	}
}

func TestBuildDefaultRefusesDynamicBusybox(t *testing.T) {
	dyn := "/bin/ls" // Debian's ls needs ld-linux
	if _, err := os.Stat(dyn); err != nil {
		t.Skip("no /bin/ls")
	}
	_, _, err := readStaticBusybox(dyn)
	if err == nil || !strings.Contains(err.Error(), "apt-get install busybox-static") {
		t.Fatalf("err = %v, want one that says apt-get install busybox-static", err)
	}
}

func TestWithConfigLabelKeepsOtherFields(t *testing.T) {
	in := `{"architecture":"amd64","container_config":{"Hostname":"x"},"config":{"Env":["A=1"],"Labels":{"a":"b"}},"rootfs":{"type":"layers","diff_ids":["sha256:00"]}}`
	out, err := withConfigLabel([]byte(in), IsolationLabel, IsolationLabelValue)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	cfg := got["config"].(map[string]any)
	labels := cfg["Labels"].(map[string]any)
	if labels["a"] != "b" || labels[IsolationLabel] != IsolationLabelValue || cfg["Env"] == nil || got["container_config"] == nil || got["rootfs"] == nil {
		t.Errorf("labelled config lost fields: %s", out)
	}
}

func TestPreflightCacheRefusesDirWritableByOthers(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPreflightCache(dir); err == nil || !strings.Contains(err.Error(), "chmod go-w") {
		t.Fatalf("err = %v, want a refusal naming chmod go-w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPreflightCache(dir); err != nil {
		t.Fatal(err)
	}
}
