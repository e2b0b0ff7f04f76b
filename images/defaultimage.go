package images

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"ceval.dev/ceval/policy"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// DefaultBusybox is where Debian's busybox-static installs its binary.
const DefaultBusybox = "/bin/busybox"

// ErrBusybox is wrapped by errors about the busybox binary given to build the default
// image (missing, dynamically linked, wrong architecture, no applets): bad input, not a
// containerd failure.
var ErrBusybox = errors.New("unusable busybox")

// DefaultOptions says how to build the default image. The zero value builds DefaultName
// from DefaultBusybox.
type DefaultOptions struct {
	// Busybox is the path of a statically linked busybox on the host.
	Busybox string
	// Name is the image name to create; tests use their own.
	Name string
	// Extra files added to the layer, e.g. an agent CLI or a test's fake one. A file
	// replaces a busybox applet of the same path.
	Extra []File
	// WorkingDir is the config's WorkingDir; "" is /workspace (a test's image names another,
	// as images built for other harnesses do).
	WorkingDir string
	// Env, when set, replaces the config's Env, and Entrypoint sets its Entrypoint (tests'
	// images built as other harnesses' are).
	Env        []string
	Entrypoint []string
}

// File is one regular file added to an image layer, owned by root.
type File struct {
	Path string // relative to /, slash-separated, e.g. "usr/local/bin/claude"
	Mode int64  // permission bits, e.g. 0o755; setuid and setgid bits are refused
	Data []byte
	// Link, when set, makes the entry a symbolic link to Link (Data unused); FIFO makes it a
	// named pipe. Tests use them to build hostile images.
	Link string
	FIFO bool
	// Dir makes the entry a directory (empty unless other files go below it), as a
	// Dockerfile's WORKDIR makes its own.
	Dir bool
}

func (o DefaultOptions) withDefaults() DefaultOptions {
	if o.Busybox == "" {
		o.Busybox = DefaultBusybox
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	return o
}

// ensureMu keeps concurrent EnsureDefault calls in one process from building twice.
var ensureMu sync.Mutex

// EnsureDefault returns the default image, building, importing and unpacking it first when
// it is missing. When it is already present and unpacked it only reads its manifest (a
// few milliseconds); it never rebuilds an existing image.
func EnsureDefault(ctx context.Context, c *client.Client, opts DefaultOptions) (Image, error) {
	opts = opts.withDefaults()
	ensureMu.Lock()
	defer ensureMu.Unlock()
	rec, err := getRecord(ctx, c, opts.Name)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return BuildDefault(ctx, c, opts)
	}
	if err != nil {
		return Image{}, err
	}
	r, err := resolve(ctx, sizedContent(c), rec) // a run's critical path: one round trip per blob
	if err != nil {
		return Image{}, err
	}
	if err := unpackResolved(ctx, c, r); err != nil {
		return Image{}, err
	}
	return r.image, nil
}

// BuildDefault builds the default image from a static busybox, imports it into ctx's
// namespace (replacing an image of the same name) and unpacks it. The same busybox always
// gives the same manifest digest.
func BuildDefault(ctx context.Context, c *client.Client, opts DefaultOptions) (Image, error) {
	opts = opts.withDefaults()
	var buf bytes.Buffer
	if _, err := writeDefaultLayout(&buf, opts); err != nil {
		return Image{}, err
	}
	imgs, err := importArchive(ctx, c, bytes.NewReader(buf.Bytes()))
	if errdefs.IsAlreadyExists(err) {
		// Another process created the record between our update and create: import again.
		imgs, err = importArchive(ctx, c, bytes.NewReader(buf.Bytes()))
	}
	if err != nil {
		return Image{}, fmt.Errorf("import default image %s: %w", opts.Name, err)
	}
	if len(imgs) != 1 {
		return Image{}, fmt.Errorf("import default image %s: got %d images, want 1", opts.Name, len(imgs))
	}
	return imgs[0], nil
}

// writeDefaultLayout writes the default image as an OCI image layout tarball to w and
// returns its manifest descriptor. It reads the busybox binary and runs it once with
// --list-full to learn its applets.
func writeDefaultLayout(w io.Writer, opts DefaultOptions) (ocispec.Descriptor, error) {
	opts = opts.withDefaults()
	layerTar, arch, err := busyboxRootfs(opts.Busybox, opts.Extra)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layer, diffID, err := gzipLayer(layerTar)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	cfg := defaultConfig(arch, diffID)
	if opts.WorkingDir != "" {
		cfg.Config.WorkingDir = opts.WorkingDir
	}
	if opts.Env != nil {
		cfg.Config.Env = opts.Env
	}
	cfg.Config.Entrypoint = opts.Entrypoint
	return writeLayout(w, opts.Name, cfg, []blob{layer})
}

// busyboxRootfs is the default image's layer (uncompressed) built from the static busybox at
// path plus extra, and the busybox's architecture; it runs busybox once to learn its applets.
func busyboxRootfs(path string, extra []File) ([]byte, string, error) {
	bin, arch, err := readStaticBusybox(path)
	if err != nil {
		return nil, "", err
	}
	applets, err := busyboxApplets(path)
	if err != nil {
		return nil, "", err
	}
	tar, err := defaultRootfs(bin, applets, extra)
	return tar, arch, err
}

// defaultConfig is the default image's config. It names no User: ceval runs every
// container as the agent's UID whatever an image says, and a Dockerfile built FROM a ceval
// image runs its RUN steps as root, as FROM any Debian base (USER in the Dockerfile changes
// that).
func defaultConfig(arch string, diffID digest.Digest) ocispec.Image {
	cfg := ocispec.Image{
		Platform: ocispec.Platform{OS: "linux", Architecture: arch},
		Config: ocispec.ImageConfig{
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/home/agent"},
			Cmd:        []string{"/bin/sh"},
			WorkingDir: "/workspace",
			Labels:     map[string]string{IsolationLabel: IsolationLabelValue},
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
	}
	setHistory(&cfg, "ceval images: default image (busybox)")
	return cfg
}

// setHistory gives cfg one history entry per layer, dated PackageEpoch (the image stays
// reproducible): builders such as buildah refuse a base image whose history does not
// account for its layers.
func setHistory(cfg *ocispec.Image, by string) {
	created := time.Unix(PackageEpoch, 0).UTC()
	cfg.Created = &created
	cfg.History = nil
	for range cfg.RootFS.DiffIDs {
		cfg.History = append(cfg.History, ocispec.History{Created: &created, CreatedBy: by})
	}
}

var elfArch = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
	elf.EM_386:     "386",
	elf.EM_RISCV:   "riscv64",
	elf.EM_PPC64:   "ppc64le",
	elf.EM_S390:    "s390x",
}

// readStaticBusybox reads the busybox binary and refuses one that needs a dynamic loader
// (it could not run in an image that has no libc) or one for another architecture.
func readStaticBusybox(p string) ([]byte, string, error) {
	bin, err := os.ReadFile(p)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w (install it with apt-get install busybox-static, or pass --busybox PATH)", ErrBusybox, err)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s is not an ELF binary: %w", ErrBusybox, p, err)
	}
	defer f.Close()
	dynamic := false
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			dynamic = true
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		dynamic = true
	}
	if dynamic {
		return nil, "", fmt.Errorf("%w: %s is dynamically linked and cannot run in the default image (which has no libc); install a static one with apt-get install busybox-static, or pass --busybox PATH to a static busybox", ErrBusybox, p)
	}
	arch, ok := elfArch[f.Machine]
	if !ok || arch != runtime.GOARCH {
		return nil, "", fmt.Errorf("%w: %s is built for %s, this host runs %s", ErrBusybox, p, f.Machine, runtime.GOARCH)
	}
	return bin, arch, nil
}

// busyboxApplets asks busybox for its applets' install paths ("bin/sh", "usr/bin/env").
func busyboxApplets(p string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, "--list-full")
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: list its applets with %s --list-full: %w", ErrBusybox, p, err)
	}
	seen := map[string]bool{}
	var applets []string
	for _, line := range strings.Split(string(out), "\n") {
		name := path.Clean("/" + strings.TrimSpace(line))[1:]
		if name == "" || name == "bin/busybox" || seen[name] || strings.Contains(name, "..") {
			continue
		}
		seen[name] = true
		applets = append(applets, name)
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("%w: %s --list-full printed no applets", ErrBusybox, p)
	}
	return applets, nil
}

// defaultRootfs returns the uncompressed tar of the default image's single layer: busybox,
// a symlink per applet, passwd/group with root and agent, and the agent's directories.
func defaultRootfs(busybox []byte, applets []string, extra []File) ([]byte, error) {
	type entry struct {
		hdr  tar.Header
		data []byte
	}
	entries := map[string]entry{}
	dir := func(name string, mode int64, uid, gid int) {
		entries[name+"/"] = entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: gid}}
	}
	file := func(name string, mode int64, data []byte) {
		entries[name] = entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}, data: data}
	}
	for _, d := range []string{"bin", "dev", "etc", "home", "proc", "sbin", "sys", "usr", "usr/bin", "usr/sbin", "var"} {
		dir(d, 0o755, 0, 0)
	}
	dir("root", 0o700, 0, 0)
	dir("tmp", 0o1777, 0, 0)
	dir("var/tmp", 0o1777, 0, 0)
	dir("home/agent", 0o755, policy.AgentUID, policy.AgentGID)
	dir("workspace", 0o755, policy.AgentUID, policy.AgentGID)
	file("bin/busybox", 0o755, busybox)
	file("etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/bin/sh\nagent:x:%d:%d:ceval agent:/home/agent:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n", policy.AgentUID, policy.AgentGID)))
	file("etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nagent:x:%d:\nnogroup:x:65534:\n", policy.AgentGID)))
	for _, a := range applets {
		for d := path.Dir(a); d != "."; d = path.Dir(d) {
			if _, ok := entries[d+"/"]; !ok {
				dir(d, 0o755, 0, 0)
			}
		}
		entries[a] = entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: a, Linkname: "/bin/busybox", Mode: 0o777}}
	}
	for _, f := range extra {
		p := path.Clean(strings.TrimPrefix(f.Path, "/"))
		if p == "." || strings.HasPrefix(p, "../") || f.Mode&^0o777 != 0 {
			return nil, fmt.Errorf("extra file %q (mode %o): want a path inside the image and permission bits only", f.Path, f.Mode)
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if _, ok := entries[d+"/"]; !ok {
				dir(d, 0o755, 0, 0)
			}
		}
		switch {
		case f.Link != "":
			entries[p] = entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: f.Link, Mode: 0o777}}
		case f.FIFO:
			entries[p] = entry{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: p, Mode: f.Mode}}
		case f.Dir:
			dir(p, f.Mode, 0, 0)
		default:
			file(p, f.Mode, f.Data)
		}
	}

	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := entries[n]
		e.hdr.ModTime = epoch
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, fmt.Errorf("default rootfs %s: %w", n, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("default rootfs %s: %w", n, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
