package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/registry"
	"ceval.dev/ceval/task"
)

// pushForKubernetes is ceval images push --kubernetes [TASK|EXPERIMENT...]: every ceval
// image a Kubernetes run of those tasks needs (the init image, and each task's ceval.local
// image: the default, agent or package image, built first as a run would) pushed to where
// kubernetes.registry / kubernetes.images map it, each checked by the preflight a run makes.
// Without tasks: the init image and the default image.
func pushForKubernetes(cmd *cobra.Command, g *globalOptions, args []string, ro registry.Options, busybox string) error {
	ucfg, err := g.config(cmd)
	if err != nil {
		return exitWith(exitInvalid, err)
	}
	var k kubeConfig
	if ucfg.Kubernetes != nil {
		k = *ucfg.Kubernetes
	}
	m := k.nodeRegistry()
	if m.Empty() {
		return exitWith(exitInvalid, fmt.Errorf("--kubernetes: ceval's config maps no image to a registry: set kubernetes.registry: HOST[:PORT]/PATH (the repository prefix the cluster's nodes pull from) in %s", g.configPath))
	}
	if k.ImagePullPolicy == "Never" {
		return exitWith(exitInvalid, errors.New("--kubernetes: kubernetes.image_pull_policy is Never: the nodes would never pull what is pushed; drop it (IfNotPresent is then the default)"))
	}
	sandboxes, err := kubePushSandboxes(args)
	if err != nil {
		return err
	}
	ro = registryOptions(ro, ucfg)
	if _, err := ro.Resolver(registry.Quiet(cmd.Context())); err != nil {
		return exitWith(exitInvalid, err) // the credentials file, before anything is built
	}
	c, ctx, err := g.connect(cmd.Context(), cmd)
	if err != nil {
		return exitWith(exitInfraErr, err)
	}
	defer c.Close()
	ctx = registry.Quiet(ctx)
	names, err := kubePushImages(ctx, c, k.InitImage, sandboxes, busybox, cmd.ErrOrStderr())
	if err != nil {
		return exitWith(imagesExitCode(err), err)
	}
	out := cmd.OutOrStdout()
	for _, n := range names.remote {
		fmt.Fprintf(out, "%s: a registry image, pulled by the nodes as the task names it (pinned by digest at run time)\n", n)
	}
	newResolver := func() (remotes.Resolver, error) { return ro.Resolver(ctx) }
	pushed, err := images.NodePush(ctx, c, m, names.local, newResolver, cmd.ErrOrStderr())
	for _, p := range pushed {
		fmt.Fprintf(out, "pushed %s -> %s (%s)\n", p.Name, p.Reference, p.ByDigest())
	}
	if err != nil {
		var ref string
		if len(pushed) < len(names.local) {
			ref, _ = m.Ref(names.local[len(pushed)])
		}
		return exitWith(registryExitCode(ro.Explain(ref, err)))
	}
	fmt.Fprintf(out, "%d image(s) pushed; runs with backend: kubernetes name them by digest (image_pull_policy %s)\n", len(pushed), k.pullPolicy())
	return nil
}

// kubePushList is what a push for Kubernetes sends (ceval's own images, in order) and what
// it leaves to the nodes (registry images the tasks name).
type kubePushList struct{ local, remote []string }

// kubePushSandboxes loads the tasks (task files, directories, an experiment file) and
// returns their sandboxes; none given: the default image's.
func kubePushSandboxes(args []string) ([]task.Sandbox, error) {
	if len(args) == 0 {
		return []task.Sandbox{{Image: images.DefaultName}}, nil
	}
	var out []task.Sandbox
	var problems []error
	for _, a := range args {
		if task.IsExperiment(a) {
			e, err := task.LoadExperiment(a, task.ExperimentOptions{})
			if err != nil {
				problems = append(problems, err)
				continue
			}
			for _, en := range e.Entries {
				out = append(out, en.Task.Sandbox)
			}
			continue
		}
		ts, err := task.LoadAll(a, task.LoadOptions{})
		if err != nil {
			problems = append(problems, err)
			continue
		}
		for _, t := range ts {
			out = append(out, t.Sandbox)
		}
	}
	if len(problems) > 0 {
		return nil, exitWith(exitInvalid, errors.Join(problems...))
	}
	return out, nil
}

// kubePushImages makes sure each ceval image the runs need is in c (the init image built
// when it is this ceval's, package images built, the default image built on first use) and
// passes a run's preflight, and lists them: the init image first, then each sandbox's
// image once.
func kubePushImages(ctx context.Context, c *client.Client, initImage string, sbs []task.Sandbox, busybox string, log io.Writer) (kubePushList, error) {
	var l kubePushList
	seen := map[string]bool{}
	if initImage == "" || initImage == images.InitName() {
		if _, err := images.BuildInit(ctx, c, images.InitOptions{}); err != nil {
			return l, err
		}
		initImage = images.InitName()
	}
	if _, own := images.Own(initImage); own {
		l.local = append(l.local, initImage)
	} else {
		l.remote = append(l.remote, initImage)
	}
	seen[initImage] = true
	for _, sb := range sbs {
		if seen[sb.Image] {
			continue
		}
		seen[sb.Image] = true
		if _, own := images.Own(sb.Image); !own {
			l.remote = append(l.remote, sb.Image)
			continue
		}
		if _, err := images.ResolveSandbox(ctx, c, sb, nil, nil, busybox, log); err != nil {
			return l, err
		}
		l.local = append(l.local, sb.Image)
	}
	return l, nil
}
