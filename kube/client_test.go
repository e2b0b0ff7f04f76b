package kube

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAPI is an API server over TLS that answers /version and hands everything else to handle.
func fakeAPI(t *testing.T, handle http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			fmt.Fprint(w, `{"gitVersion":"v1.37.2"}`)
			return
		}
		handle(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// writeKubeconfig writes a kubeconfig for srv (its CA in a file beside it, named relatively)
// whose current context uses user, and a decoy context first.
func writeKubeconfig(t *testing.T, srv *httptest.Server, user string) string {
	t.Helper()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: real
clusters:
- name: decoy
  cluster: {server: "https://192.0.2.1:6443"}
- name: fake
  cluster:
    server: %s
    certificate-authority: ca.crt
contexts:
- name: decoy
  context: {cluster: decoy, user: decoy}
- name: real
  context: {cluster: fake, user: me, namespace: ignored}
users:
- name: decoy
  user: {token: wrong}
- name: me
  user:
%s
`, srv.URL, user)
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": msg, "code": code})
}

// Connect uses the current context's cluster, CA (a path relative to the kubeconfig), token
// and impersonation, and the API server's Status is a typed error.
func TestConnectUsesTheCurrentContextAndTheServersStatusIsTyped(t *testing.T) {
	var seen atomic.Int32
	srv := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("Impersonate-User") != "system:serviceaccount:ns:sa" ||
			strings.Join(r.Header.Values("Impersonate-Group"), ",") != "g1,g2" || r.Header.Get("User-Agent") != "ceval" {
			status(w, 401, "Unauthorized", "bad credentials")
			return
		}
		switch r.URL.Path {
		case "/api/v1/namespaces/evals/pods/ceval-gone":
			status(w, 404, "NotFound", `pods "ceval-gone" not found`)
		case "/apis/networking.k8s.io/v1/namespaces/evals/networkpolicies":
			status(w, 409, "AlreadyExists", `networkpolicies "ceval-r1" already exists`)
		default:
			w.WriteHeader(500)
			fmt.Fprint(w, "not JSON")
		}
	})
	c, err := Connect(context.Background(), writeKubeconfig(t, srv, "    token: s3cret\n    as: system:serviceaccount:ns:sa\n    as-groups: [g1, g2]"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != srv.URL {
		t.Errorf("host %s, want %s", c.Host, srv.URL)
	}
	r := &Run{cluster: c, Namespace: "evals", Name: "ceval-gone"}
	var lost *PodLostError
	if err := r.Lost(context.Background()); !errors.As(err, &lost) || lost.Reason != "Deleted" {
		t.Errorf("Lost of a Pod the server does not have: %v, want a *PodLostError", err)
	}
	if err := r.Delete(context.Background()); err == nil || IsNotFound(err) || !strings.Contains(err.Error(), "answered 500: not JSON") {
		// The Pod's 404 is not an error; the policy's 500 (not JSON) is, with its body.
		t.Errorf("Delete: %v", err)
	}
	_, err = c.Start(context.Background(), testConfig())
	if !IsAlreadyExists(err) || IsNotFound(err) || !strings.Contains(err.Error(), `networkpolicies "ceval-r1" already exists`) {
		t.Errorf("Start over an existing policy: %v, want AlreadyExists with the server's message", err)
	}
	if seen.Load() < 4 {
		t.Errorf("%d requests", seen.Load())
	}
}

func TestConnectRefusesABadKubeconfigSayingWhy(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ kc, want string }{
		"no context":     {"clusters: []\n", "no current-context"},
		"missing ctx":    {"current-context: x\n", `current-context "x": no such context`},
		"missing user":   {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: 'https://h'}}]\n", `user "u": no such user`},
		"auth provider":  {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: 'https://h'}}]\nusers: [{name: u, user: {auth-provider: {name: gcp}}}]\n", "auth-provider \"gcp\" is not supported"},
		"bad server":     {"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: 'h:1'}}]\n", "want https://HOST[:PORT]"},
		"missing CA":     {"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: 'https://h', certificate-authority: nope.crt}}]\n", "certificate-authority"},
		"not a kubeconf": {"[", "not a kubeconfig"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			if err := os.WriteFile(p, []byte(tc.kc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Connect(context.Background(), p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("%v, want an error naming %s and saying %q", err, p, tc.want)
			}
		})
	}
}

// An exec credential plugin (told the cluster: provideClusterInfo) gets its
// KUBERNETES_EXEC_INFO, and its token is used until the server refuses it; then the plugin
// runs again, once.
func TestExecPluginTokenIsFetchedAgainWhenRefused(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	plugin := filepath.Join(dir, "plugin")
	// Each run prints the token tok-N, N its run number; KUBERNETES_EXEC_INFO must be set.
	script := fmt.Sprintf(`#!/bin/sh
case "$KUBERNETES_EXEC_INFO" in *'"kind":"ExecCredential"'*'"server":"https://'*) ;; *) echo "no exec info with the cluster: $KUBERNETES_EXEC_INFO" >&2; exit 1;; esac
n=$(($(cat %[1]s 2>/dev/null || echo 0) + 1)); echo $n > %[1]s
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-%%s-%%s"}}' "$n" "$EXTRA"
`, count)
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	accept := "Bearer tok-1-x"
	srv := fakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ok := r.Header.Get("Authorization") == accept
		mu.Unlock()
		if !ok {
			status(w, 401, "Unauthorized", "no")
			return
		}
		fmt.Fprint(w, `{"metadata":{},"items":[{"metadata":{"labels":{"ceval.dev/controller":"a"}}}]}`)
	})
	c, err := Connect(context.Background(), writeKubeconfig(t, srv, fmt.Sprintf("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: %s\n      env: [{name: EXTRA, value: x}]\n      provideClusterInfo: true", plugin)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Controllers(context.Background(), "evals"); err != nil {
		t.Fatalf("with the plugin's first token: %v", err)
	}
	mu.Lock()
	accept = "Bearer tok-2-x" // the first one expired on the server's side
	mu.Unlock()
	got, err := c.Controllers(context.Background(), "evals")
	if err != nil || got["a"] != 2 {
		t.Fatalf("after the server refused the first token: %v %v", got, err)
	}
	if b, _ := os.ReadFile(count); strings.TrimSpace(string(b)) != "2" {
		t.Errorf("the plugin ran %s times, want 2", b)
	}
}

// fakePods serves one Pod's list and watch requests: each list answers the next of lists
// (resource version and whether the Pod is there), each watch the next script of events.
type fakePods struct {
	mu      sync.Mutex
	lists   []string   // JSON PodLists, or "500" or "403" answering that status
	watches [][]string // watch events, one JSON object a line; a "410" line answers 410 Gone
	rvs     []string   // the resourceVersion of each watch request
	nlists  int
}

func (f *fakePods) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Query().Get("fieldSelector") != "metadata.name=ceval-r1" {
		status(w, 400, "BadRequest", "selector "+r.URL.Query().Get("fieldSelector"))
		return
	}
	if r.URL.Query().Get("watch") != "true" {
		f.nlists++
		if len(f.lists) == 0 {
			status(w, 500, "InternalError", "no more lists")
			return
		}
		l := f.lists[0]
		f.lists = f.lists[1:]
		switch l {
		case "500":
			status(w, 500, "InternalError", "etcd is busy")
		case "403":
			status(w, 403, "Forbidden", `pods is forbidden: User "x" cannot list resource "pods"`)
		default:
			fmt.Fprint(w, l)
		}
		return
	}
	f.rvs = append(f.rvs, r.URL.Query().Get("resourceVersion"))
	if r.URL.Query().Get("allowWatchBookmarks") != "true" {
		status(w, 400, "BadRequest", "no bookmarks")
		return
	}
	if len(f.watches) == 0 {
		status(w, 500, "InternalError", "no more watches")
		return
	}
	evs := f.watches[0]
	f.watches = f.watches[1:]
	for _, e := range evs {
		if e == "410" {
			status(w, 410, "Expired", "too old resource version")
			return
		}
		fmt.Fprintln(w, e)
	}
}

func podJSON(rv, phase string) string {
	return fmt.Sprintf(`{"metadata":{"name":"ceval-r1","namespace":"evals","resourceVersion":%q},"spec":{"containers":[]},"status":{"phase":%q}}`, rv, phase)
}

func event(typ, obj string) string { return fmt.Sprintf(`{"type":%q,"object":%s}`, typ, obj) }

// Wait sees the listed Pod first, then its changes; a watch that ends resumes from the last
// version seen (a bookmark's too); an expired version (410 Gone, as a status or an ERROR
// event) lists again.
func TestWaitResumesAWatchAndListsAgainWhenItsVersionExpired(t *testing.T) {
	f := &fakePods{
		lists: []string{
			`{"metadata":{"resourceVersion":"10"},"items":[` + podJSON("9", "Pending") + `]}`,
			`{"metadata":{"resourceVersion":"30"},"items":[` + podJSON("29", "Running") + `]}`,
			`{"metadata":{"resourceVersion":"50"},"items":[` + podJSON("49", "Running") + `]}`,
		},
		watches: [][]string{
			{event("MODIFIED", podJSON("11", "Pending")), event("BOOKMARK", `{"metadata":{"resourceVersion":"15"}}`)}, // ends
			{"410"}, // -> list (rv 30)
			{event("ERROR", `{"kind":"Status","code":410,"reason":"Expired","message":"too old"}`)}, // -> list (rv 50)
			{event("MODIFIED", podJSON("51", "Running")), event("MODIFIED", podJSON("52", "Succeeded"))},
		},
	}
	srv := fakeAPI(t, f.ServeHTTP)
	c, err := Connect(context.Background(), writeKubeconfig(t, srv, "    token: t"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := (&Run{cluster: c, Namespace: "evals", Name: "ceval-r1"}).Wait(ctx)
	if err != nil || p.Status.Phase != PodSucceeded || p.ResourceVersion != "52" {
		t.Fatalf("Wait: %+v %v", p, err)
	}
	if want := []string{"10", "15", "30", "50"}; strings.Join(f.rvs, ",") != strings.Join(want, ",") || f.nlists != 3 {
		t.Errorf("watched from %v after %d lists, want %v after 3", f.rvs, f.nlists, want)
	}
}

// A Pod that is not there at the first list, or is deleted while watched, or is gone when
// the watch lists again, is a *PodLostError, not a wait until the deadline.
func TestWaitOnAPodThatIsGoneIsLost(t *testing.T) {
	for name, f := range map[string]*fakePods{
		"never there": {lists: []string{`{"metadata":{"resourceVersion":"10"},"items":[]}`}},
		"deleted": {
			lists:   []string{`{"metadata":{"resourceVersion":"10"},"items":[` + podJSON("9", "Running") + `]}`},
			watches: [][]string{{event("DELETED", podJSON("12", "Running"))}},
		},
		"gone at the relist": {
			lists: []string{
				`{"metadata":{"resourceVersion":"10"},"items":[` + podJSON("9", "Running") + `]}`,
				`{"metadata":{"resourceVersion":"20"},"items":[]}`,
			},
			watches: [][]string{{"410"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := fakeAPI(t, f.ServeHTTP)
			c, err := Connect(context.Background(), writeKubeconfig(t, srv, "    token: t"))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = (&Run{cluster: c, Namespace: "evals", Name: "ceval-r1"}).Wait(ctx)
			var lost *PodLostError
			if !errors.As(err, &lost) || lost.Reason != "Deleted" || ctx.Err() != nil {
				t.Errorf("Wait: %v, want a *PodLostError at once", err)
			}
		})
	}
}

// A list the server fails (5xx) is asked again; one it refuses (403) ends the wait at once
// with its message, not at the caller's deadline.
func TestWaitRetriesAFailedListButNotARefusedOne(t *testing.T) {
	f := &fakePods{
		lists:   []string{"500", `{"metadata":{"resourceVersion":"10"},"items":[` + podJSON("9", "Succeeded") + `]}`},
		watches: nil,
	}
	srv := fakeAPI(t, f.ServeHTTP)
	c, err := Connect(context.Background(), writeKubeconfig(t, srv, "    token: t"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := &Run{cluster: c, Namespace: "evals", Name: "ceval-r1"}
	if p, err := r.Wait(ctx); err != nil || p.Status.Phase != PodSucceeded || f.nlists != 2 {
		t.Errorf("Wait after a 500: %v %v (%d lists)", p, err, f.nlists)
	}
	f.lists = []string{"403", "403"}
	start := time.Now()
	_, err = r.Wait(ctx)
	if err == nil || !strings.Contains(err.Error(), "cannot list resource") || time.Since(start) > 5*time.Second {
		t.Errorf("Wait on a refused list: %v after %v, want the server's refusal at once", err, time.Since(start))
	}
}
