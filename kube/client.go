package kube

import (
	"bytes"
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

	"go.yaml.in/yaml/v3"
	"golang.org/x/time/rate"
)

// The REST client: what ceval asks of the API server, over net/http. Hand-written, not
// client-go: client-go's Clientset links every API group's typed client and apply
// configuration (with k8s.io/api's generated types, 50 MB of the binary and 30 MiB of every
// command's start-up RSS, measured) for the handful of requests here. It keeps what client-go
// did for ceval: the kubeconfig's current context (server, CA, client certificate, token or
// token file, basic auth, exec credential plugins, impersonation, proxy-url,
// tls-server-name, insecure-skip-tls-verify), client-side rate limiting (5 requests a second, bursts of 10, as
// client-go's default), the API server's Status as a typed error (*APIError), and watch
// streams (watch.go).

// APIError is the API server's refusal of a request: its HTTP status code and the Status
// it sent (Reason "NotFound", "AlreadyExists", "Conflict", ...).
type APIError struct {
	Code    int
	Reason  string
	Message string
}

func (e *APIError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("the server answered %d %s", e.Code, http.StatusText(e.Code))
}

// IsNotFound reports whether err is the API server's 404 NotFound.
func IsNotFound(err error) bool { return apiReason(err, "NotFound", http.StatusNotFound) }

// IsAlreadyExists reports whether err is the API server's 409 AlreadyExists.
func IsAlreadyExists(err error) bool { return apiReason(err, "AlreadyExists", 0) }

// IsGone reports whether err is the API server's 410 Gone (a watch's resource version expired).
func IsGone(err error) bool {
	return apiReason(err, "Expired", http.StatusGone) || apiReason(err, "Gone", http.StatusGone)
}

func apiReason(err error, reason string, code int) bool {
	var e *APIError
	if !errors.As(err, &e) {
		return false
	}
	return e.Reason == reason || e.Reason == "" && code != 0 && e.Code == code
}

// kubeconfig is the part of a kubeconfig file ceval reads.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
			TLSServerName            string `yaml:"tls-server-name"`
			ProxyURL                 string `yaml:"proxy-url"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string   `yaml:"name"`
		User userAuth `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

type userAuth struct {
	ClientCertificate     string      `yaml:"client-certificate"`
	ClientCertificateData string      `yaml:"client-certificate-data"`
	ClientKey             string      `yaml:"client-key"`
	ClientKeyData         string      `yaml:"client-key-data"`
	Token                 string      `yaml:"token"`
	TokenFile             string      `yaml:"tokenFile"`
	Username              string      `yaml:"username"`
	Password              string      `yaml:"password"`
	Exec                  *execConfig `yaml:"exec"`
	As                    string      `yaml:"as"`
	AsGroups              []string    `yaml:"as-groups"`
	AsUID                 string      `yaml:"as-uid"`
	AuthProvider          *struct {
		Name string `yaml:"name"`
	} `yaml:"auth-provider"`
}

type execConfig struct {
	Command    string   `yaml:"command"`
	Args       []string `yaml:"args"`
	APIVersion string   `yaml:"apiVersion"`
	Env        []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	ProvideClusterInfo bool `yaml:"provideClusterInfo"`
}

// client is a connection to one API server with the kubeconfig's credentials.
type client struct {
	host    *url.URL // scheme://host[:port][/prefix]
	tls     *tls.Config
	proxy   func(*http.Request) (*url.URL, error)
	http    *http.Client
	limiter *rate.Limiter
	auth    func(context.Context) (string, error) // the Authorization header, or ""
	header  http.Header                           // on every request: impersonation
	creds   *execCredentials                      // an exec plugin's, or nil
}

// loadKubeconfig reads path's current context into a client.
func loadKubeconfig(path string) (*client, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(data, &kc); err != nil {
		return nil, fmt.Errorf("not a kubeconfig: %w", err)
	}
	dir := filepath.Dir(path)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	if kc.CurrentContext == "" {
		return nil, errors.New("no current-context (set one with kubectl config use-context)")
	}
	ctxIdx := -1
	for i, c := range kc.Contexts {
		if c.Name == kc.CurrentContext {
			ctxIdx = i
		}
	}
	if ctxIdx < 0 {
		return nil, fmt.Errorf("current-context %q: no such context", kc.CurrentContext)
	}
	kctx := kc.Contexts[ctxIdx].Context
	cl := -1
	for i, c := range kc.Clusters {
		if c.Name == kctx.Cluster {
			cl = i
		}
	}
	if cl < 0 {
		return nil, fmt.Errorf("context %q: cluster %q: no such cluster", kc.CurrentContext, kctx.Cluster)
	}
	cluster := kc.Clusters[cl].Cluster
	var user userAuth
	if kctx.User != "" {
		found := false
		for _, u := range kc.Users {
			if u.Name == kctx.User {
				user, found = u.User, true
			}
		}
		if !found {
			return nil, fmt.Errorf("context %q: user %q: no such user", kc.CurrentContext, kctx.User)
		}
	}
	if user.AuthProvider != nil {
		return nil, fmt.Errorf("user %q: auth-provider %q is not supported: use an exec credential plugin (kubectl's own plugins for it are)", kctx.User, user.AuthProvider.Name)
	}
	if cluster.Server == "" {
		return nil, fmt.Errorf("cluster %q: no server", kctx.Cluster)
	}
	host, err := url.Parse(cluster.Server)
	if err != nil || host.Host == "" || (host.Scheme != "https" && host.Scheme != "http") {
		return nil, fmt.Errorf("cluster %q: server %q: want https://HOST[:PORT]", kctx.Cluster, cluster.Server)
	}
	host.Path = strings.TrimSuffix(host.Path, "/")

	tc := &tls.Config{ServerName: cluster.TLSServerName, InsecureSkipVerify: cluster.InsecureSkipTLSVerify, MinVersion: tls.VersionTLS12}
	ca, err := dataOrFile(cluster.CertificateAuthorityData, abs(cluster.CertificateAuthority))
	if err != nil {
		return nil, fmt.Errorf("cluster %q: certificate-authority: %w", kctx.Cluster, err)
	}
	if len(ca) > 0 {
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("cluster %q: certificate-authority: no PEM certificate in it", kctx.Cluster)
		}
	}
	cert, err := dataOrFile(user.ClientCertificateData, abs(user.ClientCertificate))
	if err != nil {
		return nil, fmt.Errorf("user %q: client-certificate: %w", kctx.User, err)
	}
	key, err := dataOrFile(user.ClientKeyData, abs(user.ClientKey))
	if err != nil {
		return nil, fmt.Errorf("user %q: client-key: %w", kctx.User, err)
	}
	if len(cert) > 0 || len(key) > 0 {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("user %q: client certificate and key: %w", kctx.User, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}

	c := &client{host: host, tls: tc, proxy: http.ProxyFromEnvironment, limiter: rate.NewLimiter(5, 10), header: http.Header{"User-Agent": {"ceval"}}}
	if user.As != "" {
		c.header.Set("Impersonate-User", user.As)
		for _, g := range user.AsGroups {
			c.header.Add("Impersonate-Group", g)
		}
		if user.AsUID != "" {
			c.header.Set("Impersonate-Uid", user.AsUID)
		}
	}
	if cluster.ProxyURL != "" {
		p, err := url.Parse(cluster.ProxyURL)
		if err != nil {
			return nil, fmt.Errorf("cluster %q: proxy-url: %w", kctx.Cluster, err)
		}
		c.proxy = http.ProxyURL(p)
	}
	switch {
	case user.Token != "":
		c.auth = func(context.Context) (string, error) { return "Bearer " + user.Token, nil }
	case user.TokenFile != "":
		c.auth = tokenFile(abs(user.TokenFile))
	case user.Username != "" || user.Password != "":
		basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(user.Username+":"+user.Password))
		c.auth = func(context.Context) (string, error) { return basic, nil }
	case user.Exec != nil:
		if user.Exec.Command == "" {
			return nil, fmt.Errorf("user %q: exec: no command", kctx.User)
		}
		c.creds = &execCredentials{cfg: *user.Exec, dir: dir}
		if user.Exec.ProvideClusterInfo {
			c.creds.cluster = map[string]any{"server": cluster.Server, "tls-server-name": cluster.TLSServerName,
				"insecure-skip-tls-verify": cluster.InsecureSkipTLSVerify, "proxy-url": cluster.ProxyURL,
				"certificate-authority-data": ca}
		}
		c.auth = c.creds.header
		if len(tc.Certificates) == 0 {
			tc.GetClientCertificate = c.creds.clientCertificate
		}
	}
	c.http = &http.Client{Transport: &http.Transport{
		Proxy: c.proxy,
		// client-go's dialer: 30 s to connect, TCP keep-alives every 30 s (a watch may idle).
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tc.Clone(), // its own: HTTP/2 adds "h2" to it, which upgrades must not offer
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 25,
		ForceAttemptHTTP2:   true,
	}}
	return c, nil
}

// dataOrFile is base64 data (a kubeconfig's *-data field) or the file's content.
func dataOrFile(data, file string) ([]byte, error) {
	if data != "" {
		return base64.StdEncoding.DecodeString(data)
	}
	if file != "" {
		return os.ReadFile(file)
	}
	return nil, nil
}

// tokenFile reads the token file again at most once a minute (it may be rotated).
func tokenFile(path string) func(context.Context) (string, error) {
	var mu sync.Mutex
	var tok string
	var read time.Time
	return func(context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if tok == "" || time.Since(read) > time.Minute {
			b, err := os.ReadFile(path)
			if err != nil {
				return "", fmt.Errorf("tokenFile: %w", err)
			}
			tok, read = strings.TrimSpace(string(b)), time.Now()
		}
		return "Bearer " + tok, nil
	}
}

// execCredentials runs a kubeconfig's exec plugin (client.authentication.k8s.io
// ExecCredential) and keeps what it printed until it expires or the server refuses it.
type execCredentials struct {
	cfg     execConfig
	dir     string
	cluster map[string]any // spec.cluster of KUBERNETES_EXEC_INFO, when the kubeconfig asks for it

	mu      sync.Mutex
	token   string
	cert    *tls.Certificate
	expires time.Time // zero: never
	got     bool
}

func (e *execCredentials) get(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.got && (e.expires.IsZero() || time.Now().Before(e.expires)) {
		return nil
	}
	apiVersion := e.cfg.APIVersion
	if apiVersion == "" {
		apiVersion = "client.authentication.k8s.io/v1"
	}
	spec := map[string]any{"interactive": false}
	if e.cluster != nil {
		spec["cluster"] = e.cluster
	}
	info, _ := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": "ExecCredential", "spec": spec})
	cmd := exec.CommandContext(ctx, e.cfg.Command, e.cfg.Args...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "KUBERNETES_EXEC_INFO="+string(info))
	for _, v := range e.cfg.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("exec credential plugin %s: %w: %s", e.cfg.Command, err, strings.TrimSpace(stderr.String()))
	}
	var cred struct {
		Status struct {
			Token                 string    `json:"token"`
			ClientCertificateData string    `json:"clientCertificateData"`
			ClientKeyData         string    `json:"clientKeyData"`
			ExpirationTimestamp   time.Time `json:"expirationTimestamp"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &cred); err != nil {
		return fmt.Errorf("exec credential plugin %s: its output is not an ExecCredential: %w", e.cfg.Command, err)
	}
	st := cred.Status
	e.token, e.cert, e.expires = st.Token, nil, st.ExpirationTimestamp
	if st.ClientCertificateData != "" || st.ClientKeyData != "" {
		pair, err := tls.X509KeyPair([]byte(st.ClientCertificateData), []byte(st.ClientKeyData))
		if err != nil {
			return fmt.Errorf("exec credential plugin %s: client certificate: %w", e.cfg.Command, err)
		}
		e.cert = &pair
	}
	if e.token == "" && e.cert == nil {
		return fmt.Errorf("exec credential plugin %s: printed neither a token nor a client certificate", e.cfg.Command)
	}
	e.got = true
	return nil
}

// expire forgets the credentials (the server refused them).
func (e *execCredentials) expire() {
	e.mu.Lock()
	e.got = false
	e.mu.Unlock()
}

func (e *execCredentials) header(ctx context.Context) (string, error) {
	if err := e.get(ctx); err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.token == "" {
		return "", nil
	}
	return "Bearer " + e.token, nil
}

func (e *execCredentials) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if err := e.get(context.Background()); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cert == nil {
		return &tls.Certificate{}, nil
	}
	return e.cert, nil
}

// url is the API server's URL of path with query.
func (c *client) url(path string, query url.Values) *url.URL {
	u := *c.host
	u.Path = c.host.Path + path
	u.RawQuery = query.Encode()
	return &u
}

// authorize sets the request's Authorization, User-Agent and impersonation headers.
func (c *client) authorize(req *http.Request) error {
	for k, v := range c.header {
		req.Header[k] = v
	}
	if c.auth == nil {
		return nil
	}
	h, err := c.auth(req.Context())
	if err != nil {
		return err
	}
	if h != "" {
		req.Header.Set("Authorization", h)
	}
	return nil
}

// send makes one request (after the rate limiter) and returns the response of a 2xx status;
// any other status is an *APIError from the Status body.
func (c *client) send(ctx context.Context, method, path string, query url.Values, in any) (*http.Response, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		if err := c.limiter.Wait(ctx); err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, method, c.url(path, query).String(), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if err := c.authorize(req); err != nil {
			return nil, err
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		apiErr := readStatus(resp)
		// An exec plugin's credentials the server refuses are fetched again, once.
		if resp.StatusCode == http.StatusUnauthorized && c.creds != nil && attempt == 1 {
			c.creds.expire()
			continue
		}
		return nil, apiErr
	}
}

// readStatus reads a failed response's Status into an *APIError (and closes its body).
func readStatus(resp *http.Response) *APIError {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{Code: resp.StatusCode}
	var st Status
	if json.Unmarshal(b, &st) == nil && (st.Message != "" || st.Reason != "") {
		e.Reason, e.Message = st.Reason, st.Message
		if st.Code != 0 {
			e.Code = int(st.Code)
		}
		return e
	}
	e.Reason = reasonForCode(resp.StatusCode)
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e.Message = fmt.Sprintf("the server answered %d: %s", resp.StatusCode, msg)
	return e
}

func reasonForCode(code int) string {
	switch code {
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusGone:
		return "Gone"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	}
	return ""
}

// do makes a request and decodes its JSON answer into out (unless out is nil).
func (c *client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	resp, err := c.send(ctx, method, path, query, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// Paths of the resources ceval uses.
func podsPath(ns string) string { return "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods" }
func podPath(ns, name string) string {
	return podsPath(ns) + "/" + url.PathEscape(name)
}
func policiesPath(ns string) string {
	return "/apis/networking.k8s.io/v1/namespaces/" + url.PathEscape(ns) + "/networkpolicies"
}
func policyPath(ns, name string) string { return policiesPath(ns) + "/" + url.PathEscape(name) }

// deleteNow is the body of a delete with grace period 0.
var deleteNow = map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}

// deleteOptions is the body of a delete with the default grace period.
var deleteOptions = map[string]any{"kind": "DeleteOptions", "apiVersion": "v1"}
