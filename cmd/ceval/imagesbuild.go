package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/registry"
)

func newImagesBuildCmd(g *globalOptions) *cobra.Command {
	var (
		o          images.PackageOptions
		dockerfile string
		buildArgs  []string
		pf         pullFlags
	)
	cmd := &cobra.Command{
		Use:   "build NAME (--packages PKG,... [--suite SUITE] [--pip NAME==VERSION --pip-find-links DIR] [--agent-clis] [--force] | -f Dockerfile [--build-arg K=V] [CONTEXT])",
		Short: "Build a Debian image with the given packages (mmdebstrap), labeled for agents",
		Long: "build assembles a Debian minbase rootfs with mmdebstrap (apt-get install mmdebstrap) from\n" +
			"the host's apt sources (another --suite uses Debian's mirror), adds the agent user " + fmt.Sprint(policy.AgentUID) + ",\n" +
			"/workspace and /home/agent, and stores it as one reproducible layer (SOURCE_DATE_EPOCH, fixed\n" +
			"order and metadata): setuid/setgid bits and file capabilities are removed, device nodes dropped,\n" +
			"then the layer is preflighted and the image labeled " + images.IsolationLabel + "=" + images.IsolationLabelValue + ".\n" +
			"--pip installs pinned Python packages at build time from wheels on disk (--pip-find-links,\n" +
			"pip runs with --no-index). --agent-clis adds the pinned Claude Code and Codex CLIs.\n" +
			"Images are cached by their resolved inputs (the request, the apt sources and the package lists\n" +
			"apt-get update fetched, the wheels, the CLI pins) in $XDG_CACHE_HOME/ceval/images (default\n" +
			"~/.cache/ceval/images): the same inputs keep the image or import it from the cache.\n\n" +
			"-f Dockerfile builds with buildah (apt-get install buildah) instead: RUN steps run under runc\n" +
			"with the host's network (for apt), as root: build only Dockerfiles you trust. A FROM naming an\n" +
			"image in containerd (a package image, an imported archive) is exported to buildah; one that\n" +
			"is not is pulled first (--pull, credentials and hosts as for `images pull`), pinned to its\n" +
			"digest, and exported the same way: buildah itself never pulls. The result is imported and labeled only after the same preflight as\n" +
			"`images label`: a setuid/setgid file or file capability makes it fail, naming the files.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if (dockerfile == "") == (len(o.Packages) == 0 && len(o.Pip) == 0) {
				return exitWith(exitInvalid, fmt.Errorf("images build %s: give either --packages (and/or --pip) or -f Dockerfile", o.Name))
			}
			if dockerfile == "" && len(args) > 1 {
				return exitWith(exitInvalid, fmt.Errorf("images build %s: a CONTEXT directory goes only with -f Dockerfile", o.Name))
			}
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			if dockerfile != "" {
				ucfg, err := g.config(cmd)
				if err != nil {
					return exitWith(exitInvalid, err)
				}
				pins, err := pf.pinner(ucfg, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				d := images.DockerfileOptions{Name: o.Name, Dockerfile: dockerfile, BuildArgs: buildArgs, Log: cmd.ErrOrStderr(), Pins: pins}
				if len(args) > 1 {
					d.Context = args[1]
				}
				start := time.Now()
				img, err := images.BuildDockerfile(registry.Quiet(ctx), c, d)
				if err != nil {
					return exitWith(registryExitCode(err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "built %s from %s in %s, labeled %s=%s\n", img.Name, dockerfile, time.Since(start).Round(time.Millisecond), images.IsolationLabel, images.IsolationLabelValue)
				printImage(cmd.OutOrStdout(), img)
				return nil
			}
			o.Log = cmd.ErrOrStderr()
			o.Fetcher = &images.Fetcher{Log: cmd.ErrOrStderr()}
			start := time.Now()
			b, err := images.BuildPackages(ctx, c, o)
			if err != nil {
				return exitWith(imagesExitCode(err), err)
			}
			printPackageBuild(cmd.OutOrStdout(), b, time.Since(start))
			return nil
		},
	}
	pf.add(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&o.Packages, "packages", nil, "Debian packages, comma-separated (e.g. python3,nodejs,git)")
	f.StringVar(&o.Suite, "suite", "", "Debian suite (default: the host's, with its apt sources)")
	f.StringArrayVar(&o.Pip, "pip", nil, "a pinned Python requirement NAME==VERSION [--hash=sha256:HEX], repeatable")
	f.StringVar(&o.PipFindLinks, "pip-find-links", "", "directory of wheels --pip installs from (required with --pip)")
	f.BoolVar(&o.AgentCLIs, "agent-clis", false, "add the pinned Claude Code and Codex CLIs, as build-agent does")
	f.BoolVar(&o.Force, "force", false, "build again even when an image or cache entry has the same inputs")
	f.StringVarP(&dockerfile, "file", "f", "", "build this Dockerfile with buildah instead of --packages")
	f.StringArrayVar(&buildArgs, "build-arg", nil, "with -f: a build argument KEY=VALUE, repeatable")
	return cmd
}

func printPackageBuild(w io.Writer, b images.PackageBuild, took time.Duration) {
	how := "built"
	switch {
	case b.Kept:
		how = "up to date (--force rebuilds):"
	case b.Cached:
		how = "imported from the image cache:"
	}
	fmt.Fprintf(w, "%s %s in %s\n", how, b.Image.Name, took.Round(time.Millisecond))
	printImage(w, b.Image)
	fmt.Fprintf(w, "  inputs    %s\n", b.Inputs)
	if b.Size > 0 {
		fmt.Fprintf(w, "  size      %d MB (uncompressed)\n", b.Size>>20)
	}
	if len(b.Versions) > 0 {
		fmt.Fprintf(w, "  packages  %s\n", strings.Join(b.Versions, " "))
	}
	if len(b.Neutralised) > 0 {
		var ps []string
		for _, n := range b.Neutralised {
			ps = append(ps, n.Path+" ("+n.Kind+")")
		}
		fmt.Fprintf(w, "  removed   %d privilege bits: %s\n", len(ps), strings.Join(ps, ", "))
	}
}

func newImagesPruneCacheCmd() *cobra.Command {
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "prune-cache [--older-than 720h]",
		Short: "Remove package images from the on-disk image cache that no build used lately",
		Long: "prune-cache removes the entries of the image cache ($XDG_CACHE_HOME/ceval/images, default\n" +
			"~/.cache/ceval/images) that no `images build`, build-agent or task run used for --older-than,\n" +
			"and builds that died half-way. Images in containerd stay; a pruned one is built again when\n" +
			"containerd lacks it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pruned, err := images.PruneImageCache("", olderThan)
			var total int64
			for _, p := range pruned {
				total += p.Size
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s (%d MB, last used %s)\n", p.Dir, p.Size>>20, p.LastUsed.Format(time.DateOnly))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d entries, %d MB freed\n", len(pruned), total>>20)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 30*24*time.Hour, "remove entries unused for this long")
	return cmd
}
