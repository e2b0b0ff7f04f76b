package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// AgentName is the image `ceval images build-agent` makes: the default image plus the
// real agent CLIs.
const AgentName = "ceval.local/agent:latest"

// AgentInputsLabel holds, in the agent image's config, the digest of everything the image
// was built from; a build whose inputs have that digest keeps the image as it is.
const AgentInputsLabel = "dev.ceval.agent-inputs"

// AgentVersionLabelPrefix + an agent type ("claude-code", "codex") labels the agent
// image's config with the CLI version it holds.
const AgentVersionLabelPrefix = "dev.ceval.agent-cli."

// agentLayerFormat changes whenever the agent layer's layout changes, so images built by
// an older ceval are rebuilt.
const agentLayerFormat = "ceval-agent-layer-v2"

// ErrAgentInput is wrapped by errors about what the agent image is built from on the host
// (an unknown --with name, a missing musl loader or static bash): bad input, not a
// containerd failure.
var ErrAgentInput = errors.New("cannot build the agent image")

// AgentCLI is one real agent CLI the agent image can hold: a pinned npm tarball and the
// files taken from it.
type AgentCLI struct {
	Type    string // the task's agent type: "claude-code" or "codex"
	Version string // the CLI's own version, recorded in a label
	Pin     Pin
	Files   []tarFile
	Links   []link // symlinks added after the files
	Musl    bool   // needs musl's dynamic loader
}

// tarFile takes a pinned file out of a package tarball and puts it at To in the layer.
type tarFile struct {
	PackageFile
	To   string
	Mode int64
}

type link struct{ Path, Target string }

// AgentCLIs lists the CLIs build-agent knows, pinned.
var AgentCLIs = []AgentCLI{
	{
		Type: "claude-code", Version: "2.1.332", Musl: true,
		Pin: Pin{
			Package: "@anthropic-ai/claude-code-linux-x64-musl", Version: "2.1.332",
			URL:    "https://registry.npmjs.org/@anthropic-ai/claude-code-linux-x64-musl/-/claude-code-linux-x64-musl-2.1.332.tgz",
			SHA256: "58665225171bf037406decce027e97242741136c58b53411da8de3647ab47eb3",
			Size:   177257601,
		},
		Files: []tarFile{
			{PackageFile{"package/claude", 386855640, "81f466623d672aed9504ad29b8bb2f240b24f3cc05c255054649250720a1900f"}, "usr/local/bin/claude", 0o755},
		},
	},
	{
		// Codex finds its helpers from its package layout (codex-package.json beside bin/
		// and codex-path/), so the layout is kept under /usr/local/lib/codex; rg is also on
		// PATH. Left out: its bwrap (its own sandbox cannot work inside ours and is
		// bypassed), the voice helper and the code-mode host (off by default).
		Type: "codex", Version: "0.169.0",
		Pin: Pin{
			Package: "@openai/codex", Version: "0.169.0-linux-x64",
			URL:    "https://registry.npmjs.org/@openai/codex/-/codex-0.169.0-linux-x64.tgz",
			SHA256: "89801b4b97faba562eb80fe0a833159ac79399be674022f4b1a0ccab1d153faa",
			Size:   167001509,
		},
		Files: []tarFile{
			{PackageFile{"package/vendor/x86_64-unknown-linux-musl/bin/codex", 294277432, "b452ca20f838a8855a88a41050ee4a694033fff4ea3ecdad5633e6e0e8d13f2b"}, "usr/local/lib/codex/bin/codex", 0o755},
			{PackageFile{"package/vendor/x86_64-unknown-linux-musl/codex-path/rg", 5408904, "e62198eb19b136b88c330af83647b5a962cb99b6b1f066758568f12de1974849"}, "usr/local/lib/codex/codex-path/rg", 0o755},
			{PackageFile{"package/vendor/x86_64-unknown-linux-musl/codex-package.json", 205, "28811e0083d220befc827d711fb8c9f4b7f85825b11164ff154e15cfe2540715"}, "usr/local/lib/codex/codex-package.json", 0o644},
		},
		Links: []link{
			{Path: "usr/local/bin/codex", Target: "/usr/local/lib/codex/bin/codex"},
			{Path: "usr/local/bin/rg", Target: "/usr/local/lib/codex/codex-path/rg"},
		},
	},
}

// AgentTypes returns the names --with accepts.
func AgentTypes() []string {
	var out []string
	for _, a := range AgentCLIs {
		out = append(out, a.Type)
	}
	return out
}

// Host files the agent image copies in (Debian paths).
const (
	// MuslLoader is musl's dynamic loader (Debian: package musl, a link to its libc.so).
	MuslLoader = "/lib/ld-musl-x86_64.so.1"
	// BashStatic is Debian's bash-static binary, installed as /bin/bash in the image.
	BashStatic = "/bin/bash-static"
)

// AgentOptions says how to build the agent image. The zero value builds AgentName with
// every CLI, from the host's /bin/busybox, musl loader and bash-static.
type AgentOptions struct {
	Name    string
	With    []string // agent types; nil = all of AgentCLIs
	Busybox string   // "" = DefaultBusybox
	Musl    string   // "" = MuslLoader
	Bash    string   // "" = BashStatic
	Force   bool     // rebuild even when the image was built from the same inputs
	Fetcher *Fetcher // nil = the default cache, online
	Log     io.Writer
	// CLIs replaces AgentCLIs (tests use small fake packages).
	CLIs []AgentCLI
}

// AgentBuild is what BuildAgent did.
type AgentBuild struct {
	Image Image
	// Inputs is the digest recorded in AgentInputsLabel.
	Inputs digest.Digest
	// Kept is true when an image built from the same inputs already existed.
	Kept bool
	// LayerSize is the uncompressed size of the CLI layer (0 when Kept).
	LayerSize int64
}

// hostFile is a file from the host copied into the agent layer.
type hostFile struct {
	to   string
	mode int64
	data []byte
}

// agentPlan is everything a build needs, gathered before anything is written.
type agentPlan struct {
	name     string
	arch     string
	baseTar  []byte // the default image's layer, uncompressed
	baseDiff digest.Digest
	cli      []AgentCLI
	host     []hostFile
	inputs   digest.Digest
}

// BuildAgent builds the agent image: the default image's layer plus a second, uncompressed
// layer with the pinned CLIs (from the npm registry, cached and sha256-checked), musl's
// loader and a static bash, labeled isolation-ready. When an image of that name already
// carries the same inputs digest it is only unpacked if needed (unless Force). The CLI
// binaries are streamed from the cached tarballs into containerd, never held in memory.
func BuildAgent(ctx context.Context, c *client.Client, opts AgentOptions) (AgentBuild, error) {
	plan, err := planAgent(opts)
	if err != nil {
		return AgentBuild{}, err
	}
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format, args...)
		}
	}
	if !opts.Force {
		if img, ok, err := existingByLabel(ctx, c, plan.name, AgentInputsLabel, plan.inputs); err != nil {
			return AgentBuild{}, err
		} else if ok {
			return AgentBuild{Image: img, Inputs: plan.inputs, Kept: true}, nil
		}
	}
	f := opts.Fetcher
	if f == nil {
		f = &Fetcher{Log: opts.Log}
	}
	ctx, done, err := c.WithLease(ctx)
	if err != nil {
		return AgentBuild{}, err
	}
	defer done(context.WithoutCancel(ctx)) // released when the build is interrupted too
	cs := c.ContentStore()
	base, baseDiff, err := gzipLayer(plan.baseTar)
	if err != nil {
		return AgentBuild{}, err
	}
	if err := writeBlob(ctx, cs, "agent-base-"+base.desc.Digest.Encoded(), base.data, base.desc, nil); err != nil {
		return AgentBuild{}, fmt.Errorf("build agent image: store base layer: %w", err)
	}
	start := time.Now()
	layer, reused, err := agentLayer(ctx, cs, f, plan)
	if err != nil {
		return AgentBuild{}, err
	}
	how := "wrote it to containerd"
	if reused {
		how = "containerd already had it"
	}
	logf("CLI layer %s (%d MB, uncompressed): %s, in %s\n", layer.Digest, layer.Size>>20, how, time.Since(start).Round(time.Millisecond))

	cfg := defaultConfig(plan.arch, baseDiff)
	cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, layer.Digest)
	setHistory(&cfg, "ceval images build-agent")
	cfg.Config.Labels[AgentInputsLabel] = plan.inputs.String()
	for _, a := range plan.cli {
		cfg.Config.Labels[AgentVersionLabelPrefix+a.Type] = a.Version
	}
	cfgBlob, err := jsonBlob(ocispec.MediaTypeImageConfig, cfg)
	if err != nil {
		return AgentBuild{}, err
	}
	if err := writeBlob(ctx, cs, "agent-config-"+cfgBlob.desc.Digest.Encoded(), cfgBlob.data, cfgBlob.desc, nil); err != nil {
		return AgentBuild{}, fmt.Errorf("build agent image: store config: %w", err)
	}
	man, err := jsonBlob(ocispec.MediaTypeImageManifest, ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfgBlob.desc,
		Layers:    []ocispec.Descriptor{base.desc, layer},
	})
	if err != nil {
		return AgentBuild{}, err
	}
	manLabels := map[string]string{
		"containerd.io/gc.ref.content.config": cfgBlob.desc.Digest.String(),
		"containerd.io/gc.ref.content.l.0":    base.desc.Digest.String(),
		"containerd.io/gc.ref.content.l.1":    layer.Digest.String(),
	}
	if err := writeBlob(ctx, cs, "agent-manifest-"+man.desc.Digest.Encoded(), man.data, man.desc, manLabels); err != nil {
		return AgentBuild{}, fmt.Errorf("build agent image: store manifest: %w", err)
	}
	target := man.desc
	target.Platform = &ocispec.Platform{OS: cfg.OS, Architecture: cfg.Architecture}
	rec := images.Image{Name: plan.name, Target: target}
	is := c.ImageService()
	created, err := is.Create(ctx, rec)
	if errdefs.IsAlreadyExists(err) {
		created, err = is.Update(ctx, rec, "target")
	}
	if err != nil {
		return AgentBuild{}, fmt.Errorf("build agent image: save image record %s: %w", plan.name, err)
	}
	start = time.Now()
	if err := unpack(ctx, c, created); err != nil {
		return AgentBuild{}, err
	}
	logf("unpacked %s in %s\n", plan.name, time.Since(start).Round(time.Millisecond))
	return AgentBuild{
		Image:     newImage(plan.name, man.desc.Digest, cfgBlob.desc.Digest, cfg.Config.Labels),
		Inputs:    plan.inputs,
		LayerSize: layer.Size,
	}, nil
}

// planAgent checks the options and the host's files and computes the inputs digest. It
// reads no package tarball.
func planAgent(opts AgentOptions) (*agentPlan, error) {
	if opts.Name == "" {
		opts.Name = AgentName
	}
	if opts.Musl == "" {
		opts.Musl = MuslLoader
	}
	if opts.Bash == "" {
		opts.Bash = BashStatic
	}
	known := opts.CLIs
	if known == nil {
		known = AgentCLIs
	}
	p := &agentPlan{name: opts.Name}
	if opts.With == nil {
		p.cli = known
	} else {
		if err := checkWith(opts.With, known); err != nil {
			return nil, err
		}
		for _, a := range known {
			if slices.Contains(opts.With, a.Type) {
				p.cli = append(p.cli, a)
			}
		}
	}
	if runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("%w: the pinned agent CLIs are linux/amd64 builds and this host is linux/%s", ErrAgentInput, runtime.GOARCH)
	}

	busybox := opts.Busybox
	if busybox == "" {
		busybox = DefaultBusybox
	}
	var err error
	if p.baseTar, p.arch, err = busyboxRootfs(busybox, nil); err != nil {
		return nil, err
	}
	p.baseDiff = digest.FromBytes(p.baseTar)

	needMusl := slices.ContainsFunc(p.cli, func(a AgentCLI) bool { return a.Musl })
	if needMusl {
		data, err := readHostELF(opts.Musl, "musl's dynamic loader", "musl", elf.ET_DYN, false)
		if err != nil {
			return nil, err
		}
		p.host = append(p.host, hostFile{to: strings.TrimPrefix(MuslLoader, "/"), mode: 0o755, data: data})
	}
	data, err := readHostELF(opts.Bash, "a static bash", "bash-static", elf.ET_EXEC, true)
	if err != nil {
		return nil, err
	}
	p.host = append(p.host, hostFile{to: "bin/bash", mode: 0o755, data: data})
	// /bin/sh is busybox itself, a regular file, not the base's link to /bin/busybox: a
	// Codex judge's container binds ceval's judge shell over /bin/sh alone (a bind over
	// the link would cover /bin/busybox and every applet), see supervisor/agentjudge.go.
	sh, err := os.ReadFile(busybox)
	if err != nil {
		return nil, fmt.Errorf("%w: read busybox %s: %w", ErrAgentInput, busybox, err)
	}
	p.host = append(p.host, hostFile{to: "bin/sh", mode: 0o755, data: sh})

	h := sha256.New()
	fmt.Fprintf(h, "%s\nbase %s\n", agentLayerFormat, p.baseDiff)
	for _, f := range p.host {
		fmt.Fprintf(h, "host %s %s %o\n", f.to, digest.FromBytes(f.data), f.mode)
	}
	for _, a := range p.cli {
		fmt.Fprintf(h, "npm %s %s %s %s\n", a.Type, a.Pin, a.Pin.URL, a.Pin.SHA256)
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

// CheckAgentTypes checks the agent types given to --with against AgentCLIs.
func CheckAgentTypes(with []string) error { return checkWith(with, AgentCLIs) }

func checkWith(with []string, known []AgentCLI) error {
	if len(with) == 0 {
		return fmt.Errorf("%w: no agent CLI selected; pass --with with one or more of: %s", ErrAgentInput, typeList(known))
	}
	for _, w := range with {
		if !slices.ContainsFunc(known, func(a AgentCLI) bool { return a.Type == w }) {
			return fmt.Errorf("%w: unknown agent CLI %q in --with; choose from: %s", ErrAgentInput, w, typeList(known))
		}
	}
	return nil
}

func typeList(cli []AgentCLI) string {
	var s []string
	for _, a := range cli {
		s = append(s, a.Type)
	}
	return strings.Join(s, ", ")
}

// readHostELF reads the real file behind p (Debian installs the musl loader as a link to
// its libc.so), and checks it is an ELF file of this architecture and type; static
// refuses one with a program interpreter.
func readHostELF(p, what, pkg string, typ elf.Type, static bool) ([]byte, error) {
	fix := "install it with: apt-get install musl bash-static"
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s (Debian package %s) is missing: %w; %s", ErrAgentInput, what, pkg, err, fix)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %w; %s", ErrAgentInput, what, p, err, fix)
	}
	if !fi.Mode().IsRegular() || fi.Size() > 64<<20 {
		return nil, fmt.Errorf("%w: %s %s (%s) is not a regular file under 64 MB; %s", ErrAgentInput, what, p, real, fix)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %w", ErrAgentInput, what, p, err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s (%s) is not an ELF file: %w; %s", ErrAgentInput, what, p, real, err, fix)
	}
	defer f.Close()
	if arch, ok := elfArch[f.Machine]; !ok || arch != runtime.GOARCH {
		return nil, fmt.Errorf("%w: %s %s (%s) is built for %s, this host runs %s", ErrAgentInput, what, p, real, f.Machine, runtime.GOARCH)
	}
	if f.Type != typ {
		return nil, fmt.Errorf("%w: %s %s (%s) is an ELF %s, want %s; %s", ErrAgentInput, what, p, real, f.Type, typ, fix)
	}
	if static {
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				return nil, fmt.Errorf("%w: %s %s (%s) is dynamically linked and cannot run in the image; %s", ErrAgentInput, what, p, real, fix)
			}
		}
	}
	return data, nil
}

// layerChunk is how much of the layer goes to containerd per write.
const layerChunk = 1 << 20

// corruptFileError says an extracted file in the download cache does not match its pin.
type corruptFileError struct {
	path string
	err  error
}

func (e *corruptFileError) Error() string {
	return fmt.Sprintf("cached %s does not match its pin: %v", e.path, e.err)
}

// agentLayer returns the CLI layer's descriptor, writing the layer into containerd's
// content store unless it is already there. It first writes the layer tar to a hasher
// only, which gives its digest and checks every cached file against its pinned sha256
// (a corrupt one is extracted again); then, if containerd lacks that digest, it streams
// the tar to containerd, checking the files and the digest again on the way. Binaries go
// through fixed-size buffers: nothing as big as a binary is held in memory.
func agentLayer(ctx context.Context, cs content.Store, f *Fetcher, plan *agentPlan) (ocispec.Descriptor, bool, error) {
	paths := make([][]string, len(plan.cli))
	extract := func(i int) error {
		a := plan.cli[i]
		files := make([]PackageFile, len(a.Files))
		for j, tf := range a.Files {
			files[j] = tf.PackageFile
		}
		var err error
		paths[i], err = f.Extracted(ctx, a.Pin, files)
		return err
	}
	for i := range plan.cli {
		if err := extract(i); err != nil {
			return ocispec.Descriptor{}, false, err
		}
	}
	buf := make([]byte, layerChunk)
	h := digest.SHA256.Digester()
	cw := &countWriter{}
	for retried := map[int]bool{}; ; {
		h.Hash().Reset()
		cw.n = 0
		err := writeAgentTar(io.MultiWriter(h.Hash(), cw), plan, paths, buf)
		var bad *corruptFileError
		if !errors.As(err, &bad) {
			if err != nil {
				return ocispec.Descriptor{}, false, err
			}
			break
		}
		i := slices.IndexFunc(paths, func(ps []string) bool { return slices.Contains(ps, bad.path) })
		if i < 0 || retried[i] {
			return ocispec.Descriptor{}, false, fmt.Errorf("%w: %w; remove %s and build again", ErrDownload, bad, filepath.Dir(bad.path))
		}
		retried[i] = true
		f.logf("%v: extracting it again\n", bad)
		if err := os.Remove(bad.path); err != nil {
			return ocispec.Descriptor{}, false, fmt.Errorf("%w: %w", ErrDownload, err)
		}
		if err := extract(i); err != nil {
			return ocispec.Descriptor{}, false, err
		}
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: h.Digest(), Size: cw.n}
	if _, err := cs.Info(ctx, desc.Digest); err == nil {
		return desc, true, nil
	}

	ref := fmt.Sprintf("ceval-agent-layer-%s-%d-%d", desc.Digest.Encoded()[:16], os.Getpid(), time.Now().UnixNano())
	w, err := content.OpenWriter(ctx, cs, content.WithRef(ref), content.WithDescriptor(desc))
	if errdefs.IsAlreadyExists(err) {
		return desc, true, nil // shared from another namespace
	}
	if err != nil {
		return ocispec.Descriptor{}, false, fmt.Errorf("build agent image: open content writer: %w", err)
	}
	committed := false
	defer func() {
		w.Close()
		if !committed {
			_ = cs.Abort(ctx, ref)
		}
	}()
	// containerd may start the writer at the end when another namespace holds the blob
	// (its shared content policy): committing then only adds the blob to this namespace.
	st, err := w.Status()
	if err != nil {
		return ocispec.Descriptor{}, false, fmt.Errorf("build agent image: content writer status: %w", err)
	}
	if st.Offset == desc.Size {
		if err := w.Commit(ctx, desc.Size, desc.Digest); err != nil && !errdefs.IsAlreadyExists(err) {
			return ocispec.Descriptor{}, false, fmt.Errorf("build agent image: commit shared CLI layer: %w", err)
		}
		committed = true
		return desc, true, nil
	}
	if st.Offset != 0 {
		if err := w.Truncate(0); err != nil {
			return ocispec.Descriptor{}, false, fmt.Errorf("build agent image: reset content writer: %w", err)
		}
	}
	h2 := digest.SHA256.Digester()
	bw := bufio.NewWriterSize(w, layerChunk)
	if err := writeAgentTar(io.MultiWriter(bw, h2.Hash()), plan, paths, buf); err != nil {
		return ocispec.Descriptor{}, false, fmt.Errorf("build agent image: write CLI layer to containerd: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return ocispec.Descriptor{}, false, fmt.Errorf("build agent image: write CLI layer to containerd: %w", err)
	}
	if h2.Digest() != desc.Digest {
		return ocispec.Descriptor{}, false, fmt.Errorf("build agent image: the CLI layer changed while it was written (%s, then %s); is another build rewriting the download cache? build again", desc.Digest, h2.Digest())
	}
	if err := w.Commit(ctx, desc.Size, desc.Digest); err != nil && !errdefs.IsAlreadyExists(err) {
		return ocispec.Descriptor{}, false, fmt.Errorf("build agent image: commit CLI layer: %w", err)
	}
	committed = true
	return desc, false, nil
}

// writeAgentTar writes the CLI layer, an uncompressed tar, to w: directories, the host
// files, then each CLI's files (copied from paths, each checked against its pinned size
// and sha256 as it is copied) and links. Entries carry fixed metadata, so the same inputs
// give the same bytes.
func writeAgentTar(w io.Writer, plan *agentPlan, paths [][]string, buf []byte) error {
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	addDirs := func(p string) {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for _, f := range plan.host {
		addDirs(f.to)
	}
	for _, a := range plan.cli {
		for _, f := range a.Files {
			addDirs(f.To)
		}
		for _, l := range a.Links {
			addDirs(l.Path)
		}
	}
	var names []string
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	for _, f := range plan.host {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.to, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	for i, a := range plan.cli {
		for j, f := range a.Files {
			if err := copyChecked(tw, paths[i][j], f, buf); err != nil {
				return err
			}
		}
		for _, l := range a.Links {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: l.Path, Linkname: l.Target, Mode: 0o777, ModTime: epoch}); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// copyChecked adds the cached file p to tw as f.To, hashing it on the way; a file of
// another size or sha256 than f's pins is a *corruptFileError.
func copyChecked(tw *tar.Writer, p string, f tarFile, buf []byte) error {
	fh, err := os.Open(p)
	if err != nil {
		return &corruptFileError{p, err}
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return &corruptFileError{p, err}
	}
	if !fi.Mode().IsRegular() || fi.Size() != f.Size {
		return &corruptFileError{p, fmt.Errorf("%d bytes, want %d", fi.Size(), f.Size)}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.To, Mode: f.Mode, Size: f.Size, ModTime: epoch}); err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.CopyBuffer(onlyWriter{io.MultiWriter(tw, h)}, onlyReader{io.LimitReader(fh, f.Size)}, buf)
	if err != nil {
		return fmt.Errorf("copy %s: %w", p, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != f.Size || got != f.SHA256 {
		return &corruptFileError{p, fmt.Errorf("%d bytes with sha256 %s, want %d bytes with sha256 %s", n, got, f.Size, f.SHA256)}
	}
	return nil
}

// onlyWriter and onlyReader hide ReadFrom/WriteTo so io.CopyBuffer uses the given buffer.
type onlyWriter struct{ io.Writer }
type onlyReader struct{ io.Reader }

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
