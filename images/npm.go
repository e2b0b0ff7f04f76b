package images

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ErrDownload is wrapped by errors about fetching a pinned package: the registry could not
// be reached, served other bytes than the pin, or --offline found nothing usable cached.
var ErrDownload = errors.New("cannot get pinned package")

// Pin is one exact npm package tarball, identified by its sha256.
type Pin struct {
	Package string // npm name, e.g. "@openai/codex"
	Version string // the exact version published, e.g. "0.169.0-linux-x64"
	URL     string // the tarball
	SHA256  string // hex sha256 of the tarball
	Size    int64  // bytes of the tarball; 0: at most maxDownload
}

// maxDownload bounds a download whose pin states no size; stallTimeout is how long a
// download may go without a byte before it is abandoned.
const (
	maxDownload  = 2 << 30
	stallTimeout = 60 * time.Second
)

func (p Pin) String() string { return p.Package + "@" + p.Version }

// file is the name the tarball has in the download cache: the URL's last element, which
// npm makes unique per package and version.
func (p Pin) file() string { return path.Base(p.URL) }

// DownloadCacheDir is $XDG_CACHE_HOME/ceval/dl, else ~/.cache/ceval/dl.
func DownloadCacheDir() (string, error) {
	dir, err := DefaultCacheDir() // .../ceval/preflight
	if err != nil {
		return "", fmt.Errorf("download cache: %w", err)
	}
	return filepath.Join(filepath.Dir(dir), "dl"), nil
}

// Fetcher gets pinned tarballs into a local cache, checking each one's sha256 every time
// it hands it out.
type Fetcher struct {
	Dir     string       // the cache; "" = DownloadCacheDir()
	Offline bool         // never download: a missing or corrupt cache entry is an error
	Client  *http.Client // nil = a client with connect and header timeouts
	Log     io.Writer    // progress lines; nil = none
}

// Fetch returns the path of pin's tarball in the cache. A cached file is checked against
// the pin's sha256; a missing or corrupt one is downloaded (to a temporary file, checked,
// then renamed into place), once: bytes that still do not match are an error.
func (f *Fetcher) Fetch(ctx context.Context, pin Pin) (string, error) {
	dir, err := f.cacheDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, pin.file())
	got, err := fileSHA256(p)
	switch {
	case err == nil && got == pin.SHA256:
		return p, nil
	case err == nil:
		f.logf("cached %s has sha256 %s, want %s: downloading it again\n", p, got, pin.SHA256)
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%w %s: read cached %s: %w", ErrDownload, pin, p, err)
	}
	if f.Offline {
		what := "is not in the cache"
		if err == nil {
			what = "is corrupt in the cache"
		}
		return "", fmt.Errorf("%w %s: %s %s and --offline forbids downloading it; run once without --offline, or put the file from %s (sha256 %s) there",
			ErrDownload, pin, p, what, pin.URL, pin.SHA256)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%w %s: create cache directory: %w", ErrDownload, pin, err)
	}
	if err := f.download(ctx, pin, p); err != nil {
		return "", err
	}
	return p, nil
}

func (f *Fetcher) logf(format string, args ...any) {
	if f.Log != nil {
		fmt.Fprintf(f.Log, format, args...)
	}
}

func (f *Fetcher) client() *http.Client {
	if f.Client != nil {
		return f.Client
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}}
}

// download writes pin's tarball to dst through a temporary file in the same directory,
// checking its sha256 before the rename, so dst is either absent, old or complete.
func (f *Fetcher) download(parent context.Context, pin Pin, dst string) (err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: download %s: %s", ErrDownload, pin, pin.URL, fmt.Sprintf(format, args...))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pin.URL, nil)
	if err != nil {
		return fail("%v", err)
	}
	start := time.Now()
	f.logf("downloading %s from %s\n", pin, pin.URL)
	resp, err := f.client().Do(req)
	if err != nil {
		return fail("%v (is the npm registry reachable from this host? if a proxy is needed set HTTPS_PROXY; or build offline with --offline after copying the file into %s)", err, filepath.Dir(dst))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail("the registry answered %s", resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+pin.file()+".part-*")
	if err != nil {
		return fail("%v", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// A registry or proxy could send without end, or stall: the pinned size bounds the
	// bytes (the sha256 is checked after), and a stall cancels the request.
	limit := pin.Size
	if limit <= 0 {
		limit = maxDownload
	}
	stall := time.AfterFunc(stallTimeout, cancel)
	defer stall.Stop()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), &progressReader{r: io.LimitReader(resp.Body, limit+1), onRead: func() { stall.Reset(stallTimeout) }})
	switch {
	case err != nil && ctx.Err() != nil && parent.Err() == nil:
		return fail("no byte for %s after %d bytes: the registry stalled", stallTimeout, n)
	case err != nil:
		return fail("after %d bytes: %v", n, err)
	case n > limit:
		return fail("more than the %d bytes pinned: the registry (or a proxy) serves other bytes than ceval pins; nothing was cached", limit)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != pin.SHA256 {
		return fail("got %d bytes with sha256 %s, want %s: the registry (or a proxy) served other bytes than ceval pins; nothing was cached", n, got, pin.SHA256)
	}
	if err := tmp.Sync(); err != nil {
		return fail("%v", err)
	}
	if err := tmp.Close(); err != nil {
		return fail("%v", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fail("%v", err)
	}
	f.logf("downloaded %s (%d MB) in %s\n", pin, n>>20, time.Since(start).Round(time.Millisecond))
	return nil
}

// PackageFile is one file inside a package tarball, pinned by size and sha256.
type PackageFile struct {
	Path   string // in the tarball, e.g. "package/claude"
	Size   int64
	SHA256 string
}

// extractDir is where pin's extracted files live: beside the tarball, named after it.
func (f *Fetcher) extractDir(pin Pin) (string, error) {
	dir, err := f.cacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, strings.TrimSuffix(pin.file(), ".tgz")), nil
}

// cacheDir is f.Dir, or the default download cache.
func (f *Fetcher) cacheDir() (string, error) {
	if f.Dir != "" {
		return f.Dir, nil
	}
	return DownloadCacheDir()
}

// extractedPath is where file of pin is kept once extracted.
func (f *Fetcher) extractedPath(pin Pin, file PackageFile) (string, error) {
	dir, err := f.extractDir(pin)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, path.Base(file.Path)), nil
}

// Extracted returns the cache paths of files, extracted from pin's tarball. A file already
// extracted with its pinned size is returned as it is: whoever reads it must check its
// sha256 as it reads (the agent layer does). Missing ones are extracted from the tarball
// (fetched and checked by Fetch), each checked against its pinned sha256 and renamed into
// place. Gunzipping is the slow part of a build, so it happens once per pin.
func (f *Fetcher) Extracted(ctx context.Context, pin Pin, files []PackageFile) ([]string, error) {
	paths := make([]string, len(files))
	missing := map[string]int{}
	for i, file := range files {
		p, err := f.extractedPath(pin, file)
		if err != nil {
			return nil, err
		}
		paths[i] = p
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Size() != file.Size {
			missing[file.Path] = i
		}
	}
	if len(missing) == 0 {
		return paths, nil
	}
	tgz, err := f.Fetch(ctx, pin)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(paths[0]), 0o755); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrDownload, pin, err)
	}
	start := time.Now()
	if err := extractFiles(tgz, pin, files, paths, missing); err != nil {
		return nil, err
	}
	f.logf("extracted %d file(s) of %s in %s\n", len(files), pin, time.Since(start).Round(time.Millisecond))
	return paths, nil
}

// extractFiles streams the gzipped tarball at tgz once and writes each file named in
// missing (tar path -> index into files and paths) atomically to its path.
func extractFiles(tgz string, pin Pin, files []PackageFile, paths []string, missing map[string]int) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: extract from %s: %s", ErrDownload, pin, tgz, fmt.Sprintf(format, args...))
	}
	fh, err := os.Open(tgz)
	if err != nil {
		return fail("%v", err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(fh, 1<<20))
	if err != nil {
		return fail("%v", err)
	}
	tr := tar.NewReader(zr)
	buf := make([]byte, 1<<20)
	for len(missing) > 0 {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail("%v", err)
		}
		i, ok := missing[path.Clean(hdr.Name)]
		if !ok {
			continue
		}
		delete(missing, path.Clean(hdr.Name))
		if hdr.Typeflag != tar.TypeReg {
			return fail("%s is not a regular file", hdr.Name)
		}
		if err := writeChecked(paths[i], onlyReader{tr}, files[i], buf); err != nil {
			return fail("%v", err)
		}
	}
	if len(missing) > 0 {
		var names []string
		for n := range missing {
			names = append(names, n)
		}
		sort.Strings(names)
		return fail("the package lacks %s", strings.Join(names, ", "))
	}
	return nil
}

// writeChecked writes r to dst through a temporary file, renaming it into place only when
// its size and sha256 match file's pins.
func writeChecked(dst string, r io.Reader, file PackageFile, buf []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".part-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.CopyBuffer(onlyWriter{io.MultiWriter(tmp, h)}, r, buf)
	if err != nil {
		return fmt.Errorf("%s: %w", file.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != file.Size || got != file.SHA256 {
		return fmt.Errorf("%s is %d bytes with sha256 %s, want %d bytes with sha256 %s", file.Path, n, got, file.Size, file.SHA256)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// fileSHA256 returns the hex sha256 of the file at p.
// progressReader calls onRead after every read that returned bytes.
type progressReader struct {
	r      io.Reader
	onRead func()
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.onRead()
	}
	return n, err
}

func fileSHA256(p string) (string, error) {
	fh, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
