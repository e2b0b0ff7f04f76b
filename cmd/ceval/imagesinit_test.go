package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
)

// build-init -o writes the same archive twice without containerd; import reads it back under
// the init image's name, as build-init without -o makes it.
func TestImagesBuildInitArchiveIsReproducibleAndImportsUnderItsName(t *testing.T) {
	if _, err := os.Stat(images.DefaultBusybox); err != nil {
		t.Skip("no static busybox")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	for _, out := range []string{a, b} {
		// no containerd address: -o must not need one
		if r := ceval(t, "--containerd-address", filepath.Join(dir, "none.sock"), "images", "build-init", "-o", out); r.code != 0 || !strings.Contains(r.stdout, images.InitName()) {
			t.Fatalf("build-init -o: exit %d %s %s", r.code, r.stdout, r.stderr)
		}
	}
	ba, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if len(ba) == 0 || !bytes.Equal(ba, bb) {
		t.Fatalf("two archives differ (%d and %d bytes)", len(ba), len(bb))
	}

	c, ctx := ctrtest.Connect(t)
	name := images.InitName()
	t.Cleanup(func() { ctrtest.RemoveImage(ctx, c, name) })
	r := ceval(t, "images", "import", "--namespace", ctrtest.Namespace, a)
	if r.code != 0 || !strings.Contains(r.stdout, "imported "+name) {
		t.Fatalf("import: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	imported, err := images.Lookup(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	r = ceval(t, "images", "build-init", "--namespace", ctrtest.Namespace)
	if r.code != 0 || !strings.Contains(r.stdout, "built "+name) {
		t.Fatalf("build-init: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	built, err := images.Lookup(ctx, c, name)
	if err != nil {
		t.Fatal(err)
	}
	if built.ManifestDigest != imported.ManifestDigest {
		t.Errorf("build-init made %s, its archive %s: want the same manifest", built.ManifestDigest, imported.ManifestDigest)
	}
}

// A dynamically linked busybox could not run in the init image: bad input (exit 2) naming
// the fix, and no archive left behind.
func TestImagesBuildInitRefusesADynamicBusybox(t *testing.T) {
	if _, err := os.Stat("/bin/ls"); err != nil {
		t.Skip("no /bin/ls")
	}
	out := filepath.Join(t.TempDir(), "init.tar")
	r := ceval(t, "images", "build-init", "--busybox", "/bin/ls", "-o", out)
	if r.code != 2 || !strings.Contains(r.stderr, "busybox-static") {
		t.Errorf("exit %d, stderr %s: want 2 naming busybox-static", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("a failed build-init left %v", entries)
	}
}

// build-init's help names the default init image; the name is computed only for that help
// (hashing the embedded binaries cost every command ~3 ms when it was built into the text).
func TestImagesBuildInitHelpNamesTheDefaultImage(t *testing.T) {
	for _, args := range [][]string{{"images", "build-init", "--help"}, {"help", "images", "build-init"}} {
		r := ceval(t, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "(default name "+images.InitName()+",") || strings.Contains(r.stdout, "%!") {
			t.Errorf("ceval %s: exit %d, stdout:\n%s", strings.Join(args, " "), r.code, r.stdout)
		}
	}
}
