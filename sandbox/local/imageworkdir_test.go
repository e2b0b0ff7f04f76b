package local

import (
	"github.com/opencontainers/go-digest"
	"os"
	"path/filepath"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// An image whose WORKDIR holds nothing is viewed once per process (its empty tree is
// remembered by the image's content), and every later run gets the same outcome without a
// lease, snapshot or mount; an image whose WORKDIR holds files is viewed and copied afresh
// for every run, each workspace getting them. Red without the memory: the empty one is
// viewed every time.
func TestAnEmptyImageWorkdirIsViewedOncePerImageContent(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // no entry of an earlier process on disk
	emptyWorkdirs.Clear()
	const empty, full = "ceval.local/workdir-empty:test", "ceval.local/workdir-full:test"
	for name, files := range map[string][]images.File{
		empty: {{Path: "app", Mode: 0o755, Dir: true}},
		full:  {{Path: "app/data.txt", Mode: 0o644, Data: []byte("image data\n")}},
	} {
		if _, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: name, WorkingDir: "/app", Extra: files}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, name) })
	}
	copyInto := func(name string) (imageWorkdirCopy, string) {
		t.Helper()
		ws := t.TempDir()
		cp, err := copyImageWorkdir(ctx, c, name, "", "/app", ImageWorkdirAuto, ws, 16)
		if err != nil {
			t.Fatal(err)
		}
		return cp, ws
	}
	before := workdirViews.Load()
	for i := range 3 {
		cp, ws := copyInto(empty)
		if ents, _ := os.ReadDir(ws); cp.Dir != "/app" || cp.Entries != 0 || len(ents) != 0 {
			t.Fatalf("empty WORKDIR, run %d: %+v, workspace %v", i, cp, ents)
		}
	}
	if n := workdirViews.Load() - before; n != 1 {
		t.Errorf("an empty WORKDIR was viewed %d times over 3 runs of one image, want once", n)
	}
	before = workdirViews.Load()
	for i := range 2 {
		cp, ws := copyInto(full)
		data, err := os.ReadFile(filepath.Join(ws, "data.txt"))
		if cp.Dir != "/app" || cp.Entries != 1 || err != nil || string(data) != "image data\n" {
			t.Fatalf("WORKDIR with a file, run %d: %+v, data.txt %q, %v", i, cp, data, err)
		}
	}
	if n := workdirViews.Load() - before; n != 2 {
		t.Errorf("a WORKDIR holding a file was viewed %d times over 2 runs, want every run", n)
	}
}

// An empty WORKDIR is remembered on disk by the image's layers, so a later process (here:
// the memory cleared) views it no more; an image changed under the same name (a file now in
// /app) is viewed and copied, never given the remembered empty tree; a cache entry anyone
// else could have written is ignored. Red with the entry keyed by the image's name (the
// changed image got an empty workspace) and without the disk cache (viewed again).
func TestAnEmptyImageWorkdirIsRememberedOnDiskByTheImagesLayersOnly(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	emptyWorkdirs.Clear()
	const name = "ceval.local/workdir-changes:test"
	build := func(files ...images.File) digest.Digest {
		t.Helper()
		img, err := images.BuildDefault(ctx, c, images.DefaultOptions{Name: name, WorkingDir: "/app", Extra: files})
		if err != nil {
			t.Fatal(err)
		}
		ic, err := images.ConfigOf(ctx, c, img.ConfigDigest)
		if err != nil {
			t.Fatal(err)
		}
		return images.ChainID(ic)
	}
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, name) })
	copyInto := func(chain digest.Digest) (imageWorkdirCopy, string, int64) {
		t.Helper()
		emptyWorkdirs.Clear() // a new process
		ws := t.TempDir()
		before := workdirViews.Load()
		cp, err := copyImageWorkdir(ctx, c, name, chain, "/app", ImageWorkdirAuto, ws, 16)
		if err != nil {
			t.Fatal(err)
		}
		return cp, ws, workdirViews.Load() - before
	}
	emptyChain := build(images.File{Path: "app", Mode: 0o755, Dir: true})
	for i, chain := range []digest.Digest{emptyChain, emptyChain, ""} {
		cp, ws, views := copyInto(chain)
		if ents, _ := os.ReadDir(ws); cp.Dir != "/app" || cp.Entries != 0 || len(ents) != 0 {
			t.Fatalf("empty WORKDIR, process %d: %+v, workspace %v", i, cp, ents)
		}
		if want := map[bool]int64{true: 1, false: 0}[i == 0]; views != want {
			t.Errorf("empty WORKDIR, process %d: viewed %d times, want %d (remembered on disk after the first)", i, views, want)
		}
	}
	// An entry others could have written is not believed.
	ents, err := os.ReadDir(filepath.Join(cache, "ceval", "emptydir"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("empty-directory cache: %v, %v; want the one entry of the empty image", ents, err)
	}
	entry := filepath.Join(cache, "ceval", "emptydir", ents[0].Name())
	if err := os.Chmod(entry, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, _, views := copyInto(emptyChain); views != 1 {
		t.Errorf("an entry writable by others was believed: %d views, want 1", views)
	}
	if err := os.Chmod(entry, 0o600); err != nil { // rewritten by that view: the disk says empty again
		t.Fatal(err)
	}
	fullChain := build(images.File{Path: "app/data.txt", Mode: 0o644, Data: []byte("changed\n")})
	if fullChain == emptyChain {
		t.Fatal("the changed image has the same layers")
	}
	for i, chain := range []digest.Digest{fullChain, ""} {
		cp, ws, views := copyInto(chain)
		data, err := os.ReadFile(filepath.Join(ws, "data.txt"))
		if cp.Entries != 1 || err != nil || string(data) != "changed\n" || views != 1 {
			t.Fatalf("the image changed under its name, process %d: %+v, data.txt %q, %v, %d views: want its file, viewed", i, cp, data, err, views)
		}
	}
}
