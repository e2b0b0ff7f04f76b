package images_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/sandbox/local"
	"ceval.dev/ceval/task"
)

// pureWheel writes a pure-Python wheel NAME-VERSION-py3-none-any.whl holding one module
// (NAME/__init__.py with src) into dir, with fixed zip metadata so its sha256 (and so the
// image's inputs) never changes; it returns that sha256 in hex.
func pureWheel(t *testing.T, dir, name, version, src string) string {
	t.Helper()
	info := name + "-" + version + ".dist-info/"
	files := []struct{ path, data string }{
		{name + "/__init__.py", src},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: ceval-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256([]byte(f.data))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.path, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.data))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	files = append(files, struct{ path, data string }{info + "RECORD", record.String()})
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.path, Method: zip.Deflate, Modified: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+"-"+version+"-py3-none-any.whl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

// TestPackageImageInstallsPinnedWheelAtBuildTime: --pip installs a pinned, hash-checked
// wheel from a directory at build time (no package index is asked: pip runs --no-index),
// and the agent imports it as UID 2000 on the read-only rootfs.
func TestPackageImageInstallsPinnedWheelAtBuildTime(t *testing.T) {
	needMmdebstrap(t)
	c, ctx := ctrtest.Connect(t)
	name := "ceval.local/test-pip:latest"
	t.Cleanup(func() {
		if err := c.ImageService().Delete(ctx, name, ctrimages.SynchronousDelete()); err != nil && !errdefs.IsNotFound(err) {
			t.Errorf("delete %s: %v", name, err)
		}
	})
	wheels := t.TempDir()
	sum := pureWheel(t, wheels, "cevalhello", "1.0", "GREETING = 'hello from a wheel'\n")
	start := time.Now()
	b, err := images.BuildPackages(ctx, c, images.PackageOptions{
		Name: name, Packages: []string{"python3"},
		Pip: []string{"cevalhello==1.0 --hash=sha256:" + sum}, PipFindLinks: wheels, Log: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("build (from the image cache: %v): %s", b.Cached, time.Since(start).Round(time.Millisecond))
	var stdout, stderr bytes.Buffer
	s, err := local.NewSandbox(ctx, sandbox.Config{
		Client: c, Image: name, ID: "pip-image-" + record.NewRunID(time.Now()),
		Argv:    []string{"python3", "-c", "import cevalhello, os; print(cevalhello.GREETING, os.getuid())"},
		Limits:  task.Limits{Timeout: time.Minute, MemoryMB: 256, CPUs: 1, Pids: 64, DiskMB: 16},
		Network: policy.NetworkNone, Dir: t.TempDir() + "/scratch",
		Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(ctx, nil)
	if cerr := s.Close(ctx); cerr != nil {
		t.Errorf("close sandbox: %v", cerr)
	}
	if err != nil || out.Exit.Code != 0 || stdout.String() != "hello from a wheel 2000\n" {
		t.Fatalf("run: %v, exit %+v\nstdout %q\nstderr %s", err, out, &stdout, &stderr)
	}
}
