package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/platforms"
	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/registry"
)

func registryFlags(cmd *cobra.Command, o *registry.Options) {
	f := cmd.Flags()
	f.StringVar(&o.DockerConfig, "docker-config", "", "Docker config file with the registry credentials (auths entries; default: the config's docker_config, $DOCKER_CONFIG/config.json, else ~/.docker/config.json)")
	f.StringVar(&o.HostsDir, "hosts-dir", "", "containerd hosts directory: HOST/hosts.toml and HOST/ca.crt per registry (default: the config's hosts_dir, else "+registry.DefaultHostsDir+")")
}

// registryOptions is o with what the flags left out taken from ceval's config.
func registryOptions(o registry.Options, ucfg userConfig) registry.Options {
	if o.DockerConfig == "" {
		o.DockerConfig = ucfg.DockerConfig
	}
	if o.HostsDir == "" {
		o.HostsDir = ucfg.HostsDir
	}
	return o
}

// pullFlags are a run's registry flags: --pull and where credentials and hosts come from.
type pullFlags struct {
	policy string
	ro     registry.Options
}

func (p *pullFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.policy, "pull", "", "when to pull the registry images tasks name: missing (only what containerd lacks), always (ask the registry what a tag names when the images are pinned), never (default: the config's pull, else missing); each is pinned to its digest before the first run")
	registryFlags(cmd, &p.ro)
}

// pinner is the Pinner of the flags and ceval's config, its pulls' progress on w.
func (p *pullFlags) pinner(ucfg userConfig, w io.Writer) (*images.Pinner, error) {
	policy := p.policy
	if policy == "" {
		policy = ucfg.Pull
	}
	pp, err := images.ParsePullPolicy(policy)
	if err != nil {
		return nil, exitWith(exitInvalid, fmt.Errorf("--pull: %w", err))
	}
	pin := images.NewPinner(pp, registryOptions(p.ro, ucfg))
	pin.Log, pin.LeaseLabels = w, launcher.PullLeaseLabels()
	return pin, nil
}

// registryExitCode is imagesExitCode, with a fix in the user's registry files (credentials,
// CA) as bad input.
func registryExitCode(err error) (int, error) {
	if errors.Is(err, registry.ErrConfig) {
		return exitInvalid, err
	}
	return imagesExitCode(err), err
}

func newImagesPullCmd(g *globalOptions) *cobra.Command {
	var (
		ro       registry.Options
		platform string
	)
	cmd := &cobra.Command{
		Use:   "pull REF [--platform P]",
		Short: "Pull an image from a registry, preflight it and unpack it",
		Long: "pull fetches REF (HOST/REPO:TAG or HOST/REPO@sha256:DIGEST; a digest is verified) with\n" +
			"containerd's own registry client. Credentials come from the Docker config file's auths\n" +
			"entries; hosts, mirrors and CAs from containerd's hosts directory (HOST/hosts.toml,\n" +
			"HOST/ca.crt). TLS is always verified; plain HTTP is used only for a loopback registry\n" +
			"that does not speak TLS, or a host whose hosts.toml names an http:// server.\n" +
			"The image then gets the same preflight as `images check`: one holding a setuid/setgid file\n" +
			"or a file capability is refused and removed again, as is anything over the size bounds\n" +
			"(manifests and configs 4 MiB, layers 8 GiB). A pulled image that passed is runnable as it\n" +
			"is (its digest unchanged: runs pin it); `ceval run` pulls what a task names by itself (--pull).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if platform != "" {
				if _, err := platforms.Parse(platform); err != nil {
					return exitWith(exitInvalid, fmt.Errorf("--platform %q: %w; write OS/ARCH[/VARIANT], e.g. linux/amd64", platform, err))
				}
			}
			ref, err := registry.Normalize(args[0])
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			ucfg, err := g.config(cmd)
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			ro := registryOptions(ro, ucfg)
			res, err := ro.Resolver(registry.Quiet(cmd.Context()))
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			ctx = registry.Quiet(ctx)
			start := time.Now()
			log := cmd.ErrOrStderr()
			var live *pullProgress
			if isTerminal(log) { // bytes per blob, redrawn in place
				live = startPullProgress(ctx, log, func(ctx context.Context) ([]content.Status, error) { return c.ContentStore().ListStatuses(ctx) }, 200*time.Millisecond)
				log = live
			}
			img, _, err := images.Pull(ctx, c, ref, images.PullOptions{Resolver: res, Platform: platform, Log: log, LeaseLabels: launcher.PullLeaseLabels()})
			if live != nil {
				live.Stop()
			}
			if err != nil {
				return exitWith(registryExitCode(ro.Explain(ref, err)))
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "pulled %s in %s\n", img.Name, time.Since(start).Round(time.Millisecond))
			printImage(out, img)
			fmt.Fprintln(out, "it passed the preflight; a task may name it as sandbox.image (ceval images check "+img.Name+" shows the details)")
			return nil
		},
	}
	registryFlags(cmd, &ro)
	cmd.Flags().StringVar(&platform, "platform", "", "OS/ARCH[/VARIANT] to pull from a multi-platform image (default: this host's)")
	return cmd
}

func newImagesPushCmd(g *globalOptions) *cobra.Command {
	var ro registry.Options
	var kubernetes bool
	var busybox string
	cmd := &cobra.Command{
		Use:   "push NAME REF | push --kubernetes [TASK|EXPERIMENT...]",
		Short: "Push a local image (this platform) to a registry as REF, or every image Kubernetes runs need",
		Long: "push sends image NAME (this platform's manifest, config and layers) to REF with\n" +
			"containerd's own registry client; credentials and hosts as for `images pull`.\n\n" +
			"--kubernetes pushes every ceval image a Kubernetes run of the tasks needs (the init\n" +
			"image and each task's ceval.local image: default, agent or package image, built first\n" +
			"as a run would; without tasks the init and default images) to where ceval's config maps\n" +
			"it: kubernetes.images[NAME], else kubernetes.registry/NAME:TAG. Runs then name each by\n" +
			"the digest its reference resolves to (image_pull_policy IfNotPresent).",
		Args: func(cmd *cobra.Command, args []string) error {
			if kubernetes {
				return nil
			}
			if len(args) != 2 {
				return exitWith(exitInvalid, fmt.Errorf("give NAME REF (got %d arguments), or --kubernetes with task files", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if kubernetes {
				return pushForKubernetes(cmd, g, args, ro, busybox)
			}
			ref, err := registry.Normalize(args[1])
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			ucfg, err := g.config(cmd)
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			ro := registryOptions(ro, ucfg)
			res, err := ro.Resolver(registry.Quiet(cmd.Context()))
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			c, ctx, err := g.connect(cmd.Context(), cmd)
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			defer c.Close()
			ctx = registry.Quiet(ctx)
			img, err := images.Push(ctx, c, args[0], ref, res, cmd.ErrOrStderr())
			if err != nil {
				return exitWith(registryExitCode(ro.Explain(ref, err)))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pushed %s to %s\n", img.Name, ref)
			printImage(cmd.OutOrStdout(), img)
			return nil
		},
	}
	registryFlags(cmd, &ro)
	cmd.Flags().BoolVar(&kubernetes, "kubernetes", false, "push every ceval image a Kubernetes run of the tasks needs to the registry kubernetes.registry (or kubernetes.images) maps it to")
	cmd.Flags().StringVar(&busybox, "busybox", images.DefaultBusybox, "statically linked busybox the init image and a first default image are built with")
	return cmd
}
