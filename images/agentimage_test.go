package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeTgz is an npm-style package tarball holding files under package/.
func fakeTgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	writeTestFile(t, tw, "package/package.json", []byte(`{"name":"fake"}`))
	for name, data := range files {
		writeTestFile(t, tw, name, []byte(data))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// registry serves tarballs by path and counts requests; bad makes it serve other bytes.
type registry struct {
	srv  *httptest.Server
	tgz  map[string][]byte
	hits atomic.Int32
	bad  atomic.Bool
}

func newRegistry(t *testing.T) *registry {
	r := &registry{tgz: map[string][]byte{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		b, ok := r.tgz[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		if r.bad.Load() {
			b = append([]byte("tampered"), b...)
		}
		w.Write(b)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// add publishes a package and returns a CLI that takes files (tar path -> image path) from it.
func (r *registry) add(t *testing.T, typ string, files map[string]string, to map[string]string, links ...link) AgentCLI {
	t.Helper()
	b := fakeTgz(t, files)
	p := "/" + typ + "-1.0.0.tgz"
	r.tgz[p] = b
	a := AgentCLI{Type: typ, Version: "1.0.0", Pin: Pin{Package: "@fake/" + typ, Version: "1.0.0", URL: r.srv.URL + p, SHA256: hexSHA(b)}, Links: links}
	for from, dst := range to {
		a.Files = append(a.Files, tarFile{PackageFile{from, int64(len(files[from])), hexSHA([]byte(files[from]))}, dst, 0o755})
	}
	return a
}

func TestFetchDownloadsOnceAndRedownloadsACorruptEntry(t *testing.T) {
	r := newRegistry(t)
	a := r.add(t, "codex", map[string]string{"package/bin/codex": "codex"}, nil)
	f := &Fetcher{Dir: filepath.Join(t.TempDir(), "dl")}
	p, err := f.Fetch(t.Context(), a.Pin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(t.Context(), a.Pin); err != nil {
		t.Fatal(err)
	}
	if n := r.hits.Load(); n != 1 {
		t.Fatalf("registry hit %d times for two fetches, want 1 (the second from the cache)", n)
	}
	if err := os.WriteFile(p, []byte("corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(t.Context(), a.Pin); err != nil {
		t.Fatal(err)
	}
	if got, _ := fileSHA256(p); got != a.Pin.SHA256 || r.hits.Load() != 2 {
		t.Fatalf("after corrupting the cache: sha256 %s, %d hits; want the pinned bytes downloaded again", got, r.hits.Load())
	}

	// A registry serving other bytes: an error naming both digests; the cache keeps nothing.
	os.WriteFile(p, []byte("corrupt"), 0o644)
	r.bad.Store(true)
	_, err = f.Fetch(t.Context(), a.Pin)
	if !errors.Is(err, ErrDownload) || !strings.Contains(err.Error(), "want "+a.Pin.SHA256) || !strings.Contains(err.Error(), a.Pin.URL) {
		t.Fatalf("tampered download: got %v, want ErrDownload naming the URL and the pinned sha256", err)
	}
	if r.hits.Load() != 3 {
		t.Fatalf("%d registry hits, want exactly one re-download", r.hits.Load())
	}
	ents, _ := os.ReadDir(f.Dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".part-") {
			t.Errorf("temporary file %s left in the cache", e.Name())
		}
	}
}

func TestFetchOfflineAndUnreachableErrorsSayWhatToDo(t *testing.T) {
	r := newRegistry(t)
	a := r.add(t, "codex", map[string]string{"package/bin/codex": "codex"}, nil)
	dir := t.TempDir()
	_, err := (&Fetcher{Dir: dir, Offline: true}).Fetch(t.Context(), a.Pin)
	if !errors.Is(err, ErrDownload) || !strings.Contains(err.Error(), "--offline") || !strings.Contains(err.Error(), a.Pin.URL) {
		t.Fatalf("offline, empty cache: %v; want an error naming --offline and the URL", err)
	}
	if r.hits.Load() != 0 {
		t.Fatal("--offline reached the registry")
	}
	r.srv.Close()
	_, err = (&Fetcher{Dir: dir}).Fetch(t.Context(), a.Pin)
	if !errors.Is(err, ErrDownload) || !strings.Contains(err.Error(), a.Pin.URL) || !strings.Contains(err.Error(), "reachable") {
		t.Fatalf("registry down: %v; want an error naming the URL that failed", err)
	}
}

func needAgentHostFiles(t *testing.T) {
	t.Helper()
	needBusybox(t)
	for _, p := range []string{MuslLoader, BashStatic} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true and %s is missing (apt-get install musl bash-static, or make setup)", p)
			}
			t.Skipf("%s missing: apt-get install musl bash-static", p)
		}
	}
}

// readTar returns a layer's headers and regular files' contents by name.
func readTar(t *testing.T, b []byte) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	hdrs, data := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hdrs, data
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs[h.Name] = h
		data[h.Name], _ = io.ReadAll(tr)
	}
}

func TestAgentLayerHoldsCLIsRealLoaderAndStaticBash(t *testing.T) {
	needAgentHostFiles(t)
	r := newRegistry(t)
	claude := r.add(t, "claude-code", map[string]string{"package/claude": "#!/bin/sh\necho claude\n", "package/README.md": "x"},
		map[string]string{"package/claude": "usr/local/bin/claude"})
	claude.Musl = true
	codex := r.add(t, "codex", map[string]string{"package/v/bin/codex": "codex!", "package/v/codex-path/rg": "rg!"},
		map[string]string{"package/v/bin/codex": "usr/local/lib/codex/bin/codex", "package/v/codex-path/rg": "usr/local/lib/codex/codex-path/rg"},
		link{"usr/local/bin/codex", "/usr/local/lib/codex/bin/codex"})
	f := &Fetcher{Dir: t.TempDir()}
	plan, err := planAgent(AgentOptions{CLIs: []AgentCLI{claude, codex}})
	if err != nil {
		t.Fatal(err)
	}
	paths := make([][]string, len(plan.cli))
	for i, a := range plan.cli {
		var files []PackageFile
		for _, tf := range a.Files {
			files = append(files, tf.PackageFile)
		}
		if paths[i], err = f.Extracted(t.Context(), a.Pin, files); err != nil {
			t.Fatal(err)
		}
	}
	var layer, again bytes.Buffer
	buf := make([]byte, 4096)
	if err := writeAgentTar(&layer, plan, paths, buf); err != nil {
		t.Fatal(err)
	}
	if err := writeAgentTar(&again, plan, paths, buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(layer.Bytes(), again.Bytes()) {
		t.Fatal("the same inputs gave two different layers")
	}
	hdrs, data := readTar(t, layer.Bytes())

	realLoader, err := filepath.EvalSymlinks(MuslLoader)
	if err != nil {
		t.Fatal(err)
	}
	wantLoader, _ := os.ReadFile(realLoader)
	wantBash, _ := os.ReadFile(BashStatic)
	wantSh, _ := os.ReadFile(DefaultBusybox) // busybox as a regular file: a Codex judge binds over /bin/sh alone
	for name, want := range map[string][]byte{
		"lib/ld-musl-x86_64.so.1":       wantLoader,
		"bin/bash":                      wantBash,
		"bin/sh":                        wantSh,
		"usr/local/bin/claude":          []byte("#!/bin/sh\necho claude\n"),
		"usr/local/lib/codex/bin/codex": []byte("codex!"),
	} {
		h := hdrs[name]
		if h == nil || h.Typeflag != tar.TypeReg || !bytes.Equal(data[name], want) {
			t.Errorf("%s: header %+v, %d bytes; want a regular file with the expected %d bytes", name, h, len(data[name]), len(want))
			continue
		}
		if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mode %o owner %d:%d, want 0755 root", name, h.Mode, h.Uid, h.Gid)
		}
	}
	if h := hdrs["usr/local/bin/codex"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/usr/local/lib/codex/bin/codex" {
		t.Errorf("usr/local/bin/codex: %+v, want a link to /usr/local/lib/codex/bin/codex", h)
	}
	for _, d := range []string{"lib/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/lib/codex/codex-path/"} {
		if h := hdrs[d]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o755 {
			t.Errorf("directory %s: %+v", d, h)
		}
	}
	if _, ok := hdrs["README.md"]; ok || len(hdrs) != 16 {
		var names []string
		for n := range hdrs {
			names = append(names, n)
		}
		t.Errorf("layer holds %d entries, want 16: %v", len(hdrs), names)
	}

	// A cached file changed after extraction is caught while the layer is written.
	if err := os.WriteFile(paths[1][0], []byte("evil!!"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = writeAgentTar(io.Discard, plan, paths, buf)
	var bad *corruptFileError
	if !errors.As(err, &bad) || bad.path != paths[1][0] {
		t.Fatalf("corrupt cached codex: got %v, want a corruptFileError for %s", err, paths[1][0])
	}
}

func TestPlanAgentChecksWithAndHostFiles(t *testing.T) {
	needAgentHostFiles(t)
	all, err := planAgent(AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	codexOnly, err := planAgent(AgentOptions{With: []string{"codex"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.cli) != 2 || len(codexOnly.cli) != 1 || all.inputs == codexOnly.inputs {
		t.Fatalf("plans: all %d CLIs, codex %d, inputs %s vs %s; want 2, 1 and different inputs", len(all.cli), len(codexOnly.cli), all.inputs, codexOnly.inputs)
	}
	for _, h := range codexOnly.host {
		if strings.Contains(h.to, "musl") {
			t.Errorf("codex alone needs no musl loader, plan has %s", h.to)
		}
	}
	for _, tc := range []struct {
		opts AgentOptions
		want string
	}{
		{AgentOptions{With: []string{"codex", "aider"}}, `unknown agent CLI "aider" in --with; choose from: claude-code, codex`},
		{AgentOptions{With: []string{}}, "pass --with with one or more of: claude-code, codex"},
		{AgentOptions{Musl: filepath.Join(t.TempDir(), "ld-musl")}, "apt-get install musl bash-static"},
		{AgentOptions{Bash: "/bin/sh"}, "apt-get install musl bash-static"},
		{AgentOptions{Musl: BashStatic}, "is an ELF ET_EXEC, want ET_DYN"},
	} {
		_, err := planAgent(tc.opts)
		if !errors.Is(err, ErrAgentInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want ErrAgentInput containing %q", tc.opts, err, tc.want)
		}
	}
}

func TestPinnedCLIsAreWellFormed(t *testing.T) {
	to := map[string]bool{}
	for _, a := range AgentCLIs {
		if !isHexSHA256(a.Pin.SHA256) || !strings.HasPrefix(a.Pin.URL, "https://registry.npmjs.org/") || !strings.HasSuffix(a.Pin.URL, ".tgz") {
			t.Errorf("%s: pin %+v", a.Type, a.Pin)
		}
		base := map[string]bool{}
		for _, f := range a.Files {
			if !isHexSHA256(f.SHA256) || f.Size <= 0 || base[path.Base(f.Path)] || to[f.To] || strings.HasPrefix(f.To, "/") {
				t.Errorf("%s: file %+v (cache names and image paths must be unique and relative)", a.Type, f)
			}
			base[path.Base(f.Path)], to[f.To] = true, true
		}
	}
}

// isHexSHA256 reports whether s looks like a hex sha256.
func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}
