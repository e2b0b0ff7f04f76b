package images

import (
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestCheckImageNameNormalises(t *testing.T) {
	for in, want := range map[string]string{
		"ubuntu:24.04":     "docker.io/library/ubuntu:24.04",
		"foo/bar":          "docker.io/foo/bar:latest",
		"localhost:5000/x": "localhost:5000/x:latest",
		"harbor/task":      "docker.io/harbor/task:latest",
		"ceval.local/a:b":  "ceval.local/a:b",
	} {
		n := in
		if err := checkImageName(&n); err != nil {
			t.Fatalf("checkImageName(%q): %v", in, err)
		}
		if n != want {
			t.Errorf("checkImageName(%q) = %q, want %q", in, n, want)
		}
	}
	bad := "ubuntu:24.04:extra"
	if err := checkImageName(&bad); err == nil {
		t.Errorf("checkImageName(%q): no error", bad)
	}
}

// ceval's own image configs name no User (RUN steps built on them are root; runs are the
// agent's UID whatever the image says) and account for every layer in their history.
func TestImageConfigsHaveHistoryAndNoUser(t *testing.T) {
	layers := []ocispec.Descriptor{{Digest: digest.Digest("sha256:" + strings.Repeat("a", 64))}, {Digest: digest.Digest("sha256:" + strings.Repeat("b", 64))}}
	for name, cfg := range map[string]ocispec.Image{
		"default": defaultConfig("amd64", digest.Digest("sha256:"+strings.Repeat("c", 64))),
		"package": packageConfig("amd64", layers),
	} {
		if cfg.Config.User != "" {
			t.Errorf("%s image config names User %q", name, cfg.Config.User)
		}
		if len(cfg.History) != len(cfg.RootFS.DiffIDs) || cfg.Created == nil {
			t.Errorf("%s image config: %d history entries for %d layers, created %v", name, len(cfg.History), len(cfg.RootFS.DiffIDs), cfg.Created)
		}
		for _, h := range cfg.History {
			if h.EmptyLayer || h.Created == nil || h.CreatedBy == "" {
				t.Errorf("%s image history entry %+v", name, h)
			}
		}
	}
}
