package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
)

func newImagesCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build, import, check and label the images agents run in",
		Long: "A run puts an agent only in an image labeled " + images.IsolationLabel + "=" + images.IsolationLabelValue + "\n" +
			"with no setuid/setgid files and no file capabilities. build-default makes such an\n" +
			"image from a static busybox; build makes a Debian image with the packages you name;\n" +
			"build-agent makes a Debian userland with the real Claude Code and Codex CLIs;\n" +
			"build-init makes the init image a Kubernetes run's Pod installs ceval-init from;\n" +
			"import brings in an OCI or docker-save archive; pull and push talk to a registry;\n" +
			"export writes an archive; check reports on an image; label marks\n" +
			"a checked image as ready.",
	}
	cmd.AddCommand(newImagesBuildCmd(g), newImagesPruneCacheCmd(), newImagesBuildDefaultCmd(g), newImagesBuildInitCmd(g), newImagesBuildAgentCmd(g), newImagesImportCmd(g), newImagesPullCmd(g), newImagesPushCmd(g), newImagesLsCmd(g), newImagesPruneCmd(g), newImagesExportCmd(g), newImagesLabelCmd(g), newImagesCheckCmd(g))
	return cmd
}

func newImagesBuildDefaultCmd(g *globalOptions) *cobra.Command {
	var busybox string
	cmd := &cobra.Command{
		Use:   "build-default",
		Short: "Build " + images.DefaultName + " from a static busybox, without a registry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			start := time.Now()
			img, err := images.BuildDefault(ctx, c, images.DefaultOptions{Busybox: busybox})
			if err != nil {
				return exitWith(imagesExitCode(err), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s in %s\n", img.Name, time.Since(start).Round(time.Millisecond))
			printImage(cmd.OutOrStdout(), img)
			return nil
		},
	}
	cmd.Flags().StringVar(&busybox, "busybox", images.DefaultBusybox, "statically linked busybox to put in the image (Debian: apt-get install busybox-static)")
	return cmd
}

func newImagesBuildAgentCmd(g *globalOptions) *cobra.Command {
	var (
		with    []string
		busybox string
		offline bool
		force   bool
		minimal bool
	)
	cmd := &cobra.Command{
		Use:   "build-agent [--with " + strings.Join(images.AgentTypes(), ",") + "] [--minimal] [--offline] [--force]",
		Short: "Build " + images.AgentName + ": a Debian userland plus the real agent CLIs",
		Long: "build-agent builds " + images.AgentName + " as `images build --agent-clis` does: Debian packages\n" +
			"(" + strings.Join(images.AgentPackages, " ") + ")\n" +
			"from mmdebstrap plus the pinned real CLIs from the npm registry (sha256 checked), so Claude\n" +
			"Code and Codex can run python, node, git and rg. --minimal builds the old busybox image instead:\n" +
			"the default image plus the CLIs, musl's loader and a static bash from this host\n" +
			"(Debian: apt-get install musl bash-static). Labeled " + images.IsolationLabel + "=" + images.IsolationLabelValue + ".\n" +
			"Pinned:\n" + agentPins() +
			"Downloads are cached in $XDG_CACHE_HOME/ceval/dl (default ~/.cache/ceval/dl) and checked on\n" +
			"every use. An image already built from the same inputs is kept as it is (--force rebuilds).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := images.CheckAgentTypes(with); err != nil {
				return exitWith(exitInvalid, err)
			}
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			start := time.Now()
			fetcher := &images.Fetcher{Offline: offline, Log: cmd.ErrOrStderr()}
			out := cmd.OutOrStdout()
			if !minimal {
				b, err := images.BuildPackages(ctx, c, images.PackageOptions{
					Name: images.AgentName, Packages: images.AgentPackages, AgentCLIs: true, With: with,
					Force: force, Fetcher: fetcher, Log: cmd.ErrOrStderr(),
				})
				if err != nil {
					return exitWith(imagesExitCode(err), err)
				}
				printPackageBuild(out, b, time.Since(start))
				return nil
			}
			b, err := images.BuildAgent(ctx, c, images.AgentOptions{
				With: with, Busybox: busybox, Force: force, Fetcher: fetcher, Log: cmd.ErrOrStderr(),
			})
			if err != nil {
				return exitWith(imagesExitCode(err), err)
			}
			if b.Kept {
				fmt.Fprintf(out, "%s is up to date (inputs %s), checked in %s; --force rebuilds it\n", b.Image.Name, b.Inputs, time.Since(start).Round(time.Millisecond))
			} else {
				fmt.Fprintf(out, "built %s in %s (CLI layer %d MB, uncompressed)\n", b.Image.Name, time.Since(start).Round(time.Millisecond), b.LayerSize>>20)
			}
			printImage(out, b.Image)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&with, "with", images.AgentTypes(), "agent CLIs to put in the image, comma-separated: "+strings.Join(images.AgentTypes(), ", "))
	f.BoolVar(&minimal, "minimal", false, "build the busybox agent image (no Debian userland; needs no mmdebstrap)")
	f.StringVar(&busybox, "busybox", images.DefaultBusybox, "with --minimal: statically linked busybox for the default layer (Debian: apt-get install busybox-static)")
	f.BoolVar(&offline, "offline", false, "never download the CLIs: use only the download cache (fails when a package is missing there)")
	f.BoolVar(&force, "force", false, "rebuild even when the image was built from the same inputs")
	return cmd
}

func agentPins() string {
	var b strings.Builder
	for _, a := range images.AgentCLIs {
		fmt.Fprintf(&b, "  %-12s %s (sha256 %s)\n", a.Type, a.Pin, a.Pin.SHA256)
	}
	return b.String()
}

func newImagesImportCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE",
		Short: "Import an OCI image layout tarball or a docker save archive, and unpack it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			defer f.Close()
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			imgs, err := images.Import(ctx, c, f)
			if err != nil {
				return exitWith(exitInfraErr, fmt.Errorf("%s: %w", args[0], err))
			}
			out := cmd.OutOrStdout()
			for _, img := range imgs {
				fmt.Fprintf(out, "imported %s\n", img.Name)
				printImage(out, img)
			}
			fmt.Fprintln(out, "check an image before running agents in it: ceval images check IMAGE")
			return nil
		},
	}
}

func newImagesExportCmd(g *globalOptions) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "export NAME -o FILE",
		Short: "Write an image as an OCI image layout tarball (to push to a registry or import into a cluster node)",
		Long: "export writes NAME (this platform) to FILE as an OCI archive that names it. For a local\n" +
			"Kubernetes node: CEVAL_CONTAINERD_ADDRESS=NODE_SOCKET ceval images import --namespace k8s.io FILE,\n" +
			"then run with imagePullPolicy Never.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return exitWith(exitInvalid, errors.New("export: -o FILE is required"))
			}
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			img, err := exportImage(ctx, c, args[0], out)
			if err != nil {
				return exitWith(imagesExitCode(err), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported %s to %s\n", img.Name, out)
			printImage(cmd.OutOrStdout(), img)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the archive to write (replaced only once complete)")
	return cmd
}

// exportImage writes the archive next to path and renames it into place, so a failed export
// never leaves a truncated archive under the name.
func exportImage(ctx context.Context, c *client.Client, name, path string) (images.Image, error) {
	var img images.Image
	err := writeArchive(path, func(w io.Writer) (err error) {
		img, err = images.Export(ctx, c, name, w)
		return err
	})
	if err != nil {
		return images.Image{}, fmt.Errorf("export %s to %s: %w", name, path, err)
	}
	return img, nil
}

// writeArchive writes a file next to path with write and renames it into place only once
// complete.
func writeArchive(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return err
}

func newImagesLabelCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "label IMAGE",
		Short: "Mark an image isolation-ready, after its preflight finds nothing dangerous",
		Long: "label scans IMAGE; if it holds no setuid/setgid file and no file capability it writes a\n" +
			"new image config with " + images.IsolationLabel + "=" + images.IsolationLabelValue + " (layers unchanged)\n" +
			"and points IMAGE at it. Otherwise it refuses and lists what it found.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			img, err := images.Label(ctx, c, args[0])
			if err != nil {
				return exitWith(imagesExitCode(err), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "labeled %s %s=%s\n", img.Name, images.IsolationLabel, images.IsolationLabelValue)
			printImage(cmd.OutOrStdout(), img)
			return nil
		},
	}
}

func newImagesCheckCmd(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check IMAGE",
		Short: "Preflight an image: label, setuid/setgid files, file capabilities, agent user",
		Long:  "check prints one line per check. It exits 0 only when a run may use the image:\nlabeled, and no setuid/setgid file or file capability.",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			rep, err := images.Preflight(ctx, c, args[0])
			if err != nil {
				return exitWith(imagesExitCode(err), err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(struct {
					*images.Report
					Checks   []images.Check `json:"checks"`
					Runnable bool           `json:"runnable"`
				}{rep, rep.Checks(), rep.Runnable() == nil}); err != nil {
					return exitWith(exitInfraErr, err)
				}
			} else {
				printImage(out, rep.Image)
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				for _, ch := range rep.Checks() {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Status, ch.Name, ch.Detail)
					if ch.Fix != "" {
						fmt.Fprintf(tw, "\t\tfix: %s\n", ch.Fix)
					}
				}
				tw.Flush()
			}
			if err := rep.Runnable(); err != nil {
				return exitWith(exitFailure, err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func printImage(w io.Writer, img images.Image) {
	fmt.Fprintf(w, "  image     %s\n  manifest  %s\n  config    %s\n", img.Name, img.ManifestDigest, img.ConfigDigest)
}

// imagesExitCode maps an images error to an exit code: what the user named or gave is
// bad input, a refused image is a failed check, anything else is containerd's side.
func imagesExitCode(err error) int {
	var notFound *images.NotFoundError
	switch {
	case errors.Is(err, images.ErrNotRunnable):
		return exitFailure
	case errors.Is(err, images.ErrBusybox), errors.Is(err, images.ErrAgentInput), errors.Is(err, images.ErrPackageInput), errors.As(err, &notFound):
		return exitInvalid
	default:
		return exitInfraErr
	}
}
