package images

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/internal/ctrtest"
	cevalregistry "ceval.dev/ceval/registry"
)

// fakeRegistry is a plain-HTTP loopback registry serving fixed manifests and blobs, for
// what a real registry will not serve: oversized manifests, blobs that lie about their digest.
type fakeRegistry struct {
	requests  atomic.Int64
	manifests map[string][]byte // tag or digest -> manifest
	blobs     map[digest.Digest][]byte
	claim     map[string]digest.Digest // Docker-Content-Digest to send instead of the true one
	redirect  map[digest.Digest]string // blob -> URL it is redirected to
	endless   map[digest.Digest]bool   // blob sent, then zeros without end
	// endlessManifests are served with neither length nor digest, and never end.
	endlessManifests map[string]bool
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	p := r.URL.Path
	switch {
	case p == "/v2/" || p == "/v2":
		w.WriteHeader(http.StatusOK)
	case strings.Contains(p, "/manifests/"):
		ref := p[strings.LastIndex(p, "/")+1:]
		if f.endlessManifests[ref] {
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusOK)
				return
			}
			endless(w, r, []byte(`{"schemaVersion":2,"annotations":{"x":"`))
			return
		}
		m, ok := f.manifests[ref]
		if !ok {
			http.NotFound(w, r)
			return
		}
		var mt struct {
			MediaType string `json:"mediaType"`
		}
		json.Unmarshal(m, &mt)
		w.Header().Set("Content-Type", mt.MediaType)
		d := digest.FromBytes(m)
		if cd, ok := f.claim[ref]; ok {
			d = cd
		}
		w.Header().Set("Docker-Content-Digest", d.String())
		w.Header().Set("Content-Length", fmt.Sprint(len(m)))
		if r.Method != http.MethodHead {
			w.Write(m)
		}
	case strings.Contains(p, "/blobs/"):
		d := digest.Digest(p[strings.LastIndex(p, "/")+1:])
		if to, ok := f.redirect[d]; ok {
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
			return
		}
		b, ok := f.blobs[d]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if f.endless[d] && r.Method != http.MethodHead {
			endless(w, r, b)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		if r.Method != http.MethodHead {
			w.Write(b)
		}
	default:
		http.NotFound(w, r)
	}
}

// endless writes head, then zeros until the client goes away (at most 64 MiB, so that a
// client that never stops cannot keep the test running).
func endless(w http.ResponseWriter, r *http.Request, head []byte) {
	w.WriteHeader(http.StatusOK)
	w.Write(head)
	zeros := make([]byte, 32<<10)
	for i := 0; i < 2048 && r.Context().Err() == nil; i++ {
		if _, err := w.Write(zeros); err != nil {
			return
		}
	}
}

// addImage stores an image of the given layer tarballs under tag and returns its manifest
// bytes and the layer blobs. pad, when > 0, is added to the manifest as an annotation.
func (f *fakeRegistry) addImage(t *testing.T, tag string, pad int, layers ...[]byte) ([]byte, []blob) {
	t.Helper()
	return f.addImageFor(t, hostArch(t), tag, pad, layers...)
}

func (f *fakeRegistry) addImageFor(t *testing.T, arch, tag string, pad int, layers ...[]byte) ([]byte, []blob) {
	t.Helper()
	cfg := ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: arch}, RootFS: ocispec.RootFS{Type: "layers"}}
	var lbs []blob
	for _, l := range layers {
		b, diffID, err := gzipLayer(l)
		if err != nil {
			t.Fatal(err)
		}
		lbs = append(lbs, b)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, diffID)
	}
	cb, err := jsonBlob(ocispec.MediaTypeImageConfig, cfg)
	if err != nil {
		t.Fatal(err)
	}
	man := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cb.desc}
	man.SchemaVersion = 2
	for _, b := range lbs {
		man.Layers = append(man.Layers, b.desc)
		f.blobs[b.desc.Digest] = b.data
	}
	if pad > 0 {
		man.Annotations = map[string]string{"pad": strings.Repeat("x", pad)}
	}
	f.blobs[cb.desc.Digest] = cb.data
	mb, err := json.Marshal(man)
	if err != nil {
		t.Fatal(err)
	}
	f.manifests[tag] = mb
	f.manifests[digest.FromBytes(mb).String()] = mb
	return mb, lbs
}

func startFake(t *testing.T) (*fakeRegistry, string, cevalregistry.Options) {
	f := &fakeRegistry{manifests: map[string][]byte{}, blobs: map[digest.Digest][]byte{}, redirect: map[digest.Digest]string{},
		endless: map[digest.Digest]bool{}, endlessManifests: map[string]bool{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	// An empty hosts dir and no credentials: a loopback registry in plain HTTP.
	return f, host, cevalregistry.Options{HostsDir: t.TempDir(), DockerConfig: filepath.Join(t.TempDir(), "none.json")}
}

func pullWith(t *testing.T, ctx context.Context, c *client.Client, o cevalregistry.Options, ref string) (Image, *Report, error) {
	t.Helper()
	img, rep, _, err := pullLogged(t, ctx, c, o, ref)
	return img, rep, err
}

func pullLogged(t *testing.T, ctx context.Context, c *client.Client, o cevalregistry.Options, ref string) (Image, *Report, string, error) {
	t.Helper()
	ctx = cevalregistry.Quiet(ctx)
	res, err := o.Resolver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	img, rep, err := Pull(ctx, c, ref, PullOptions{Resolver: res, Log: &log})
	if err == nil {
		deleteImageAtEnd(t, ctx, c, ref)
	}
	return img, rep, log.String(), o.Explain(ref, err)
}

// assertGone fails if ref has an image record or any of the digests is in the content store.
func assertGone(t *testing.T, ctx context.Context, c *client.Client, ref string, ds ...digest.Digest) {
	t.Helper()
	if _, err := c.ImageService().Get(ctx, ref); !errdefs.IsNotFound(err) {
		t.Errorf("image %s left in containerd after a failed pull (get: %v)", ref, err)
	}
	for _, d := range ds {
		if _, err := c.ContentStore().Info(ctx, d); !errdefs.IsNotFound(err) {
			t.Errorf("content %s left in containerd after a failed pull (info: %v)", d, err)
		}
	}
}

func TestPullFromAFakeRegistryByTagAndDigest(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	f, host, o := startFake(t)
	mb, _ := f.addImage(t, "ok", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
	for _, ref := range []string{host + "/t/clean:ok", host + "/t/clean@" + digest.FromBytes(mb).String()} {
		img, rep, err := pullWith(t, ctx, c, o, ref)
		if err != nil {
			t.Fatalf("pull %s: %v", ref, err)
		}
		if img.ManifestDigest != digest.FromBytes(mb) || rep.Layers != 1 || len(rep.Dangerous) != 0 {
			t.Fatalf("pull %s: image %+v report %+v", ref, img, rep)
		}
		assertUnpacked(t, ctx, c, ref)
	}
}

// --platform picks that platform's manifest from an index, and the preflight scans that
// manifest's layers (here the foreign one holds a setuid file, the host's does not).
func TestPullPlatformPicksAndPreflightsThatManifest(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	f, host, o := startFake(t)
	other := "arm64"
	if hostArch(t) == "arm64" {
		other = "amd64"
	}
	hostMan, _ := f.addImageFor(t, hostArch(t), "h", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
	otherMan, _ := f.addImageFor(t, other, "o", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644), file("bin/su", "x", 0o4755)))
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{
		{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(hostMan), Size: int64(len(hostMan)), Platform: &ocispec.Platform{OS: "linux", Architecture: hostArch(t)}},
		{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(otherMan), Size: int64(len(otherMan)), Platform: &ocispec.Platform{OS: "linux", Architecture: other}},
	}}
	idx.SchemaVersion = 2
	ib, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	f.manifests["multi"], f.manifests[digest.FromBytes(ib).String()] = ib, ib
	ref := host + "/t/multi:multi"

	res, err := o.Resolver(cevalregistry.Quiet(ctx))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Pull(cevalregistry.Quiet(ctx), c, ref, PullOptions{Resolver: res, Platform: "linux/" + other})
	if !errors.Is(err, ErrNotRunnable) || !strings.Contains(err.Error(), "/bin/su") {
		t.Fatalf("pull --platform linux/%s: %v, want the %s manifest's setuid /bin/su refused", other, err, other)
	}
	assertGone(t, ctx, c, ref, digest.FromBytes(otherMan))
	img, _, err := pullWith(t, ctx, c, o, ref)
	if err != nil || img.ManifestDigest != digest.FromBytes(hostMan) {
		t.Fatalf("pull for this host: %+v, %v; want manifest %s", img, err, digest.FromBytes(hostMan))
	}
}

// A host that is not loopback is reached in plain HTTP only when its hosts.toml says so:
// here "mirror.invalid" is served by the fake registry through the hosts dir's server line.
func TestPullHonoursTheHostsDirectory(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	f, host, o := startFake(t)
	mb, _ := f.addImage(t, "v1", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
	ref := "mirror.invalid/t/hosted:v1"
	if _, _, err := pullWith(t, ctx, c, o, ref); err == nil {
		t.Fatalf("pull of %s with no hosts.toml succeeded", ref)
	}
	dir := filepath.Join(o.HostsDir, "mirror.invalid")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+host, "http://"+host)
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	img, _, err := pullWith(t, ctx, c, o, ref)
	if err != nil || img.ManifestDigest != digest.FromBytes(mb) {
		t.Fatalf("pull of %s through %s/hosts.toml: %+v, %v", ref, dir, img, err)
	}
}

func TestPullPrintsOneLinePerLayer(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	f, host, o := startFake(t)
	_, lbs := f.addImage(t, "two", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)), layerTar(t, file("etc/motd", "hi", 0o644)))
	_, _, log, err := pullLogged(t, ctx, c, o, host+"/t/two:two")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if len(lines) != 2 {
		t.Fatalf("progress: %q, want one line per layer", log)
	}
	for _, b := range lbs {
		if !strings.Contains(log, fmt.Sprintf("fetched layer %s (%d bytes)", b.desc.Digest, b.desc.Size)) {
			t.Errorf("progress %q lacks layer %s", log, b.desc.Digest)
		}
	}
}

// A refused pull of a name that was already there leaves the name where it was.
func TestARefusedPullKeepsTheImageThatHadTheName(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	f, host, o := startFake(t)
	okMan, _ := f.addImage(t, "v1", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
	ref := host + "/t/moving:v1"
	if _, _, err := pullWith(t, ctx, c, o, ref); err != nil {
		t.Fatal(err)
	}
	badMan, lbs := f.addImage(t, "v1", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644), file("bin/su", "x", 0o4755)))
	if _, _, err := pullWith(t, ctx, c, o, ref); !errors.Is(err, ErrNotRunnable) {
		t.Fatalf("pull of a tag moved to a setuid image: %v, want ErrNotRunnable", err)
	}
	rec, err := c.ImageService().Get(ctx, ref)
	if err != nil || rec.Target.Digest != digest.FromBytes(okMan) {
		t.Fatalf("after the refused pull %s is %v (%v), want the earlier %s", ref, rec.Target.Digest, err, digest.FromBytes(okMan))
	}
	for _, d := range []digest.Digest{digest.FromBytes(badMan), lbs[0].desc.Digest} {
		if _, err := c.ContentStore().Info(ctx, d); !errdefs.IsNotFound(err) {
			t.Errorf("content %s of the refused image left (info: %v)", d, err)
		}
	}
}

func TestPullRefusesASetuidImageAndLeavesNothing(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	f, host, o := startFake(t)
	mb, lbs := f.addImage(t, "suid", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644), file("usr/bin/sudo", "x", 0o4755)))
	ref := host + "/t/suid:suid"
	_, _, err := pullWith(t, ctx, c, o, ref)
	if !errors.Is(err, ErrNotRunnable) || !strings.Contains(err.Error(), "/usr/bin/sudo") {
		t.Fatalf("pull of a setuid image: %v, want ErrNotRunnable naming /usr/bin/sudo", err)
	}
	assertGone(t, ctx, c, ref, digest.FromBytes(mb), lbs[0].desc.Digest)
}

func TestPullRefusesAnOversizedManifest(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	f, host, o := startFake(t)
	mb, lbs := f.addImage(t, "big", int(MaxPulledManifestSize)+1, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
	ref := host + "/t/big:big"
	_, _, err := pullWith(t, ctx, c, o, ref)
	if err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("pull of a %d byte manifest: %v, want a size bound error", len(mb), err)
	}
	assertGone(t, ctx, c, ref, digest.FromBytes(mb), lbs[0].desc.Digest)
}

// A pull by digest gets the manifest with that digest or nothing: a registry answering
// with another manifest (and claiming the asked digest in its header) is refused.
func TestPullByDigestRefusesAnotherManifest(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	f, host, o := startFake(t)
	want, _ := f.addImage(t, "want", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
	other, lbs := f.addImage(t, "other", 0, layerTar(t, file("etc/motd", "other", 0o644)))
	wantDigest := digest.FromBytes(want)
	f.manifests[wantDigest.String()] = other
	f.claim = map[string]digest.Digest{wantDigest.String(): wantDigest}
	ref := host + "/t/pinned@" + wantDigest.String()
	_, _, err := pullWith(t, ctx, c, o, ref)
	if err == nil || !strings.Contains(err.Error(), "bytes do not match its digest") {
		t.Fatalf("pull by digest served another manifest: %v, want a digest error", err)
	}
	t.Logf("refused: %v", err)
	assertGone(t, ctx, c, ref, wantDigest, digest.FromBytes(other), lbs[0].desc.Digest)
}

func TestPullRefusesALayerWhoseBytesDoNotMatchItsDigest(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	f, host, o := startFake(t)
	mb, lbs := f.addImage(t, "lie", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
	good := lbs[0].data
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0xff // same size, other bytes
	f.blobs[lbs[0].desc.Digest] = bad
	ref := host + "/t/lie:lie"
	_, _, err := pullWith(t, ctx, c, o, ref)
	if err == nil || !strings.Contains(err.Error(), "bytes do not match its digest") {
		t.Fatalf("pull of a layer that lies about its digest: %v, want a digest error", err)
	}
	assertGone(t, ctx, c, ref, digest.FromBytes(mb), lbs[0].desc.Digest)
}

// The real registry scripts/registry.sh starts (Debian's docker-registry, TLS from its own
// CA, htpasswd auth): push the default image, remove it here, pull it back by tag and by
// digest; a wrong password and an untrusted CA are refused naming the file to fix.
func TestPushAndPullThroughARealRegistry(t *testing.T) {
	reg := os.Getenv("CEVAL_TEST_REGISTRY")
	if reg == "" {
		msg := "CEVAL_TEST_REGISTRY unset: start one with scripts/registry.sh start DIR and export its env"
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and a registry is required: " + msg)
		}
		t.Skip(msg)
	}
	ca, user, pass := os.Getenv("CEVAL_TEST_REGISTRY_CA"), os.Getenv("CEVAL_TEST_REGISTRY_USER"), os.Getenv("CEVAL_TEST_REGISTRY_PASSWORD")
	c, ctx := ctrtest.Connect(t)
	qctx := cevalregistry.Quiet(ctx)
	src, err := BuildDefault(ctx, c, DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteImageAtEnd(t, ctx, c, src.Name)

	hosts := t.TempDir()
	if err := os.MkdirAll(filepath.Join(hosts, reg), 0o755); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hosts, reg, "ca.crt"), caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	writeDockerConfig := func(u, p string) string {
		path := filepath.Join(t.TempDir(), "config.json")
		auth := base64Std(u + ":" + p)
		if err := os.WriteFile(path, []byte(fmt.Sprintf(`{"auths":{"%s":{"auth":"%s"}}}`, reg, auth)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := cevalregistry.Options{HostsDir: hosts, DockerConfig: writeDockerConfig(user, pass)}
	res, err := good.Resolver(qctx)
	if err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("%s/ceval-test/%s:v1", reg, strings.ToLower(t.Name()))
	if _, err := Push(qctx, c, src.Name, ref, res, nil); err != nil {
		t.Fatalf("push: %v", good.Explain(ref, err))
	}
	byDigest := strings.TrimSuffix(ref, ":v1") + "@" + src.ManifestDigest.String()
	for _, r := range []string{ref, byDigest} {
		img, _, err := pullWith(t, ctx, c, good, r)
		if err != nil {
			t.Fatalf("pull %s: %v", r, err)
		}
		if img.ManifestDigest != src.ManifestDigest || img.ConfigDigest != src.ConfigDigest {
			t.Fatalf("pull %s: got %s/%s, want %s/%s", r, img.ManifestDigest, img.ConfigDigest, src.ManifestDigest, src.ConfigDigest)
		}
		assertUnpacked(t, ctx, c, r)
		ctrtest.RemoveImage(ctx, c, r)
	}

	bad := cevalregistry.Options{HostsDir: hosts, DockerConfig: writeDockerConfig(user, "wrong-"+pass)}
	_, _, err = pullWith(t, ctx, c, bad, ref)
	if want := fmt.Sprintf("registry %s refused the credentials from %s", reg, bad.DockerConfig); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("pull with a wrong password: %v, want %q", err, want)
	}
	assertGone(t, ctx, c, ref)

	untrusted := cevalregistry.Options{HostsDir: t.TempDir(), DockerConfig: good.DockerConfig}
	_, _, err = pullWith(t, ctx, c, untrusted, ref)
	if want := "add its CA to " + filepath.Join(untrusted.HostsDir, reg, "ca.crt"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("pull with an untrusted CA: %v, want %q", err, want)
	}
	assertGone(t, ctx, c, ref)
}

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// assertNoIngest fails if a content ingest (a partial download) is left in containerd.
func assertNoIngest(t *testing.T, ctx context.Context, c *client.Client) {
	t.Helper()
	st, err := c.ContentStore().ListStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		t.Errorf("content ingest %s (%d of %d bytes) left after a refused pull", s.Ref, s.Offset, s.Total)
	}
}

// A hostile registry: each bad answer is a clear error, and nothing of the image (record,
// content, partial download) is left in containerd.
func TestPullRefusesAHostileRegistry(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the pull followed a redirect to another host: %s", r.URL)
	}))
	t.Cleanup(other.Close)
	foreign := "arm64"
	if hostArch(t) == "arm64" {
		foreign = "amd64"
	}
	cases := []struct {
		name  string
		setup func(f *fakeRegistry, t *testing.T) []digest.Digest // the digests that must not be kept
		want  string
	}{
		{"redirect to another host", func(f *fakeRegistry, t *testing.T) []digest.Digest {
			mb, lbs := f.addImage(t, "x", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
			f.redirect[lbs[0].desc.Digest] = other.URL + "/blob"
			return []digest.Digest{digest.FromBytes(mb), lbs[0].desc.Digest}
		}, "redirected to another host"},
		{"endless blob", func(f *fakeRegistry, t *testing.T) []digest.Digest {
			mb, lbs := f.addImage(t, "x", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
			f.endless[lbs[0].desc.Digest] = true
			return []digest.Digest{digest.FromBytes(mb), lbs[0].desc.Digest}
		}, "longer than its descriptor"},
		{"endless manifest", func(f *fakeRegistry, t *testing.T) []digest.Digest {
			f.endlessManifests["x"] = true
			return nil
		}, "runs past the"},
		{"too many layers", func(f *fakeRegistry, t *testing.T) []digest.Digest {
			var ls [][]byte
			for i := 0; i <= MaxPulledLayers; i++ {
				ls = append(ls, layerTar(t, file(fmt.Sprintf("f%d", i), "x", 0o644)))
			}
			mb, lbs := f.addImage(t, "x", 0, ls...)
			return []digest.Digest{digest.FromBytes(mb), lbs[0].desc.Digest}
		}, fmt.Sprintf("has %d layers, over the bound", MaxPulledLayers+1)},
		{"index without this platform", func(f *fakeRegistry, t *testing.T) []digest.Digest {
			om, _ := f.addImageFor(t, foreign, "o", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
			idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{
				{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(om), Size: int64(len(om)), Platform: &ocispec.Platform{OS: "linux", Architecture: foreign}}}}
			idx.SchemaVersion = 2
			ib, _ := json.Marshal(idx)
			f.manifests["x"], f.manifests[digest.FromBytes(ib).String()] = ib, ib
			return []digest.Digest{digest.FromBytes(ib), digest.FromBytes(om)}
		}, "has no manifest for platform"},
		{"config over the bound", func(f *fakeRegistry, t *testing.T) []digest.Digest {
			cfg := ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: hostArch(t)}, RootFS: ocispec.RootFS{Type: "layers"}}
			cfg.Config.Labels = map[string]string{"pad": strings.Repeat("x", int(MaxPulledManifestSize))}
			cb, err := jsonBlob(ocispec.MediaTypeImageConfig, cfg)
			if err != nil {
				t.Fatal(err)
			}
			man := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cb.desc}
			man.SchemaVersion = 2
			mb, _ := json.Marshal(man)
			f.blobs[cb.desc.Digest] = cb.data
			f.manifests["x"], f.manifests[digest.FromBytes(mb).String()] = mb, mb
			return []digest.Digest{digest.FromBytes(mb), cb.desc.Digest}
		}, "over the 4194304 byte bound for manifests and configs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, host, o := startFake(t)
			keep := tc.setup(f, t)
			ref := host + "/t/hostile:x"
			done := make(chan error, 1)
			go func() { _, _, err := pullWith(t, ctx, c, o, ref); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the pull did not end in 2 minutes")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, cevalregistry.ErrRefused) {
				t.Fatalf("pull: %v, want an error saying %q that is registry.ErrRefused", err, tc.want)
			}
			t.Logf("refused: %v", err)
			assertGone(t, ctx, c, ref, keep...)
			assertNoIngest(t, ctx, c)
		})
	}
}

// An image present in containerd and named by digest (or a tag under --pull missing, or a
// pin made before) costs a run no registry request at all; --pull always asks again.
func TestAPresentPinnedImageAsksTheRegistryNothing(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	f, host, o := startFake(t)
	mb, _ := f.addImage(t, "v1", 0, layerTar(t, file("etc/passwd", agentPasswd, 0o644)))
	tag, byDigest := host+"/t/warm:v1", host+"/t/warm@"+digest.FromBytes(mb).String()
	pins := NewPinner(PullMissing, o)
	if _, _, err := pins.Local(ctx, c, byDigest); err != nil {
		t.Fatal(err)
	}
	deleteImageAtEnd(t, ctx, c, byDigest)
	if _, _, err := pullWith(t, ctx, c, o, tag); err != nil {
		t.Fatal(err)
	}
	before := f.requests.Load()
	for _, p := range []*Pinner{pins, NewPinner(PullMissing, o), NewPinner(PullNever, o)} {
		for _, name := range []string{byDigest, tag} {
			local, pin, err := p.Local(ctx, c, name)
			if err != nil || pin.Digest != digest.FromBytes(mb) || local != byDigest {
				t.Fatalf("Local(%s): %s %+v %v", name, local, pin, err)
			}
		}
	}
	if n := f.requests.Load() - before; n != 0 {
		t.Fatalf("resolving a present image by digest and tag made %d registry requests, want 0", n)
	}
	if _, _, err := NewPinner(PullAlways, o).Local(ctx, c, tag); err != nil {
		t.Fatal(err)
	}
	if f.requests.Load() == before {
		t.Fatal("--pull always asked the registry nothing")
	}
}
