// Package registry configures containerd's own registry client (core/remotes/docker) for
// ceval: credentials from the Docker config file, hosts and CAs from containerd's hosts
// directory, and errors that name the file to fix.
package registry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	remoteerrors "github.com/containerd/containerd/v2/core/remotes/errors"
	"github.com/containerd/log"
	"github.com/distribution/reference"
	"github.com/sirupsen/logrus"
)

// DefaultHostsDir is where containerd keeps HOST/hosts.toml and HOST/ca.crt.
const DefaultHostsDir = "/etc/containerd/certs.d"

// ErrConfig is what errors wrap whose fix is in a file the user controls: the Docker
// config file's credentials or the hosts directory's CA.
var ErrConfig = errors.New("registry configuration")

// configError is an error that errors.Is ErrConfig without saying so in its text.
type configError struct{ err error }

func (e *configError) Error() string        { return e.err.Error() }
func (e *configError) Unwrap() error        { return e.err }
func (e *configError) Is(target error) bool { return target == ErrConfig }

func configErrorf(format string, args ...any) error {
	return &configError{fmt.Errorf(format, args...)}
}

// Options says where credentials and host configuration come from.
type Options struct {
	// DockerConfig is the Docker config file; "" is $DOCKER_CONFIG/config.json, else
	// ~/.docker/config.json. A missing file means no credentials.
	DockerConfig string
	// HostsDir is containerd's hosts directory; "" is DefaultHostsDir.
	HostsDir string
}

// DockerConfigPath is the file credentials are read from.
func (o Options) DockerConfigPath() string {
	if o.DockerConfig != "" {
		return o.DockerConfig
	}
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".docker", "config.json")
}

func (o Options) hostsDir() string {
	if o.HostsDir != "" {
		return o.HostsDir
	}
	return DefaultHostsDir
}

type cred struct{ user, secret string }

// dockerConfig is what ceval reads of a Docker config file.
type dockerConfig struct {
	Auths map[string]struct {
		Auth     string `json:"auth"`
		Username string `json:"username"`
		Password string `json:"password"`
	} `json:"auths"`
	// CredsStore and CredHelpers name credential helpers (docker-credential-NAME), for
	// every host and per host.
	CredsStore  string            `json:"credsStore"`
	CredHelpers map[string]string `json:"credHelpers"`
}

func readDockerConfig(path string) (dockerConfig, error) {
	var f dockerConfig
	if path == "" {
		return f, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, configErrorf("docker config %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, configErrorf("docker config %s: not valid JSON: %w; fix or remove the file", path, err)
	}
	return f, nil
}

// helperFor names the credential helper the config gives host ("" when none).
func (f dockerConfig) helperFor(host string) string {
	for key, name := range f.CredHelpers {
		if normalizeHost(key) == host {
			return name
		}
	}
	return f.CredsStore
}

// helperTimeout bounds one credential helper call.
const helperTimeout = 30 * time.Second

// fromHelper asks docker-credential-NAME for host's credentials, as docker does: the
// server on stdin, {"Username","Secret"} on stdout. A helper that is not installed, or has
// nothing for host, gives none.
func fromHelper(ctx context.Context, name, host string) (cred, error) {
	bin, err := exec.LookPath("docker-credential-" + name)
	if err != nil {
		return cred{}, nil
	}
	server := host
	if host == "registry-1.docker.io" {
		server = "https://index.docker.io/v1/"
	}
	ctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "get")
	cmd.Stdin = strings.NewReader(server)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(string(out) + stderr.String()); strings.Contains(msg, "credentials not found") {
			return cred{}, nil
		}
		return cred{}, configErrorf("credential helper %s for %s: %w: %s", bin, host, err, strings.TrimSpace(stderr.String()))
	}
	var c struct{ Username, Secret string }
	if err := json.Unmarshal(out, &c); err != nil {
		return cred{}, configErrorf("credential helper %s for %s: its answer is not JSON: %w", bin, host, err)
	}
	if c.Username == "<token>" { // an identity token: containerd takes it with no user
		c.Username = ""
	}
	return cred{user: c.Username, secret: c.Secret}, nil
}

// loadCredentials reads the `auths` entries of a Docker config file, keyed by host.
func loadCredentials(path string) (map[string]cred, error) {
	out := map[string]cred{}
	f, err := readDockerConfig(path)
	if err != nil {
		return nil, err
	}
	for key, a := range f.Auths {
		host := normalizeHost(key)
		c := cred{user: a.Username, secret: a.Password}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, configErrorf("docker config %s: auths[%q].auth is not base64: %w; write it as base64(USER:PASSWORD)", path, key, err)
			}
			u, p, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, configErrorf("docker config %s: auths[%q].auth does not decode to USER:PASSWORD", path, key)
			}
			c = cred{user: u, secret: p}
		}
		out[host] = c
	}
	return out, nil
}

// normalizeHost turns an auths key ("https://index.docker.io/v1/", "host:5000") into the
// host the resolver asks about.
func normalizeHost(key string) string {
	h := key
	if strings.Contains(h, "://") {
		if u, err := url.Parse(h); err == nil {
			h = u.Host
		}
	}
	h, _, _ = strings.Cut(h, "/")
	switch h {
	case "index.docker.io", "registry-1.docker.io", "docker.io":
		return "registry-1.docker.io"
	}
	return h
}

// Resolver returns containerd's docker resolver with ceval's credentials and hosts. TLS is
// always verified (system roots plus DIR/HOST/ca.crt); plain HTTP is used only for a
// loopback registry that does not speak TLS, or a host whose hosts.toml names an http://
// server.
func (o Options) Resolver(ctx context.Context) (remotes.Resolver, error) {
	creds, err := loadCredentials(o.DockerConfigPath())
	if err != nil {
		return nil, err
	}
	dc, _ := readDockerConfig(o.DockerConfigPath())
	var mu sync.Mutex
	credFn := func(host string) (string, string, error) {
		mu.Lock()
		defer mu.Unlock()
		c, ok := creds[host]
		if !ok {
			if name := dc.helperFor(host); name != "" {
				var err error
				if c, err = fromHelper(ctx, name, host); err != nil {
					return "", "", err
				}
			}
			creds[host] = c // asked once per resolver
		}
		return c.user, c.secret, nil
	}
	hostDir := config.HostDirFromRoot(o.hostsDir())
	remote := config.ConfigureHosts(ctx, config.HostOptions{
		HostDir: hostDir, Credentials: credFn, DefaultScheme: "https", DefaultTLS: &tls.Config{MinVersion: tls.VersionTLS12},
	})
	// Loopback: https first (verified), falling back to http only when the server answers
	// in plain HTTP; containerd's own loopback default would skip TLS verification.
	loopback := config.ConfigureHosts(ctx, config.HostOptions{
		HostDir: hostDir, Credentials: credFn, DefaultScheme: "http", DefaultTLS: &tls.Config{MinVersion: tls.VersionTLS12},
	})
	hosts := func(host string) ([]docker.RegistryHost, error) {
		var hs []docker.RegistryHost
		var err error
		if docker.IsLocalhost(host) {
			hs, err = loopback(host)
		} else {
			hs, err = remote(host)
		}
		for i := range hs {
			hs[i].Client = guarded(hs[i].Client)
		}
		return hs, err
	}
	return docker.NewResolver(docker.ResolverOptions{Hosts: hosts}), nil
}

// MaxManifestBytes bounds the body of a manifest response: a registry that streams one
// without end (no length, no digest header: containerd then hashes the body to EOF) is cut
// off there.
const MaxManifestBytes = 4 << 20

// maxRedirects is how many redirects one request may follow.
const maxRedirects = 5

// guarded returns a copy of a host's HTTP client that refuses redirects a registry has no
// business sending (see checkRedirect) and cuts manifest bodies at MaxManifestBytes.
func guarded(c *http.Client) *http.Client {
	g := &http.Client{}
	if c != nil {
		*g = *c
	}
	rt := g.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	g.Transport = cappedTransport{rt}
	g.CheckRedirect = checkRedirect
	return g
}

// ErrRefused is what the errors wrap that refuse what a registry sent (a redirect, a
// manifest or blob over its bounds, content that is not what it claims): the fault is the
// registry's, or the task's that named it, never the host's.
var ErrRefused = errors.New("refused")

// checkRedirect follows a redirect to the same host, or to another host over https that is
// not a loopback, private or link-local address (a registry's blob CDN). Refused: a
// downgrade from https to http, and a hop into this host or its network (a loopback
// registry redirecting elsewhere included), where a registry could make ceval reach
// services it could not.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("%w: more than %d redirects from %s", ErrRefused, maxRedirects, via[0].URL.Host)
	}
	from, to := via[0].URL, req.URL
	if to.Host == from.Host && (to.Scheme == from.Scheme || to.Scheme == "https") {
		return nil
	}
	h := to.Hostname()
	ip := net.ParseIP(h)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()) || docker.IsLocalhost(from.Host) {
		return fmt.Errorf("%w: registry %s redirected to another host, %s; ceval follows a registry's redirects only to its own host or to a public https host", ErrRefused, from.Host, to.Redacted())
	}
	if to.Scheme != "https" {
		return fmt.Errorf("%w: registry %s redirected to %s, not https", ErrRefused, from.Host, to.Redacted())
	}
	return nil
}

// cappedTransport cuts the bodies of manifest responses at MaxManifestBytes.
type cappedTransport struct{ rt http.RoundTripper }

func (t cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.Path, "/manifests/") {
		return resp, err
	}
	if resp.ContentLength > MaxManifestBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: registry %s: manifest %s is %d bytes, over the %d byte bound", ErrRefused, req.URL.Host, req.URL.Path, resp.ContentLength, MaxManifestBytes)
	}
	resp.Body = &cappedBody{rc: resp.Body, left: MaxManifestBytes, host: req.URL.Host, path: req.URL.Path}
	return resp, nil
}

type cappedBody struct {
	rc         io.ReadCloser
	left       int64
	host, path string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%w: registry %s: manifest %s runs past the %d byte bound (an endless body?)", ErrRefused, b.host, b.path, MaxManifestBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left <= 0 && err == nil {
		// One byte more tells a manifest of exactly the bound from one that goes on.
		var one [1]byte
		if m, _ := b.rc.Read(one[:]); m > 0 {
			return n, fmt.Errorf("%w: registry %s: manifest %s runs past the %d byte bound (an endless body?)", ErrRefused, b.host, b.path, MaxManifestBytes)
		}
		err = io.EOF
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// Quiet returns ctx with containerd's client logging (its per-request info lines) off:
// pull and push report what matters in their errors and progress lines.
func Quiet(ctx context.Context) context.Context {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return log.WithLogger(ctx, logrus.NewEntry(l))
}

// Explain rewrites a pull or push error for ref so it names the file to fix.
func (o Options) Explain(ref string, err error) error {
	if err == nil {
		return nil
	}
	host := Host(ref)
	var unknownCA x509.UnknownAuthorityError
	var certInvalid x509.CertificateInvalidError
	var hostname x509.HostnameError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknownCA) || errors.As(err, &certInvalid) || errors.As(err, &hostname) || errors.As(err, &verify) {
		return configErrorf("registry %s presented a certificate this host does not trust; if you trust it, add its CA to %s: %w",
			host, filepath.Join(o.hostsDir(), host, "ca.crt"), err)
	}
	var status remoteerrors.ErrUnexpectedStatus
	unauth := errors.Is(err, docker.ErrInvalidAuthorization) || (errors.As(err, &status) && status.StatusCode == 401) || strings.Contains(err.Error(), "401 Unauthorized")
	if unauth {
		path := o.DockerConfigPath()
		creds, _ := loadCredentials(path)
		dc, _ := readDockerConfig(path)
		if name := dc.helperFor(normalizeHost(host)); name != "" {
			if _, ok := creds[normalizeHost(host)]; !ok {
				if _, lerr := exec.LookPath("docker-credential-" + name); lerr != nil {
					return configErrorf("registry %s wants credentials; %s names the credential helper docker-credential-%s, which is not on PATH: install it or add auths[%q] there: %w", host, path, name, host, err)
				}
				return configErrorf("registry %s refused the credentials of docker-credential-%s (named in %s); log in again with that helper: %w", host, name, path, err)
			}
		}
		if _, ok := creds[normalizeHost(host)]; ok {
			return configErrorf("registry %s refused the credentials from %s (auths[%q]); fix the user/password there: %w", host, path, host, err)
		}
		return configErrorf("registry %s wants credentials and %s has none for it; add auths[%q].auth = base64(USER:PASSWORD) there: %w", host, path, host, err)
	}
	return err
}

// Normalize completes a reference as docker does: "busybox" is
// docker.io/library/busybox:latest; a reference with a digest keeps only the digest.
func Normalize(ref string) (string, error) {
	n, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w; write HOST/REPO:TAG or HOST/REPO@sha256:DIGEST", ref, err)
	}
	return n.String(), nil
}

// Host is the registry host of a reference ("127.0.0.1:5000/a/b:t" -> "127.0.0.1:5000",
// "busybox" -> "docker.io").
func Host(ref string) string {
	if n, err := reference.ParseNormalizedNamed(ref); err == nil {
		return reference.Domain(n)
	}
	h, _, _ := strings.Cut(ref, "/")
	return h
}
