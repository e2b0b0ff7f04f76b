package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/remotes/docker"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCredentialsFromTheDockerConfigFile(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	p := writeFile(t, fmt.Sprintf(`{"auths":{
		"reg.example:5000": {"auth": %q},
		"https://index.docker.io/v1/": {"auth": %q},
		"https://other.example/v2/": {"username": "u", "password": "p"}}}`, b64("alice:pa:ss"), b64("bob:secret")))
	creds, err := loadCredentials(p)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]cred{
		"reg.example:5000":     {"alice", "pa:ss"},
		"registry-1.docker.io": {"bob", "secret"},
		"other.example":        {"u", "p"},
	} {
		if creds[host] != want {
			t.Errorf("credentials for %s: %+v, want %+v", host, creds[host], want)
		}
	}
	if creds, err := loadCredentials(filepath.Join(t.TempDir(), "missing.json")); err != nil || len(creds) != 0 {
		t.Errorf("a missing file: %v, %v; want no credentials and no error", creds, err)
	}
}

func TestABrokenDockerConfigNamesTheFileAndTheEntry(t *testing.T) {
	for body, want := range map[string]string{
		`{"auths":`:                         "not valid JSON",
		`{"auths":{"h:1":{"auth":"%%%"}}}`:  `auths["h:1"].auth is not base64`,
		`{"auths":{"h:1":{"auth":"YWJj"}}}`: `auths["h:1"].auth does not decode to USER:PASSWORD`,
	} {
		p := writeFile(t, body)
		_, err := Options{DockerConfig: p, HostsDir: t.TempDir()}.Resolver(t.Context())
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
			t.Errorf("config %s: %v, want ErrConfig naming %s and %q", body, err, p, want)
		}
	}
}

func TestDockerConfigPathFollowsDOCKER_CONFIG(t *testing.T) {
	d := t.TempDir()
	t.Setenv("DOCKER_CONFIG", d)
	if got := (Options{}).DockerConfigPath(); got != filepath.Join(d, "config.json") {
		t.Errorf("DockerConfigPath with DOCKER_CONFIG=%s: %s", d, got)
	}
	if got := (Options{DockerConfig: "/x.json"}).DockerConfigPath(); got != "/x.json" {
		t.Errorf("DockerConfigPath with the flag: %s", got)
	}
}

func TestExplainNamesTheFileToFix(t *testing.T) {
	p := writeFile(t, `{"auths":{"reg.example:5000":{"auth":"YTpi"}}}`)
	o := Options{DockerConfig: p, HostsDir: "/hosts"}
	err := o.Explain("reg.example:5000/a/b:t", fmt.Errorf("resolve: %w", docker.ErrInvalidAuthorization))
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "registry reg.example:5000 refused the credentials from "+p) {
		t.Errorf("auth error: %v", err)
	}
	err = o.Explain("nocreds.example/a:t", fmt.Errorf("resolve: %w", docker.ErrInvalidAuthorization))
	if !strings.Contains(err.Error(), "registry nocreds.example wants credentials and "+p+" has none") {
		t.Errorf("auth error without credentials: %v", err)
	}
	other := errors.New("connection refused")
	if err := o.Explain("reg.example:5000/a:t", other); err != other {
		t.Errorf("unrelated error rewritten: %v", err)
	}
}

func TestNormalizeCompletesAReference(t *testing.T) {
	for ref, want := range map[string]string{
		"busybox":               "docker.io/library/busybox:latest",
		"127.0.0.1:5000/a/b":    "127.0.0.1:5000/a/b:latest",
		"127.0.0.1:5000/a/b:v1": "127.0.0.1:5000/a/b:v1",
	} {
		if got, err := Normalize(ref); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, err := Normalize("a/b@sha256:zz"); err == nil || !strings.Contains(err.Error(), `image reference "a/b@sha256:zz"`) {
		t.Errorf("Normalize of an invalid reference: %v", err)
	}
}

func TestHostOfAReference(t *testing.T) {
	for ref, want := range map[string]string{
		"127.0.0.1:5000/a/b:t":    "127.0.0.1:5000",
		"reg.example/a@sha256:00": "reg.example",
		"localhost/a":             "localhost",
		"busybox:latest":          "docker.io",
		"reg.example:5000/a":      "reg.example:5000",
		"library/busybox":         "docker.io",
	} {
		if got := Host(ref); got != want {
			t.Errorf("Host(%q) = %q, want %q", ref, got, want)
		}
	}
}

// A registry's redirect is followed to its own host or a public https host (a blob CDN),
// never into this host's network nor down to http.
func TestCheckRedirectRefusesHopsIntoThisNetworkAndDowngrades(t *testing.T) {
	cases := []struct {
		from, to string
		ok       bool
	}{
		{"https://registry-1.docker.io/v2/x/blobs/sha256:1", "https://registry-1.docker.io/v2/y", true},
		{"https://registry-1.docker.io/v2/x/blobs/sha256:1", "https://production.cloudflare.docker.com/blob", true},
		{"https://registry-1.docker.io/v2/x/blobs/sha256:1", "http://production.cloudflare.docker.com/blob", false},
		{"https://registry-1.docker.io/v2/x/blobs/sha256:1", "https://127.0.0.1:2375/containers", false},
		{"https://registry-1.docker.io/v2/x/blobs/sha256:1", "https://169.254.169.254/latest/meta-data", false},
		{"https://registry-1.docker.io/v2/x/blobs/sha256:1", "https://10.0.0.5/x", false},
		{"https://registry-1.docker.io/v2/x/blobs/sha256:1", "https://localhost/x", false},
		{"http://127.0.0.1:5000/v2/x/blobs/sha256:1", "https://example.com/blob", false},
	}
	for _, c := range cases {
		from, _ := http.NewRequest(http.MethodGet, c.from, nil)
		to, _ := http.NewRequest(http.MethodGet, c.to, nil)
		err := checkRedirect(to, []*http.Request{from})
		if (err == nil) != c.ok {
			t.Errorf("redirect %s -> %s: %v, want ok=%v", c.from, c.to, err, c.ok)
		}
	}
}

// Credentials from a credential helper (credHelpers per host, credsStore for the rest), as
// docker runs it; a helper that is not installed gives none, and the 401 names it.
func TestCredentialHelperGivesTheCredentials(t *testing.T) {
	const user, pass = "alice", "s3cret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if strings.Contains(r.URL.Path, "/manifests/") {
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("a", 64))
			w.Header().Set("Content-Length", "2")
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	bin := t.TempDir()
	helper := "#!/bin/sh\nread server\n[ \"$server\" = " + host + " ] || { echo 'credentials not found in native keychain'; exit 1; }\n" +
		`echo '{"ServerURL":"'$server'","Username":"` + user + `","Secret":"` + pass + `"}'` + "\n"
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-cevaltest"), []byte(helper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	ref := host + "/a/b:v1"
	for _, cfg := range []string{
		fmt.Sprintf(`{"credHelpers":{%q:"cevaltest"}}`, host),
		`{"credsStore":"cevaltest"}`,
	} {
		dc := filepath.Join(t.TempDir(), "config.json")
		os.WriteFile(dc, []byte(cfg), 0o600)
		o := Options{DockerConfig: dc, HostsDir: t.TempDir()}
		res, err := o.Resolver(Quiet(context.Background()))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := res.Resolve(context.Background(), ref); err != nil {
			t.Errorf("resolve with %s: %v", cfg, o.Explain(ref, err))
		}
	}
	dc := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(dc, []byte(`{"credsStore":"notinstalled"}`), 0o600)
	o := Options{DockerConfig: dc, HostsDir: t.TempDir()}
	res, _ := o.Resolver(Quiet(context.Background()))
	_, _, err := res.Resolve(context.Background(), ref)
	if err = o.Explain(ref, err); err == nil || !strings.Contains(err.Error(), "docker-credential-notinstalled, which is not on PATH") {
		t.Errorf("resolve with a helper not installed: %v", err)
	}
}
