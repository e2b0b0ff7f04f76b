package images

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/reference"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"ceval.dev/ceval/internal/lazyregexp"
	"ceval.dev/ceval/internal/procgroup"
	"ceval.dev/ceval/internal/tempdir"
	"ceval.dev/ceval/policy"
	cevalregistry "ceval.dev/ceval/registry"
)

// Labels a package image's config carries.
const (
	// PackageInputsLabel holds the digest of everything the image was built from (the
	// request, the apt sources and their package lists, wheels, CLI pins); a build with
	// the same inputs keeps the image.
	PackageInputsLabel = "dev.ceval.package-inputs"
	// PackagesLabel is the request: the Debian packages asked for, comma-separated.
	PackagesLabel = "dev.ceval.packages"
	// PackageVersionsLabel is the sha256 of the installed package=version list (dpkg),
	// which the image also holds as /usr/share/ceval/packages.txt.
	PackageVersionsLabel = "dev.ceval.package-versions"
)

// packageFormat changes whenever the package layer's layout or the build's steps change,
// so images and cache entries made by an older ceval are rebuilt.
const packageFormat = "ceval-package-image-v1"

// AgentPackages is the userland build-agent gives real agents: what Claude Code and Codex
// reach for when they work on a repository.
var AgentPackages = []string{"bash", "busybox-static", "ca-certificates", "coreutils", "curl", "diffutils", "findutils", "git", "grep", "less", "nodejs", "patch", "procps", "python3", "ripgrep", "sed"}

// PackageEpoch is the SOURCE_DATE_EPOCH of package builds (2025-01-01): mmdebstrap
// clamps every mtime to it and ceval's layer writer does again.
const PackageEpoch = 1735689600

// ErrPackageInput is wrapped by errors about what a package image is built from (a bad
// package name or pip line, a missing wheel directory, mmdebstrap not installed): bad
// input, not a containerd failure.
var ErrPackageInput = errors.New("cannot build the package image")

// ErrPackageBuild is wrapped when mmdebstrap or pip fail inside the build (a package apt
// cannot find, a wheel pip cannot install).
var ErrPackageBuild = errors.New("package image build failed")

// PackageOptions says how to build a package image.
type PackageOptions struct {
	Name string // image name, required
	// Suite is the Debian suite; "" is the host's (its apt sources are used then).
	Suite    string
	Packages []string // Debian packages: "python3" or "git=1:2.39.5-0+deb12u2"
	// Pip lines are pinned requirements, "name==version" with optional
	// " --hash=sha256:HEX" parts; pip installs them at build time with --no-index from
	// PipFindLinks only (this ceval never asks a Python package index).
	Pip          []string
	PipFindLinks string
	// AgentCLIs adds the pinned Claude Code and Codex CLIs as a second layer (and Debian's
	// musl for Claude Code's loader).
	AgentCLIs bool
	// With picks agent types of AgentCLIs ("claude-code", "codex"); nil is all of them.
	With     []string
	Force    bool     // rebuild even when an image or cache entry has the same inputs
	CacheDir string   // "" = ImageCacheDir()
	Fetcher  *Fetcher // for the CLI tarballs; nil = the default download cache, online
	Log      io.Writer

	// hostRoot is "/" unless a test points it at a fake host (os-release, apt sources and lists).
	hostRoot string
}

// PackageBuild is what BuildPackages did.
type PackageBuild struct {
	Image  Image
	Inputs digest.Digest
	// Kept: containerd already had an image with these inputs. Cached: the layers came
	// from the image cache on disk. Neither: mmdebstrap built them now.
	Kept, Cached bool
	// Size is the image's uncompressed size in bytes (all layers).
	Size int64
	// Versions are the installed versions of the packages asked for ("python3=3.11.2-1+b1").
	Versions []string
	// Neutralised lists the setuid/setgid bits and file capabilities removed from the
	// Debian files (su, mount, passwd...): an agent must find none.
	Neutralised []Finding
}

var (
	debPackagePattern = lazyregexp.New(`^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$`)
	suitePattern      = lazyregexp.New(`^[a-z][a-z0-9-]{0,31}$`)
	pipNamePattern    = lazyregexp.New(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?==[A-Za-z0-9.+!_-]+$`)
	pipHashPattern    = lazyregexp.New(`^--hash=sha256:[0-9a-f]{64}$`)
)

// NormalizeName returns an image reference as Docker (and containerd's ctr) spells it in
// full: ubuntu:24.04 is docker.io/library/ubuntu:24.04, foo/bar is docker.io/foo/bar:latest;
// registries (localhost:5000/x) and digests are kept.
func NormalizeName(name string) (string, error) {
	return cevalregistry.Normalize(name) // one normaliser for builds, lookups and pulls
}

// checkImageName refuses, before minutes of building, a name containerd would refuse, and
// normalises *name as Docker does (see NormalizeName).
func checkImageName(name *string) error {
	if *name == "" {
		return fmt.Errorf("%w: no image name given", ErrPackageInput)
	}
	n, err := NormalizeName(*name)
	if err != nil {
		return fmt.Errorf("%w: image name %q: %w; use a name like ceval.local/NAME:TAG", ErrPackageInput, *name, err)
	}
	if _, err := reference.Parse(n); err != nil {
		return fmt.Errorf("%w: image name %q: %w; use a name like ceval.local/NAME:TAG", ErrPackageInput, *name, err)
	}
	*name = n
	return nil
}

// checkPackage says what is wrong with a Debian package request ("" when nothing).
func checkPackage(p string) string {
	if !debPackagePattern.MatchString(p) {
		return fmt.Sprintf("%q is not a Debian package name (lowercase letters, digits, '+', '-', '.'; optionally =VERSION)", p)
	}
	return ""
}

// checkPip says what is wrong with a pip requirement line ("" when nothing): it must pin
// one exact version, NAME==VERSION, optionally followed by --hash=sha256:HEX parts.
func checkPip(line string) string {
	fields := strings.Fields(line)
	if len(fields) == 0 || !pipNamePattern.MatchString(fields[0]) {
		return fmt.Sprintf("%q is not a pinned requirement: write NAME==VERSION (optionally followed by --hash=sha256:HEX)", line)
	}
	for _, f := range fields[1:] {
		if !pipHashPattern.MatchString(f) {
			return fmt.Sprintf("%q: %q is not --hash=sha256:HEX (64 lowercase hex digits)", line, f)
		}
	}
	return ""
}

// packagePlan is everything a build needs, checked and hashed before anything runs.
type packagePlan struct {
	name     string
	suite    string
	packages []string // sorted, deduplicated, with the ones ceval adds
	pip      []string
	wheels   string   // absolute wheel directory ("" without pip)
	mirrors  []string // host apt sources files passed to mmdebstrap (suite is the host's)
	cli      []AgentCLI
	inputs   digest.Digest
}

func planPackages(opts PackageOptions) (*packagePlan, error) {
	if err := checkImageName(&opts.Name); err != nil {
		return nil, err
	}
	root := opts.hostRoot
	if root == "" {
		root = "/"
	}
	hostSuite := hostCodename(root)
	p := &packagePlan{name: opts.Name, suite: opts.Suite}
	if p.suite == "" {
		if hostSuite == "" {
			return nil, fmt.Errorf("%w: this host's /etc/os-release names no VERSION_CODENAME; pass --suite (e.g. bookworm)", ErrPackageInput)
		}
		p.suite = hostSuite
	}
	if !suitePattern.MatchString(p.suite) {
		return nil, fmt.Errorf("%w: suite %q is not a Debian suite name (e.g. bookworm)", ErrPackageInput, p.suite)
	}
	if len(opts.Packages) == 0 && len(opts.Pip) == 0 {
		return nil, fmt.Errorf("%w: no packages given; pass --packages python3,nodejs,git (Debian package names)", ErrPackageInput)
	}
	pkgs := slices.Clone(opts.Packages)
	for _, pk := range pkgs {
		if msg := checkPackage(pk); msg != "" {
			return nil, fmt.Errorf("%w: %s", ErrPackageInput, msg)
		}
	}
	for _, l := range opts.Pip {
		if msg := checkPip(l); msg != "" {
			return nil, fmt.Errorf("%w: pip: %s", ErrPackageInput, msg)
		}
	}
	if len(opts.Pip) > 0 {
		if opts.PipFindLinks == "" {
			return nil, fmt.Errorf("%w: pip requirements need a directory of wheels (--pip-find-links DIR, or sandbox.pip_find_links): ceval installs them with --no-index and never asks a package index", ErrPackageInput)
		}
		abs, err := filepath.Abs(opts.PipFindLinks)
		if err != nil {
			return nil, fmt.Errorf("%w: pip wheel directory: %w", ErrPackageInput, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: pip wheel directory %s is not a directory", ErrPackageInput, abs)
		}
		p.wheels = abs
		p.pip = slices.Clone(opts.Pip)
		pkgs = append(pkgs, "python3-pip")
	}
	if opts.AgentCLIs {
		if runtime.GOARCH != "amd64" {
			return nil, fmt.Errorf("%w: the pinned agent CLIs are linux/amd64 builds and this host is linux/%s", ErrPackageInput, runtime.GOARCH)
		}
		if opts.With == nil {
			p.cli = AgentCLIs
		} else {
			if err := checkWith(opts.With, AgentCLIs); err != nil {
				return nil, err
			}
			for _, a := range AgentCLIs {
				if slices.Contains(opts.With, a.Type) {
					p.cli = append(p.cli, a)
				}
			}
		}
		pkgs = append(pkgs, "ca-certificates")
		if slices.ContainsFunc(p.cli, func(a AgentCLI) bool { return a.Musl }) {
			pkgs = append(pkgs, "musl") // Claude Code's loader, /lib/ld-musl-x86_64.so.1
		}
	}
	sort.Strings(pkgs)
	p.packages = slices.Compact(pkgs)

	h := sha256.New()
	fmt.Fprintf(h, "%s\nsuite %s\narch %s\nepoch %d\n", packageFormat, p.suite, runtime.GOARCH, PackageEpoch)
	for _, pk := range p.packages {
		fmt.Fprintf(h, "package %s\n", pk)
	}
	if p.suite == hostSuite {
		// The host's sources and the package lists apt-get update last fetched for them
		// (their InRelease files pin every package's version): a new apt-get update that
		// brings new versions gives new inputs.
		var err error
		if p.mirrors, err = hostAptState(root, h); err != nil {
			return nil, err
		}
	}
	for _, l := range p.pip {
		fmt.Fprintf(h, "pip %s\n", l)
	}
	if p.wheels != "" {
		if err := hashWheels(p.wheels, h); err != nil {
			return nil, err
		}
	}
	for _, a := range p.cli {
		fmt.Fprintf(h, "npm %s %s %s\n", a.Type, a.Pin, a.Pin.SHA256)
		for _, f := range a.Files {
			fmt.Fprintf(h, "file %s %d %s %s %o\n", f.Path, f.Size, f.SHA256, f.To, f.Mode)
		}
		for _, l := range a.Links {
			fmt.Fprintf(h, "link %s %s\n", l.Path, l.Target)
		}
	}
	p.inputs = digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil))
	return p, nil
}

// hostCodename reads VERSION_CODENAME from the host's os-release ("" when absent).
func hostCodename(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "etc/os-release"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VERSION_CODENAME="); ok {
			return strings.Trim(v, `"' `)
		}
	}
	return ""
}

// hostAptState hashes the host's apt sources files and the InRelease/Release files of its
// package lists into h, and returns the sources files (for mmdebstrap).
func hostAptState(root string, h io.Writer) ([]string, error) {
	var sources []string
	if fi, err := os.Stat(filepath.Join(root, "etc/apt/sources.list")); err == nil && fi.Size() > 0 {
		sources = append(sources, filepath.Join(root, "etc/apt/sources.list"))
	}
	for _, pat := range []string{"*.list", "*.sources"} {
		m, _ := filepath.Glob(filepath.Join(root, "etc/apt/sources.list.d", pat))
		sources = append(sources, m...)
	}
	sort.Strings(sources)
	if len(sources) == 0 {
		return nil, fmt.Errorf("%w: this host has no apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d/*.sources); pass --suite to use Debian's mirror", ErrPackageInput)
	}
	lists, _ := filepath.Glob(filepath.Join(root, "var/lib/apt/lists/*Release"))
	if len(lists) == 0 {
		return nil, fmt.Errorf("%w: this host has no apt package lists; run apt-get update first (they pin the versions an image gets)", ErrPackageInput)
	}
	sort.Strings(lists)
	for _, f := range append(slices.Clone(sources), lists...) {
		sum, err := fileSHA256(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPackageInput, err)
		}
		fmt.Fprintf(h, "apt %s %s\n", filepath.Base(f), sum)
	}
	return sources, nil
}

// hashWheels hashes the regular files of the wheel directory (name and sha256) into h.
func hashWheels(dir string, h io.Writer) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%w: pip wheel directory: %w", ErrPackageInput, err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("%w: pip wheel directory: %w", ErrPackageInput, err)
		}
		fmt.Fprintf(h, "wheel %s %s\n", e.Name(), sum)
	}
	return nil
}

// mmdebstrapArgs is mmdebstrap's command line: a minbase rootfs of the plan's packages as
// a tar on stdout, the customize script run last. Names were checked by planPackages, so
// none can pass for an option.
func mmdebstrapArgs(p *packagePlan, hook string) []string {
	mode := "root"
	if os.Geteuid() != 0 {
		mode = "unshare"
	}
	args := []string{"--variant=minbase", "--mode=" + mode, "--format=tar", "--quiet",
		"--include=" + strings.Join(p.packages, ","), "--customize-hook=" + hook, p.suite, "-"}
	return append(args, p.mirrors...)
}

// customizeScript is the shell script mmdebstrap runs on the finished rootfs ($1): the
// agent user and its directories, host-independent /etc/hostname and /etc/resolv.conf, the
// pip requirements (in an empty environment: no PIP_* variable or pip.conf of the host can
// point pip at an index), and the installed versions written to /usr/share/ceval/packages.txt.
func customizeScript(p *packagePlan, reqFile string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/sh
set -eu
root="$1"
if grep -q '^[^:]*:[^:]*:%[1]d:' "$root/etc/passwd"; then echo "uid %[1]d is taken in the image's /etc/passwd" >&2; exit 1; fi
printf 'agent:x:%[1]d:%[2]d:ceval agent:/home/agent:/bin/bash\n' >>"$root/etc/passwd"
printf 'agent:x:%[2]d:\n' >>"$root/etc/group"
mkdir -p "$root/workspace" "$root/home/agent"
chown %[1]d:%[2]d "$root/workspace" "$root/home/agent"
chmod 0755 "$root/workspace" "$root/home/agent"
echo ceval >"$root/etc/hostname"
: >"$root/etc/resolv.conf"
`, policy.AgentUID, policy.AgentGID)
	if len(p.pip) > 0 {
		fmt.Fprintf(&b, `mkdir "$root/tmp/ceval-pip"
cp -r %s "$root/tmp/ceval-pip/wheels"
cp %s "$root/tmp/ceval-pip/requirements.txt"
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 SOURCE_DATE_EPOCH=%d PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip install --no-index --no-cache-dir --no-compile --break-system-packages --find-links /tmp/ceval-pip/wheels -r /tmp/ceval-pip/requirements.txt >&2
rm -rf "$root/tmp/ceval-pip"
`, shellQuote(p.wheels), shellQuote(reqFile), PackageEpoch)
	}
	b.WriteString(`mkdir -p "$root/usr/share/ceval"
chroot "$root" dpkg-query -W -f '${Package}=${Version}\n' | LC_ALL=C sort >"$root/usr/share/ceval/packages.txt"
rm -rf "$root/root/.cache" "$root/var/cache/apt/"*.bin
`)
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// BuildPackages builds (or finds) the package image opts describes. In order: an image in
// containerd whose PackageInputsLabel matches is kept; an entry of the image cache on disk
// with those inputs is imported; otherwise mmdebstrap assembles the rootfs, ceval writes it
// as one normalised layer (fixed mtimes and order, setuid/setgid bits and file capabilities
// removed, no device nodes), preflights it with the same scan as `images label`, stores it
// in the cache and imports it. Force skips the first two.
func BuildPackages(ctx context.Context, c *client.Client, opts PackageOptions) (PackageBuild, error) {
	p, err := planPackages(opts)
	if err != nil {
		return PackageBuild{}, err
	}
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format, args...)
		}
	}
	if !opts.Force {
		if img, ok, err := existingByLabel(ctx, c, p.name, PackageInputsLabel, p.inputs); err != nil {
			return PackageBuild{}, err
		} else if ok {
			if cache, err := openImageCache(opts.CacheDir); err == nil {
				cache.touch(p.inputs)
			}
			return PackageBuild{Image: img, Inputs: p.inputs, Kept: true}, nil
		}
	}
	cache, err := openImageCache(opts.CacheDir)
	if err != nil {
		return PackageBuild{}, err
	}
	e, ok := cache.get(p.inputs)
	cached := ok && !opts.Force
	if cached {
		cache.touch(p.inputs)
	}
	if !cached {
		start := time.Now()
		if e, err = buildPackageEntry(ctx, cache, p, opts.Force, opts.Fetcher, opts.Log); err != nil {
			return PackageBuild{}, err
		}
		logf("built the layers of %s in %s\n", p.name, time.Since(start).Round(time.Millisecond))
	}
	start := time.Now()
	img, err := importEntry(ctx, c, e, p.name)
	if err != nil {
		return PackageBuild{}, err
	}
	logf("imported and unpacked %s in %s\n", p.name, time.Since(start).Round(time.Millisecond))
	return PackageBuild{Image: img, Inputs: p.inputs, Cached: cached, Size: e.size(), Versions: e.versionsOf(p.packages), Neutralised: e.meta.Neutralised}, nil
}

// existingByLabel returns image name when its config carries label=inputs and the
// isolation label, unpacking it if needed.
func existingByLabel(ctx context.Context, c *client.Client, name, label string, inputs digest.Digest) (Image, bool, error) {
	rec, err := getRecord(ctx, c, name)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return Image{}, false, nil
	}
	if err != nil {
		return Image{}, false, err
	}
	r, err := resolve(ctx, c.ContentStore(), rec)
	if err != nil {
		return Image{}, false, nil // unreadable: build it again
	}
	l := r.config.Config.Labels
	if l[label] != inputs.String() || l[IsolationLabel] != IsolationLabelValue {
		return Image{}, false, nil
	}
	if err := unpack(ctx, c, rec); err != nil {
		return Image{}, false, err
	}
	return r.image, true, nil
}

// buildPackageEntry runs mmdebstrap, writes the normalised layer (and the CLI layer) into
// a new cache entry, scans it, and commits the entry.
func buildPackageEntry(ctx context.Context, cache *imageCache, p *packagePlan, force bool, f *Fetcher, log io.Writer) (*cacheEntry, error) {
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return nil, fmt.Errorf("%w: mmdebstrap is not installed; install it with: apt-get install mmdebstrap (or make setup)", ErrPackageInput)
	}
	w, err := cache.create(p.inputs)
	if err != nil {
		return nil, err
	}
	defer w.abort()
	w.replace = force

	hook := filepath.Join(w.dir, "customize.sh")
	req := filepath.Join(w.dir, "requirements.txt")
	if err := os.WriteFile(req, []byte(strings.Join(p.pip, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(hook, []byte(customizeScript(p, req)), 0o700); err != nil {
		return nil, err
	}
	// mmdebstrap's temporary directories go in one of ours: signalled early, it leaves its
	// gpg home behind.
	scratch, err := tempdir.Make("", "ceval-mmdebstrap-")
	if err != nil {
		return nil, err
	}
	defer removeUnmounted(scratch)
	// SIGTERM first: mmdebstrap then unmounts what it mounted in its chroot and removes it.
	cmd := procgroup.Command(ctx, "mmdebstrap", mmdebstrapArgs(p, hook)...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", PackageEpoch), "LC_ALL=C.UTF-8", "TMPDIR="+scratch)
	tail := &tailBuffer{max: 8 << 10}
	var stderr io.Writer = tail
	if log != nil {
		stderr = io.MultiWriter(tail, log)
	}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: start mmdebstrap: %w", ErrPackageInput, err)
	}
	layer, res, werr := w.addLayer(func(dst io.Writer) (rootfsResult, error) {
		return normalizeRootfs(bufio.NewReaderSize(out, 1<<20), dst)
	})
	if werr != nil {
		_ = cmd.Cancel()
	}
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("%w: mmdebstrap %s: %w; its last output:\n%s", ErrPackageBuild, strings.Join(p.packages, ","), err, tail.String())
	}
	if werr != nil {
		return nil, fmt.Errorf("%w: write the package layer: %w", ErrPackageBuild, werr)
	}
	versions := strings.Fields(string(res.Versions))
	if len(versions) == 0 {
		return nil, fmt.Errorf("%w: the rootfs holds no /%s (the customize step did not run?)", ErrPackageBuild, versionsFile)
	}
	layers := []ocispec.Descriptor{layer}
	if len(p.cli) > 0 {
		cl, err := w.addCLILayer(ctx, f, p.cli)
		if err != nil {
			return nil, err
		}
		layers = append(layers, cl)
	}
	if err := w.preflight(p.name, layers); err != nil {
		return nil, err
	}

	vsum := digest.FromBytes([]byte(strings.Join(versions, "\n")))
	cfg := packageConfig(runtime.GOARCH, layers)
	cfg.Config.Labels[PackageInputsLabel] = p.inputs.String()
	cfg.Config.Labels[PackagesLabel] = strings.Join(p.packages, ",")
	cfg.Config.Labels[PackageVersionsLabel] = vsum.String()
	for _, a := range p.cli {
		cfg.Config.Labels[AgentVersionLabelPrefix+a.Type] = a.Version
	}
	return w.commit(cfg, layers, entryMeta{Versions: versions, Neutralised: res.Neutralised})
}

// packageConfig is a package image's config: the agent's identity and directories, and
// the isolation label (set only after the layers passed the preflight scan).
func packageConfig(arch string, layers []ocispec.Descriptor) ocispec.Image {
	var diffs []digest.Digest
	for _, l := range layers {
		diffs = append(diffs, l.Digest) // uncompressed: the digest is the diff ID
	}
	cfg := ocispec.Image{
		Platform: ocispec.Platform{OS: "linux", Architecture: arch},
		Config: ocispec.ImageConfig{
			// No User: see defaultConfig.
			Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/home/agent", "LANG=C.UTF-8"},
			Cmd:        []string{"/bin/bash"},
			WorkingDir: "/workspace",
			Labels:     map[string]string{IsolationLabel: IsolationLabelValue},
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: diffs},
	}
	setHistory(&cfg, "ceval images build --packages (mmdebstrap)")
	return cfg
}

func packageManifest(cfg blob, layers []ocispec.Descriptor) (blob, error) {
	return jsonBlob(ocispec.MediaTypeImageManifest, ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfg.desc,
		Layers:    layers,
	})
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(bytes.TrimSpace(t.buf)) }

// removeUnmounted removes dir unless something is still mounted below it (mmdebstrap's
// chroot binds the host's /dev, which RemoveAll would descend into); it then says so.
func removeUnmounted(dir string) {
	if err := tempdir.Remove(dir); err != nil {
		fmt.Fprintf(os.Stderr, "ceval: %v\n", err)
	}
}
