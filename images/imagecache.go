package images

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ImageCacheDir is $XDG_CACHE_HOME/ceval/images, else ~/.cache/ceval/images: built
// package images by the digest of their inputs, so a fresh containerd (a CI run) imports
// them in seconds instead of building them again.
func ImageCacheDir() (string, error) {
	dir, err := DefaultCacheDir() // .../ceval/preflight
	if err != nil {
		return "", fmt.Errorf("image cache: %w", err)
	}
	return filepath.Join(filepath.Dir(dir), "images"), nil
}

// imageCache holds one directory per inputs digest: entry.json and blobs/sha256/DIGEST
// (the image's manifest, config and uncompressed layers). Whoever can write it could hand
// ceval any layer, so it must be private to this user; every blob is checked against its
// digest on import and the image is preflighted again before a run uses it.
type imageCache struct{ dir string }

// cacheEntryFormat changes whenever entry.json or the entry layout changes meaning.
const cacheEntryFormat = "ceval-image-cache-v1"

// entryMeta is entry.json.
type entryMeta struct {
	Format      string             `json:"format"`
	Manifest    ocispec.Descriptor `json:"manifest"`
	Versions    []string           `json:"versions,omitempty"`
	Neutralised []Finding          `json:"neutralised,omitempty"`
}

// cacheEntry is one complete image in the cache.
type cacheEntry struct {
	dir      string
	meta     entryMeta
	manifest ocispec.Manifest
}

func openImageCache(dir string) (*imageCache, error) {
	if dir == "" {
		var err error
		if dir, err = ImageCacheDir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("image cache: %w", err)
	}
	if err := checkPrivate(dir, true); err != nil {
		return nil, fmt.Errorf("image cache: %w", err)
	}
	return &imageCache{dir: dir}, nil
}

func (c *imageCache) entryDir(inputs digest.Digest) string {
	return filepath.Join(c.dir, inputs.Algorithm().String()+"-"+inputs.Encoded())
}

// get returns the complete entry for inputs; false when there is none or it is unusable
// (not ours, unreadable, another format).
func (c *imageCache) get(inputs digest.Digest) (*cacheEntry, bool) {
	if inputs.Validate() != nil {
		return nil, false
	}
	dir := c.entryDir(inputs)
	if checkPrivate(dir, true) != nil || checkPrivate(filepath.Join(dir, "entry.json"), false) != nil {
		return nil, false
	}
	e, err := readEntry(dir)
	if err != nil {
		return nil, false
	}
	return e, true
}

func readEntry(dir string) (*cacheEntry, error) {
	b, err := os.ReadFile(filepath.Join(dir, "entry.json"))
	if err != nil {
		return nil, err
	}
	e := &cacheEntry{dir: dir}
	if err := json.Unmarshal(b, &e.meta); err != nil {
		return nil, err
	}
	if e.meta.Format != cacheEntryFormat || e.meta.Manifest.Digest.Validate() != nil {
		return nil, fmt.Errorf("image cache entry %s: unknown format", dir)
	}
	mb, err := os.ReadFile(e.blobPath(e.meta.Manifest.Digest))
	if err != nil {
		return nil, err
	}
	if digest.FromBytes(mb) != e.meta.Manifest.Digest {
		return nil, fmt.Errorf("image cache entry %s: manifest does not match its digest", dir)
	}
	if err := json.Unmarshal(mb, &e.manifest); err != nil {
		return nil, err
	}
	for _, d := range append([]ocispec.Descriptor{e.manifest.Config}, e.manifest.Layers...) {
		if d.Digest.Validate() != nil {
			return nil, fmt.Errorf("image cache entry %s: bad digest %q", dir, d.Digest)
		}
		fi, err := os.Stat(e.blobPath(d.Digest))
		if err != nil || fi.Size() != d.Size {
			return nil, fmt.Errorf("image cache entry %s: blob %s missing or truncated", dir, d.Digest)
		}
	}
	return e, nil
}

func (e *cacheEntry) blobPath(d digest.Digest) string {
	return filepath.Join(e.dir, "blobs", d.Algorithm().String(), d.Encoded())
}

// size is the uncompressed size of the image's layers.
func (e *cacheEntry) size() int64 {
	var n int64
	for _, l := range e.manifest.Layers {
		n += l.Size
	}
	return n
}

// versionsOf returns the installed "name=version" of each requested package.
func (e *cacheEntry) versionsOf(requested []string) []string {
	var out []string
	for _, r := range requested {
		name, _, _ := strings.Cut(r, "=")
		for _, v := range e.meta.Versions {
			if strings.HasPrefix(v, name+"=") {
				out = append(out, v)
			}
		}
	}
	return out
}

// entryWriter builds one entry in a temporary directory of the cache; commit renames it
// into place, abort removes it.
type entryWriter struct {
	cache   *imageCache
	inputs  digest.Digest
	dir     string
	done    bool
	replace bool // commit replaces an entry with the same inputs (a forced build)
}

func (c *imageCache) create(inputs digest.Digest) (*entryWriter, error) {
	dir, err := os.MkdirTemp(c.dir, ".build-")
	if err != nil {
		return nil, fmt.Errorf("image cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("image cache: %w", err)
	}
	return &entryWriter{cache: c, inputs: inputs, dir: dir}, nil
}

func (w *entryWriter) abort() {
	if !w.done {
		os.RemoveAll(w.dir)
	}
}

func (w *entryWriter) blobPath(d digest.Digest) string {
	return filepath.Join(w.dir, "blobs", d.Algorithm().String(), d.Encoded())
}

// addLayer stores the uncompressed layer that write produces and returns its descriptor.
func (w *entryWriter) addLayer(write func(io.Writer) (rootfsResult, error)) (ocispec.Descriptor, rootfsResult, error) {
	f, err := os.CreateTemp(filepath.Join(w.dir, "blobs", "sha256"), ".layer-")
	if err != nil {
		return ocispec.Descriptor{}, rootfsResult{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := digest.SHA256.Digester()
	cw := &countWriter{}
	bw := bufio.NewWriterSize(io.MultiWriter(f, h.Hash(), cw), layerChunk)
	res, err := write(bw)
	if err != nil {
		return ocispec.Descriptor{}, res, err
	}
	if err := bw.Flush(); err != nil {
		return ocispec.Descriptor{}, res, err
	}
	if err := f.Close(); err != nil {
		return ocispec.Descriptor{}, res, err
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: h.Digest(), Size: cw.n}
	if err := os.Rename(f.Name(), w.blobPath(desc.Digest)); err != nil {
		return ocispec.Descriptor{}, res, err
	}
	return desc, res, nil
}

// addCLILayer stores the agent CLI layer (the same bytes build-agent's CLI layer has
// without its host files).
func (w *entryWriter) addCLILayer(ctx context.Context, f *Fetcher, cli []AgentCLI) (ocispec.Descriptor, error) {
	if f == nil {
		f = &Fetcher{}
	}
	plan := &agentPlan{cli: cli}
	paths := make([][]string, len(cli))
	for i, a := range cli {
		files := make([]PackageFile, len(a.Files))
		for j, tf := range a.Files {
			files[j] = tf.PackageFile
		}
		var err error
		if paths[i], err = f.Extracted(ctx, a.Pin, files); err != nil {
			return ocispec.Descriptor{}, err
		}
	}
	buf := make([]byte, layerChunk)
	desc, _, err := w.addLayer(func(dst io.Writer) (rootfsResult, error) {
		return rootfsResult{}, writeAgentTar(dst, plan, paths, buf)
	})
	var bad *corruptFileError
	if errors.As(err, &bad) {
		return ocispec.Descriptor{}, fmt.Errorf("%w: %w; remove %s and build again", ErrDownload, bad, filepath.Dir(bad.path))
	}
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("write the agent CLI layer: %w", err)
	}
	return desc, nil
}

// preflight scans the stored layers with the scan `images check` and `images label` use,
// and refuses an image that holds a setuid/setgid file or a file capability.
func (w *entryWriter) preflight(name string, layers []ocispec.Descriptor) error {
	v := newFSView()
	for i, l := range layers {
		f, err := os.Open(w.blobPath(l.Digest))
		if err != nil {
			return err
		}
		err = v.addLayer(bufio.NewReaderSize(f, 1<<20))
		f.Close()
		if err != nil {
			return fmt.Errorf("preflight %s: layer %d: %w", name, i, err)
		}
	}
	if fs := v.sortedFindings(); len(fs) > 0 {
		return fmt.Errorf("%w: refusing to label image %s: it holds %d setuid/setgid or file-capability file(s): %s",
			ErrNotRunnable, name, len(fs), summarize(fs, 5))
	}
	return nil
}

// commit writes the config, manifest and entry.json, and moves the entry into place. When
// another build committed the same inputs first, that entry is kept and this one removed.
func (w *entryWriter) commit(cfg ocispec.Image, layers []ocispec.Descriptor, meta entryMeta) (*cacheEntry, error) {
	cb, err := jsonBlob(ocispec.MediaTypeImageConfig, cfg)
	if err != nil {
		return nil, err
	}
	mb, err := packageManifest(cb, layers)
	if err != nil {
		return nil, err
	}
	for _, b := range []blob{cb, mb} {
		if err := os.WriteFile(w.blobPath(b.desc.Digest), b.data, 0o600); err != nil {
			return nil, fmt.Errorf("image cache: %w", err)
		}
	}
	meta.Format = cacheEntryFormat
	meta.Manifest = mb.desc
	meta.Manifest.Platform = &ocispec.Platform{OS: cfg.OS, Architecture: cfg.Architecture}
	jb, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(w.dir, "entry.json"), jb, 0o600); err != nil {
		return nil, fmt.Errorf("image cache: %w", err)
	}
	for _, p := range []string{"customize.sh", "requirements.txt"} {
		os.Remove(filepath.Join(w.dir, p))
	}
	final := w.cache.entryDir(w.inputs)
	if w.replace {
		// A forced build replaces the entry: move the old one aside, then remove it.
		if old, err := os.MkdirTemp(w.cache.dir, ".old-"); err == nil {
			_ = os.Rename(final, filepath.Join(old, "entry")) // fails when there was none
			defer os.RemoveAll(old)
		}
	}
	if err := os.Rename(w.dir, final); err != nil {
		if _, ok := w.cache.get(w.inputs); !ok {
			return nil, fmt.Errorf("image cache: %w", err)
		}
	} else {
		w.done = true
	}
	return readEntry(final)
}

// importEntry imports a cache entry into containerd as name, through the same import
// path as `ceval images import` (an OCI layout tarball streamed to client.Import, every
// blob checked against its digest), and unpacks it.
func importEntry(ctx context.Context, c *client.Client, e *cacheEntry, name string) (Image, error) {
	imp := func() ([]Image, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeEntryLayout(pw, e, name)) }()
		defer pr.Close()
		return importArchive(ctx, c, pr)
	}
	imgs, err := imp()
	if errdefs.IsAlreadyExists(err) {
		imgs, err = imp() // another process created the record in between: import again
	}
	if err != nil {
		return Image{}, fmt.Errorf("import image %s from the image cache (%s): %w", name, e.dir, err)
	}
	if len(imgs) != 1 {
		return Image{}, fmt.Errorf("import image %s: got %d images, want 1", name, len(imgs))
	}
	return imgs[0], nil
}

// writeEntryLayout writes e as an OCI image layout tarball naming its manifest name.
func writeEntryLayout(w io.Writer, e *cacheEntry, name string) error {
	named := e.meta.Manifest
	named.Annotations = map[string]string{images.AnnotationImageName: name}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{named},
	})
	if err != nil {
		return err
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, f := range []struct {
		name string
		data []byte
	}{{ocispec.ImageLayoutFile, layout}, {ocispec.ImageIndexFile, index}} {
		if err := writeFile(tw, f.name, f.data, 0o644); err != nil {
			return err
		}
	}
	buf := make([]byte, layerChunk)
	for _, d := range append([]ocispec.Descriptor{e.meta.Manifest, e.manifest.Config}, e.manifest.Layers...) {
		if err := copyBlob(tw, e.blobPath(d.Digest), "blobs/"+d.Digest.Algorithm().String()+"/"+d.Digest.Encoded(), d.Size, buf); err != nil {
			return err
		}
	}
	return tw.Close()
}

func copyBlob(tw *tar.Writer, src, name string, size int64, buf []byte) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	n, err := io.CopyBuffer(onlyWriter{tw}, onlyReader{io.LimitReader(f, size)}, buf)
	if err == nil && n != size {
		err = fmt.Errorf("%s: %d bytes, want %d", src, n, size)
	}
	return err
}

// touch marks the entry for inputs as used now (its entry.json's mtime), which
// PruneImageCache reads as its last use.
func (c *imageCache) touch(inputs digest.Digest) {
	now := time.Now()
	_ = os.Chtimes(filepath.Join(c.entryDir(inputs), "entry.json"), now, now)
}

// PrunedEntry is one image cache entry PruneImageCache removed.
type PrunedEntry struct {
	Dir      string
	Size     int64
	LastUsed time.Time
}

// PruneImageCache removes the entries of the image cache in dir ("" = ImageCacheDir) not
// used for olderThan, and builds that died half-way (temporary directories older than a
// day). Images already in containerd are not touched: a later build of a pruned entry
// keeps the image there, or builds again.
func PruneImageCache(dir string, olderThan time.Duration) ([]PrunedEntry, error) {
	c, err := openImageCache(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("image cache: %w", err)
	}
	var out []PrunedEntry
	now := time.Now()
	for _, e := range ents {
		p := filepath.Join(c.dir, e.Name())
		var used time.Time
		switch {
		case strings.HasPrefix(e.Name(), ".build-"), strings.HasPrefix(e.Name(), ".old-"):
			fi, err := e.Info()
			if err != nil || now.Sub(fi.ModTime()) < 24*time.Hour {
				continue
			}
			used = fi.ModTime()
		case strings.HasPrefix(e.Name(), "sha256-") && e.IsDir():
			fi, err := os.Stat(filepath.Join(p, "entry.json"))
			if err != nil {
				continue
			}
			if used = fi.ModTime(); now.Sub(used) < olderThan {
				continue
			}
		default:
			continue
		}
		size := dirSize(p)
		if err := os.RemoveAll(p); err != nil {
			return out, fmt.Errorf("image cache: %w", err)
		}
		out = append(out, PrunedEntry{Dir: p, Size: size, LastUsed: used})
	}
	return out, nil
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
