package images

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	digest "github.com/opencontainers/go-digest"
)

// Whoever can write the image cache chooses the layers ceval imports: a cache directory
// others can write is refused.
func TestImageCacheRefusesDirWritableByOthers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "images")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := openImageCache(dir); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Fatalf("openImageCache(0777 dir) = %v, want a refusal", err)
	}
}

// A cache entry whose manifest does not match the digest entry.json names, or whose
// directory others can write, is not used (the image is built again).
func TestImageCacheIgnoresTamperedEntries(t *testing.T) {
	c, err := openImageCache(filepath.Join(t.TempDir(), "images"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := digest.FromString("inputs")
	w, err := c.create(inputs)
	if err != nil {
		t.Fatal(err)
	}
	e, err := w.commit(packageConfig("amd64", nil), nil, entryMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.get(inputs); !ok {
		t.Fatal("a fresh entry is not found")
	}
	man := e.blobPath(e.meta.Manifest.Digest)
	if err := os.WriteFile(man, []byte(`{"schemaVersion":2,"layers":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.get(inputs); ok {
		t.Error("an entry whose manifest was rewritten is used")
	}
	if err := os.Chmod(e.dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.get(inputs); ok {
		t.Error("an entry others can write is used")
	}
}

func TestPruneImageCacheRemovesOnlyUnusedEntriesAndDeadBuilds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "images")
	c, err := openImageCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	old, fresh := digest.FromString("old"), digest.FromString("fresh")
	for _, in := range []digest.Digest{old, fresh} {
		w, err := c.create(in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.commit(packageConfig("amd64", nil), nil, entryMeta{}); err != nil {
			t.Fatal(err)
		}
	}
	dead, err := c.create(digest.FromString("dead"))
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-60 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(c.entryDir(old), "entry.json"), long, long); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dead.dir, long, long); err != nil {
		t.Fatal(err)
	}
	pruned, err := PruneImageCache(dir, 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(pruned) != 2 {
		t.Fatalf("pruned %+v, want the old entry and the dead build", pruned)
	}
	if _, ok := c.get(old); ok {
		t.Error("the entry unused for 60 days is still there")
	}
	if _, ok := c.get(fresh); !ok {
		t.Error("the fresh entry was pruned")
	}
}

// A forced build's entry replaces the cached one (a bad or stale entry can be rebuilt);
// an ordinary concurrent build that lost the race keeps the first.
func TestImageCacheForcedCommitReplacesEntry(t *testing.T) {
	c, err := openImageCache(filepath.Join(t.TempDir(), "images"))
	if err != nil {
		t.Fatal(err)
	}
	in := digest.FromString("in")
	commit := func(label string, replace bool) *cacheEntry {
		t.Helper()
		w, err := c.create(in)
		if err != nil {
			t.Fatal(err)
		}
		defer w.abort()
		w.replace = replace
		cfg := packageConfig("amd64", nil)
		cfg.Config.Labels["x"] = label
		e, err := w.commit(cfg, nil, entryMeta{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	first := commit("first", false)
	if e := commit("second", false); e.manifest.Config.Digest != first.manifest.Config.Digest {
		t.Errorf("a build that lost the race replaced the entry")
	}
	if e := commit("forced", true); e.manifest.Config.Digest == first.manifest.Config.Digest {
		t.Errorf("a forced build kept the old entry")
	}
	left, _ := filepath.Glob(filepath.Join(c.dir, ".*"))
	if len(left) != 0 {
		t.Errorf("temporary directories left: %v", left)
	}
}
