package launcher_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	ctroci "github.com/containerd/containerd/v2/pkg/oci"
	"github.com/opencontainers/go-digest"
	imagespecs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/internal/ctrtest"
	"ceval.dev/ceval/internal/embedded"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/oci"
)

// testImage is a busybox image with the agent user, built into the test namespace once.
const testImage = "ceval.local/launcher-test:latest"

// initDir holds the static init for this test binary's containers.
var initDir string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == launcher.ListenHelperArg {
		os.Exit(launcher.ListenHelperMain(os.Args[2:])) // this binary is ListenInNetns's helper
	}
	dir, err := os.MkdirTemp("", "ceval-launcher-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	initDir = dir
	code := m.Run()
	cleanupNamespace()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cleanupNamespace removes the test image, the namespace and the empty cgroup directories
// runc leaves behind for it.
func cleanupNamespace() {
	addr := launcher.AddressFromEnv()
	if os.Geteuid() != 0 {
		if addr = os.Getenv(launcher.RootlessAddressEnv); addr == "" {
			return
		}
	}
	c, ctx, err := launcher.Connect(context.Background(), addr, ctrtest.Namespace)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.ImageService().Delete(ctx, testImage, images.SynchronousDelete())
	if err := c.NamespaceService().Delete(ctx, ctrtest.Namespace); err != nil {
		fmt.Fprintf(os.Stderr, "remove namespace %s: %v\n", ctrtest.Namespace, err)
	}
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", ctrtest.Namespace))
	for _, d := range dirs {
		_ = os.Remove(d)
	}
	_ = os.Remove(filepath.Join("/sys/fs/cgroup", ctrtest.Namespace))
}

var imageOnce struct {
	sync.Mutex
	done bool
}

// busyboxImage returns the test image, building and unpacking it on first use.
func busyboxImage(t *testing.T, c *client.Client, ctx context.Context) client.Image {
	t.Helper()
	imageOnce.Lock()
	defer imageOnce.Unlock()
	if !imageOnce.done {
		layout, err := busyboxLayout()
		if err != nil {
			t.Fatalf("build test image: %v", err)
		}
		imgs, err := c.Import(ctx, bytes.NewReader(layout))
		if err != nil {
			t.Fatalf("import test image: %v", err)
		}
		if len(imgs) != 1 {
			t.Fatalf("import test image: got %d images", len(imgs))
		}
		if err := client.NewImage(c, imgs[0]).Unpack(ctx, ""); err != nil {
			t.Fatalf("unpack test image: %v", err)
		}
		imageOnce.done = true
	}
	img, err := c.GetImage(ctx, testImage)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// busyboxLayout writes an OCI image layout tarball: one uncompressed layer with the host's
// static busybox, a link per applet, and /etc/passwd naming agent 2000.
func busyboxLayout() ([]byte, error) {
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return nil, err
	}
	list, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	mtime := time.Unix(0, 0)
	dir := func(name string, mode int64) {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: mtime})
	}
	file := func(name string, mode int64, data []byte) {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime})
		_, _ = tw.Write(data)
	}
	for _, d := range []string{"bin", "etc", "home", "proc", "sys", "dev", "run"} {
		dir(d, 0o755)
	}
	// runc gives a tmpfs the mode of the directory it covers, whatever mode= says.
	dir("tmp", 0o1777)
	file("bin/busybox", 0o755, bb)
	for _, a := range strings.Fields(string(list)) {
		if a == "busybox" {
			continue
		}
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: mtime})
	}
	file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nagent:x:2000:2000:agent:/home/agent:/bin/sh\n"))
	file("etc/group", 0o644, []byte("root:x:0:\nagent:x:2000:\n"))
	if err := tw.Close(); err != nil {
		return nil, err
	}
	diffID := digest.FromBytes(layer.Bytes())

	cfg, _ := json.Marshal(ocispec.Image{
		Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
		Config:   ocispec.ImageConfig{User: "2000:2000", Env: []string{"IMAGE_ENV_LEAK=1"}},
	})
	cfgDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))}
	layerDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: diffID, Size: int64(layer.Len())}
	man, _ := json.Marshal(ocispec.Manifest{
		Versioned: imagespecs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfgDesc,
		Layers:    []ocispec.Descriptor{layerDesc},
	})
	manDesc := ocispec.Descriptor{
		MediaType:   ocispec.MediaTypeImageManifest,
		Digest:      digest.FromBytes(man),
		Size:        int64(len(man)),
		Annotations: map[string]string{images.AnnotationImageName: testImage, ocispec.AnnotationRefName: "latest"},
	}
	idx, _ := json.Marshal(ocispec.Index{Versioned: imagespecs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{manDesc}})

	var out bytes.Buffer
	ow := tar.NewWriter(&out)
	put := func(name string, data []byte) {
		_ = ow.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime})
		_, _ = ow.Write(data)
	}
	put(ocispec.ImageLayoutFile, []byte(`{"imageLayoutVersion":"1.0.0"}`))
	put("index.json", idx)
	for _, b := range [][]byte{cfg, layer.Bytes(), man} {
		put(fmt.Sprintf("blobs/sha256/%x", sha256.Sum256(b)), b)
	}
	if err := ow.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

var idSeq struct {
	sync.Mutex
	n int
}

func runID(t *testing.T) string {
	idSeq.Lock()
	defer idSeq.Unlock()
	idSeq.n++
	name := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("t%d-%s", idSeq.n, strings.Trim(name, "-"))
}

// sandbox is one test run's config with its host directories.
type sandbox struct {
	cfg     oci.Config
	dir     string // host temp dir holding everything
	timeout time.Duration
	grace   time.Duration
	logCap  int64
	extra   []ctroci.SpecOpts
	hook    launcher.StartHook
	stdin   io.Reader
	stdout  io.Writer // instead of the stdout file, when set (result.stdout is then empty)
	// lifeline is the supervisor's FIFO the init watches; closing it is ceval dying.
	lifeline *launcher.Lifeline
}

func newSandbox(t *testing.T, args ...string) *sandbox {
	t.Helper()
	dir := t.TempDir()
	userns := testUserNS(t)
	ws, home := filepath.Join(dir, "workspace"), filepath.Join(dir, "home")
	for _, d := range []string{ws, home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, int(userns.HostUID()), int(userns.HostGID())); err != nil {
			t.Fatal(err)
		}
	}
	initPath, err := embedded.Init.Install(initDir)
	if err != nil {
		t.Fatal(err)
	}
	boot, err := launcher.BootID()
	if err != nil {
		t.Fatal(err)
	}
	s := &sandbox{
		cfg: oci.Config{
			RunID:        runID(t),
			PID:          os.Getpid(),
			BootID:       boot,
			Args:         args,
			WorkspaceDir: ws,
			HomeDir:      home,
			InitPath:     initPath,
			MemoryMB:     256,
			Pids:         128,
			CPUs:         1,
			UserNS:       userns,
		},
		dir:     dir,
		timeout: 20 * time.Second,
		grace:   time.Second,
	}
	if s.lifeline, err = launcher.NewLifeline(filepath.Join(dir, "supervisor")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.lifeline.Close() })
	s.cfg.SupervisorFIFO = s.lifeline.Path()
	return s
}

// testUserNS makes a user namespace for one test container, with a host range of its own
// (tests of this package do not use supervisor's slot allocator: 0xC0000000..0xCFFFFFFF, by
// PID and a sequence number, apart from its default range and its tests'), closed when the
// test ends.
func testUserNS(t *testing.T) oci.UserNS {
	t.Helper()
	idSeq.Lock()
	idSeq.n++
	n := idSeq.n
	idSeq.Unlock()
	host := uint32(0xC0000000) + uint32((os.Getpid()*64+n)%4096)*oci.IDRangeSize
	u, err := launcher.NewUserNS(host, oci.IDRangeSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := u.Close(); err != nil {
			t.Error(err)
		}
	})
	return oci.UserNS{Path: u.Path(), HostID: host}
}

// result is what a finished run left.
type result struct {
	exit   launcher.Exit
	res    launcher.Resources
	stdout string
	stderr string
}

// run creates, starts and waits for the sandbox's container, deletes it, and returns what
// happened. during, if set, runs on the task while it runs.
func (s *sandbox) run(t *testing.T, c *client.Client, ctx context.Context, during func(*launcher.Task)) result {
	t.Helper()
	s.cfg.Timeout, s.cfg.Grace = s.timeout, s.grace
	opts, err := oci.SpecOpts(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, s.extra...)
	outPath, errPath := filepath.Join(s.dir, "stdout"), filepath.Join(s.dir, "stderr")
	stdoutPath := outPath
	if s.stdout != nil {
		stdoutPath = ""
	}
	ctr, err := launcher.Create(ctx, c, launcher.Spec{
		ID:         s.cfg.RunID,
		Image:      busyboxImage(t, c, ctx),
		Opts:       opts,
		Labels:     oci.Labels(s.cfg),
		StdoutPath: stdoutPath,
		Stdout:     s.stdout,
		StderrPath: errPath,
		LogCap:     s.logCap,
		Stdin:      s.stdin,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := launcher.CleanupContext(ctx)
		defer cancel()
		if err := ctr.Delete(cctx); err != nil {
			t.Errorf("delete: %v", err)
		}
	}()
	task, err := ctr.Start(ctx, s.hook)
	if err != nil {
		t.Fatal(err)
	}
	if during != nil {
		during(task)
	}
	ex, err := task.Wait(ctx, s.timeout, s.grace)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	res, err := task.Metrics(ctx)
	if err != nil {
		t.Errorf("metrics: %v", err)
	}
	out, _ := os.ReadFile(outPath)
	errb, _ := os.ReadFile(errPath)
	if !ex.CgroupEmpty {
		t.Errorf("cgroup not empty after exit: %s", ex.CgroupError)
	}
	return result{exit: ex, res: res, stdout: string(out), stderr: string(errb)}
}

// noLeases fails the test if any lease is left in the namespace.
func noLeases(t *testing.T, c *client.Client, ctx context.Context) {
	t.Helper()
	ls, err := c.LeasesService().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Labels["dev.ceval.container"] != "" {
			t.Errorf("lease %s left for container %s", l.ID, l.Labels["dev.ceval.container"])
		}
	}
}
