package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/launcher"
)

// slowRegistry serves one image over plain HTTP on loopback; its layer trickles, and
// started is closed once a first part of it was sent.
type slowRegistry struct {
	manifest, config, layer []byte
	started                 chan struct{}
	once                    sync.Once
}

func newSlowRegistry(t *testing.T) *slowRegistry {
	t.Helper()
	big := make([]byte, 8<<20)
	rand.Read(big)
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "big", Mode: 0o644, Size: int64(len(big))})
	tw.Write(big)
	tw.Close()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(tb.Bytes())
	zw.Close()
	cfg := ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}, RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromBytes(tb.Bytes())}}}
	cb, _ := json.Marshal(cfg)
	man := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cb), Size: int64(len(cb))},
		Layers: []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(gz.Bytes()), Size: int64(gz.Len())}}}
	man.SchemaVersion = 2
	mb, _ := json.Marshal(man)
	return &slowRegistry{manifest: mb, config: cb, layer: gz.Bytes(), started: make(chan struct{})}
}

func (s *slowRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	var body []byte
	switch {
	case p == "/v2/" || p == "/v2":
		return
	case strings.Contains(p, "/manifests/"):
		w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
		w.Header().Set("Docker-Content-Digest", digest.FromBytes(s.manifest).String())
		body = s.manifest
	case strings.HasSuffix(p, digest.FromBytes(s.config).String()):
		body = s.config
	case strings.HasSuffix(p, digest.FromBytes(s.layer).String()):
		w.Header().Set("Content-Length", fmt.Sprint(len(s.layer)))
		if r.Method == http.MethodHead {
			return
		}
		for off := 0; off < len(s.layer); off += 64 << 10 {
			if _, err := w.Write(s.layer[off:min(off+64<<10, len(s.layer))]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if off >= 1<<20 {
				s.once.Do(func() { close(s.started) })
			}
			time.Sleep(50 * time.Millisecond)
		}
		return
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// A pull killed with SIGKILL half way through its layer leaves a lease and a partial
// download; ceval gc removes both, and nothing of the image (record, content, ingest) or
// in ceval's TMPDIR is left.
func TestPullKilledMidwayLeavesNothingAfterGC(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	reg := newSlowRegistry(t)
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/t/slow:v1"
	tmp := t.TempDir()
	cmd := exec.Command(cevalBin, "images", "pull", ref, "--namespace", ctrtest.Namespace, "--hosts-dir", t.TempDir(),
		"--docker-config", filepath.Join(t.TempDir(), "none.json"))
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reg.started:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the pull never reached its layer:\n%s", out.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	pullLeases := func() []string {
		ls, err := c.LeasesService().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range ls {
			if _, ok := l.Labels[launcher.LeasePullLabel]; ok {
				ids = append(ids, l.ID)
			}
		}
		return ids
	}
	st, _ := c.ContentStore().ListStatuses(ctx)
	if len(pullLeases()) != 1 || len(st) == 0 {
		t.Fatalf("after the kill: pull leases %v, ingests %d; want the killed pull's lease and its partial layer", pullLeases(), len(st))
	}
	r := ceval(t, "gc", "--namespace", ctrtest.Namespace)
	if r.code != 0 || !strings.Contains(r.stdout, "removed lease") {
		t.Fatalf("ceval gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if ids := pullLeases(); len(ids) != 0 {
		t.Errorf("pull leases left after gc: %v", ids)
	}
	if st, _ := c.ContentStore().ListStatuses(ctx); len(st) != 0 {
		t.Errorf("content ingests left after gc: %+v", st)
	}
	if _, err := c.ImageService().Get(ctx, ref); !errdefs.IsNotFound(err) {
		t.Errorf("image record %s left (get: %v)", ref, err)
	}
	for _, b := range [][]byte{reg.manifest, reg.config, reg.layer} {
		if _, err := c.ContentStore().Info(ctx, digest.FromBytes(b)); !errdefs.IsNotFound(err) {
			t.Errorf("content %s left after gc (info: %v)", digest.FromBytes(b), err)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("ceval's TMPDIR holds %d entries after the kill", len(ents))
	}
}
