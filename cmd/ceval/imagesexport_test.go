package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/internal/ctrtest"
)

// export writes an archive that import reads back under the same name; a missing image is
// bad input (exit 2) and leaves no file behind.
func TestImagesExportThenImportKeepsTheName(t *testing.T) {
	c, ctx := ctrtest.Connect(t)
	const name = "docker.io/library/exported:test"
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, name) })
	if r := ceval(t, "images", "import", "--namespace", ctrtest.Namespace, dockerSaveArchive(t, "exported:test")); r.code != 0 {
		t.Fatalf("import: exit %d %s", r.code, r.stderr)
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	if r := ceval(t, "images", "export", "--namespace", ctrtest.Namespace, name, "-o", out); r.code != 0 || !strings.Contains(r.stdout, "exported "+name) {
		t.Fatalf("export: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	ctrtest.RemoveImage(ctx, c, name)
	if r := ceval(t, "images", "import", "--namespace", ctrtest.Namespace, out); r.code != 0 || !strings.Contains(r.stdout, "imported "+name) {
		t.Fatalf("import of the export: exit %d %s %s", r.code, r.stdout, r.stderr)
	}

	missing := filepath.Join(t.TempDir(), "missing.tar")
	if r := ceval(t, "images", "export", "--namespace", ctrtest.Namespace, "docker.io/library/no-such:image", "-o", missing); r.code != 2 {
		t.Errorf("export of a missing image: exit %d %s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(filepath.Dir(missing)); len(entries) != 0 {
		t.Errorf("a failed export left %v", entries)
	}
}
