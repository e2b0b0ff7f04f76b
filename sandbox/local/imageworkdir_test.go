package local

import (
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
		cp, err := copyImageWorkdir(ctx, c, name, "/app", ImageWorkdirAuto, ws, 16)
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
