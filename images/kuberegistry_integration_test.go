package images_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/content"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/regtest"
	"ceval.dev/ceval/registry"
)

// failingResolver is a real registry's resolver whose pusher fails at the first blob fail
// says, as a push cut by the network or a registry refusing a manifest would.
type failingResolver struct {
	remotes.Resolver
	fail func(ocispec.Descriptor) bool
}

func (r failingResolver) Pusher(ctx context.Context, ref string) (remotes.Pusher, error) {
	p, err := r.Resolver.Pusher(ctx, ref)
	return failingPusher{p, r.fail}, err
}

type failingPusher struct {
	remotes.Pusher
	fail func(ocispec.Descriptor) bool
}

func (p failingPusher) Push(ctx context.Context, desc ocispec.Descriptor) (content.Writer, error) {
	if p.fail(desc) {
		return nil, fmt.Errorf("injected failure pushing %s %s", desc.MediaType, desc.Digest)
	}
	return p.Pusher.Push(ctx, desc)
}

// registryAPI asks the test registry (its CA, its credentials) for path and returns the
// status and body.
func registryAPI(t *testing.T, method, path string) (int, []byte) {
	t.Helper()
	pem, err := os.ReadFile(os.Getenv("CEVAL_TEST_REGISTRY_CA"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest(method, "https://"+os.Getenv("CEVAL_TEST_REGISTRY")+path, nil)
	req.SetBasicAuth(os.Getenv("CEVAL_TEST_REGISTRY_USER"), os.Getenv("CEVAL_TEST_REGISTRY_PASSWORD"))
	req.Header.Set("Accept", ocispec.MediaTypeImageManifest+", "+ctrimages.MediaTypeDockerSchema2Manifest)
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// A push for Kubernetes that fails (at the manifest, after every layer and the config went
// up; or at the first layer) leaves no reference in the real test registry: no tag, no
// manifest by digest, so no node can pull a partial image, and NodePush says which image
// failed and what was pushed before it. What the registry keeps is its own: the blobs that
// went up whole (unreferenced until its garbage-collect) and, for a cut upload, its upload
// session (purged by its upload purging). Pushed again, the same image goes up whole. No
// ingest or lease is left in this containerd.
func TestNodePushThatFailsLeavesNoReferenceInTheRegistry(t *testing.T) {
	ro, reg := regtest.Registry(t)
	c, ctx := ctrtest.Connect(t)
	qctx := registry.Quiet(ctx)
	if _, err := images.EnsureDefault(ctx, c, images.DefaultOptions{}); err != nil {
		t.Fatal(err)
	}
	leases, err := c.LeasesService().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	repo := "ceval-test/" + strings.ToLower(t.Name()) + "-" + hex.EncodeToString(b) // nothing there yet
	m := images.NodeRegistry{Prefix: reg + "/" + repo}
	ref, _ := m.Ref(images.DefaultName)
	local, err := images.Lookup(ctx, c, images.DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(strings.TrimSuffix(ref, ":latest"), reg+"/")

	for _, tc := range []struct {
		name string
		fail func(ocispec.Descriptor) bool
	}{
		{"at a layer", func(d ocispec.Descriptor) bool { return ctrimages.IsLayerType(d.MediaType) }},
		{"at the manifest", func(d ocispec.Descriptor) bool { return ctrimages.IsManifestType(d.MediaType) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newResolver := func() (remotes.Resolver, error) {
				r, err := ro.Resolver(qctx)
				return failingResolver{r, tc.fail}, err
			}
			pushed, err := images.NodePush(qctx, c, m, []string{images.DefaultName}, newResolver, nil)
			if err == nil || !strings.Contains(err.Error(), "injected failure") || !strings.Contains(err.Error(), images.DefaultName) || len(pushed) != 0 {
				t.Fatalf("push that fails %s: %v, pushed %v", tc.name, err, pushed)
			}
			if code, body := registryAPI(t, http.MethodGet, "/v2/"+path+"/manifests/"+local.ManifestDigest.String()); code != http.StatusNotFound {
				t.Errorf("the manifest by digest after a failed push: %d %s", code, body)
			}
			if code, body := registryAPI(t, http.MethodGet, "/v2/"+path+"/manifests/latest"); code != http.StatusNotFound {
				t.Errorf("the tag after a failed push: %d %s", code, body)
			}
			code, body := registryAPI(t, http.MethodGet, "/v2/"+path+"/tags/list")
			var tags struct{ Tags []string }
			_ = json.Unmarshal(body, &tags)
			if len(tags.Tags) != 0 {
				t.Errorf("tags after a failed push: %d %s", code, body)
			}
			code, _ = registryAPI(t, http.MethodHead, "/v2/"+path+"/blobs/"+local.ConfigDigest.String())
			t.Logf("failed %s: the registry keeps the config blob: %v (HEAD %d)", tc.name, code == http.StatusOK, code)
		})
	}

	newResolver := func() (remotes.Resolver, error) { return ro.Resolver(qctx) }
	pushed, err := images.NodePush(qctx, c, m, []string{images.DefaultName}, newResolver, nil)
	if err != nil || len(pushed) != 1 || pushed[0].Digest != local.ManifestDigest {
		t.Fatalf("pushed again: %v, %v", pushed, err)
	}
	if code, body := registryAPI(t, http.MethodGet, "/v2/"+path+"/manifests/latest"); code != http.StatusOK {
		t.Errorf("the tag after the push: %d %s", code, body)
	}
	st, err := c.ContentStore().ListStatuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		t.Errorf("content ingest %s left after the pushes", s.Ref)
	}
	after, err := c.LeasesService().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(leases) {
		t.Errorf("leases %d before the pushes, %d after", len(leases), len(after))
	}
}
