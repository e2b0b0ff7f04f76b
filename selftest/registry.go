package selftest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// registryPlaceholder in an attack's task.yaml becomes the host of hostileRegistry: a task
// author's registry, on loopback, that redirects its image's layer to a service on this
// host (the "internal" server): what a registry must never make ceval reach.
const registryPlaceholder = "{{REGISTRY}}"

type hostile struct {
	host     string
	internal atomic.Int64 // requests the internal service got
}

var (
	hostileOnce sync.Once
	hostileReg  *hostile
)

// hostileRegistry starts (once per process) the hostile registry and its internal service.
func hostileRegistry() *hostile {
	hostileOnce.Do(func() {
		h := &hostile{}
		var layer bytes.Buffer
		tw := tar.NewWriter(&layer)
		// A layer of this process's own: content containerd holds already (shared between
		// its namespaces) would be taken without a fetch, and so without the redirect.
		body := []byte("served by a service on the host " + NewCanary()[len(canaryPrefix):] + "\n")
		tw.WriteHeader(&tar.Header{Name: "internal.txt", Mode: 0o644, Size: int64(len(body))})
		tw.Write(body)
		tw.Close()
		lb := layer.Bytes()
		internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.internal.Add(1)
			w.Write(lb)
		}))
		cfg, _ := json.Marshal(ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH},
			RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromBytes(lb)}}})
		man := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
			Config: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))},
			Layers: []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(lb), Size: int64(len(lb))}}}
		man.SchemaVersion = 2
		mb, _ := json.Marshal(man)
		reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := r.URL.Path
			switch {
			case p == "/v2/" || p == "/v2":
			case strings.Contains(p, "/manifests/"):
				w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
				w.Header().Set("Docker-Content-Digest", digest.FromBytes(mb).String())
				w.Header().Set("Content-Length", fmt.Sprint(len(mb)))
				if r.Method != http.MethodHead {
					w.Write(mb)
				}
			case strings.HasSuffix(p, digest.FromBytes(cfg).String()):
				w.Header().Set("Content-Length", fmt.Sprint(len(cfg)))
				w.Write(cfg)
			case strings.HasSuffix(p, digest.FromBytes(lb).String()):
				http.Redirect(w, r, internal.URL+"/admin/export", http.StatusTemporaryRedirect)
			default:
				http.NotFound(w, r)
			}
		}))
		h.host = strings.TrimPrefix(reg.URL, "http://")
		hostileReg = h
	})
	return hostileReg
}

// reached says whether the service on the host was ever asked anything ("" when not): the
// registry attack's breach whatever became of its run.
func (h *hostile) reached() string {
	if n := h.internal.Load(); n > 0 {
		return fmt.Sprintf("the registry's redirect reached a service on this host (%d requests)", n)
	}
	return ""
}
