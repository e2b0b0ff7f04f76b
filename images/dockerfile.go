package images

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images/archive"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"

	"ceval.dev/ceval/internal/lazyregexp"
	"ceval.dev/ceval/internal/procgroup"
	"ceval.dev/ceval/internal/tempdir"
)

// DockerfileOptions says how to build an image from a Dockerfile.
type DockerfileOptions struct {
	Name       string   // image name, required
	Dockerfile string   // path of the Dockerfile
	Context    string   // build context directory; "" = the Dockerfile's directory
	BuildArgs  []string // KEY=VALUE
	Log        io.Writer
	// Pins pulls (as its policy allows) a FROM image containerd lacks, pinned to its
	// digest; nil: such a FROM is left to buildah, which is told never to pull.
	Pins *Pinner
}

var (
	buildArgPattern = lazyregexp.New(`^[A-Za-z_][A-Za-z0-9_]*=`)
	fromPattern     = lazyregexp.New(`(?i)^(\s*FROM\s+)((?:--platform=\S+\s+)?)(\S+)(.*)$`)
)

// BuildDockerfile builds a Dockerfile with buildah (Debian's, no daemon) and imports the
// result through the same path as `ceval images import`; the image is labeled only after
// the same preflight as `ceval images label` (a RUN step that leaves a setuid/setgid file
// or a file capability is refused, with the files named). A FROM naming an image in ctx's
// containerd namespace (a package image, an imported archive) is handed to buildah as an
// OCI archive exported from containerd, so no registry is asked for it. buildah keeps its
// storage in a temporary directory (vfs driver, no mounts left behind) and runs RUN steps
// with its OCI isolation (runc, host network for apt).
func BuildDockerfile(ctx context.Context, c *client.Client, opts DockerfileOptions) (Image, error) {
	if err := checkImageName(&opts.Name); err != nil {
		return Image{}, err
	}
	buildah, err := exec.LookPath("buildah")
	if err != nil {
		return Image{}, fmt.Errorf("%w: buildah is not installed; install it with: apt-get install buildah (or make setup)", ErrPackageInput)
	}
	for _, a := range opts.BuildArgs {
		if !buildArgPattern.MatchString(a) {
			return Image{}, fmt.Errorf("%w: --build-arg %q: want KEY=VALUE", ErrPackageInput, a)
		}
	}
	df, err := os.ReadFile(opts.Dockerfile)
	if err != nil {
		return Image{}, fmt.Errorf("%w: %w", ErrPackageInput, err)
	}
	buildCtx := opts.Context
	if buildCtx == "" {
		buildCtx = filepath.Dir(opts.Dockerfile)
	}
	if fi, err := os.Stat(buildCtx); err != nil || !fi.IsDir() {
		return Image{}, fmt.Errorf("%w: build context %s is not a directory", ErrPackageInput, buildCtx)
	}

	tmp, err := tempdir.Make("", "ceval-buildah-")
	if err != nil {
		return Image{}, err
	}
	defer tempdir.Remove(tmp)
	rewritten, err := localBases(ctx, c, string(df), tmp, opts.Pins)
	if err != nil {
		return Image{}, err
	}
	dfPath := filepath.Join(tmp, "Dockerfile")
	if err := os.WriteFile(dfPath, []byte(rewritten), 0o600); err != nil {
		return Image{}, err
	}
	global := []string{"--root", filepath.Join(tmp, "storage"), "--runroot", filepath.Join(tmp, "run"), "--storage-driver", "vfs"}
	tag := "localhost/ceval-build:latest"
	bud := append(slices.Clone(global), "bud", "--isolation", "oci", "--network", "host", "--layers=false", "--pull-never", "-f", dfPath, "-t", tag)
	for _, a := range opts.BuildArgs {
		bud = append(bud, "--build-arg", a)
	}
	bud = append(bud, buildCtx)
	if err := runBuildah(ctx, buildah, bud, opts.Log); err != nil {
		return Image{}, err
	}
	out := filepath.Join(tmp, "image.tar")
	if err := runBuildah(ctx, buildah, append(slices.Clone(global), "push", "--format", "oci", tag, "oci-archive:"+out+":"+opts.Name), opts.Log); err != nil {
		return Image{}, err
	}
	f, err := os.Open(out)
	if err != nil {
		return Image{}, err
	}
	defer f.Close()
	imgs, err := Import(ctx, c, bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return Image{}, err
	}
	if len(imgs) != 1 || imgs[0].Name != opts.Name {
		return Image{}, fmt.Errorf("buildah's archive held %v, want one image %s", imgs, opts.Name)
	}
	img, err := Label(ctx, c, opts.Name)
	if err == nil {
		err = setSource(ctx, c, opts.Name, SourceBuilt)
		img.Source = SourceBuilt
	}
	if err != nil {
		// Leave no image that failed its preflight under the name the user asked for.
		if derr := c.ImageService().Delete(ctx, opts.Name); derr != nil && !errdefs.IsNotFound(derr) {
			err = errors.Join(err, fmt.Errorf("delete the refused image %s: %w", opts.Name, derr))
		}
		return Image{}, err
	}
	return img, nil
}

// localBases rewrites each FROM that names an image present in containerd to an
// oci-archive: reference of that image exported into dir; with pins, a FROM containerd
// lacks is pulled first (pinned: the archive is of the digest it resolved to). Other FROMs
// (scratch, an earlier stage, one naming a build argument) stay as they are.
func localBases(ctx context.Context, c *client.Client, df, dir string, pins *Pinner) (string, error) {
	lines := strings.Split(df, "\n")
	exported := map[string]string{}
	stages := map[string]bool{}
	for i, line := range lines {
		m := fromPattern.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ref := m[3]
		earlierStage := stages[strings.ToLower(ref)]
		if f := strings.Fields(m[4]); len(f) == 2 && strings.EqualFold(f[0], "AS") {
			stages[strings.ToLower(f[1])] = true // a name for the FROMs after this one
		}
		if strings.EqualFold(ref, "scratch") || earlierStage || strings.Contains(ref, "$") {
			continue
		}
		if rec, err := getRecord(ctx, c, ref); err == nil {
			ref = rec.Name // a short name (ubuntu:24.04) is present as docker.io/library/ubuntu:24.04
		} else {
			var nf *NotFoundError
			if !errors.As(err, &nf) {
				return "", err
			}
			if pins == nil {
				continue
			}
			pin, perr := pins.Pin(ctx, c, ref)
			if perr != nil {
				return "", fmt.Errorf("%w: FROM %s (Dockerfile line %d): %w", ErrPackageInput, ref, i+1, perr)
			}
			if pins.Log != nil {
				fmt.Fprintf(pins.Log, "FROM %s: pinned to %s\n", ref, pin.Digest)
			}
			ref = PinnedName(pin)
		}
		p, ok := exported[ref]
		if !ok {
			p = filepath.Join(dir, fmt.Sprintf("base-%d.tar", len(exported)))
			if err := exportImage(ctx, c, ref, p); err != nil {
				return "", err
			}
			exported[ref] = p
		}
		lines[i] = m[1] + m[2] + "oci-archive:" + p + m[4]
	}
	return strings.Join(lines, "\n"), nil
}

func exportImage(ctx context.Context, c *client.Client, ref, dst string) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := c.Export(ctx, bw, archive.WithImage(c.ImageService(), ref), archive.WithPlatform(platforms.DefaultStrict())); err != nil {
		return fmt.Errorf("export base image %s for buildah: %w", ref, err)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func runBuildah(ctx context.Context, buildah string, args []string, log io.Writer) error {
	// SIGTERM first: buildah then stops its RUN step's container, which runc put in a
	// session of its own; SIGKILL to buildah's group would leave that step running.
	cmd := procgroup.Command(ctx, buildah, args...)
	tail := &tailBuffer{max: 8 << 10}
	var w io.Writer = tail
	if log != nil {
		w = io.MultiWriter(tail, log)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: buildah %s: %w; its last output:\n%s", ErrPackageBuild, strings.Join(args, " "), err, tail.String())
	}
	return nil
}
