package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/client"
	"github.com/spf13/cobra"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/launcher"
	"ceval.dev/ceval/sandbox"
	"ceval.dev/ceval/task"
	"ceval.dev/ceval/verifier"
	"ceval.dev/ceval/wasm"
)

// containerTier is how a command reaches containerd for verifier containers: connect returns
// a client and its namespace (and what releases them), or why there is none.
type containerTier struct {
	connect   func() (*client.Client, string, func(), error)
	busybox   string
	ids       sandbox.IDRange
	preflight *images.PreflightCache
	allowHost bool // the user's --allow-host-network
	pins      *images.Pinner
	vnet      string // the user's verifier_network
}

// sessionTier uses a command's open session (ceval run, experiments).
func sessionTier(s *session, g *globalOptions, busybox string, ids sandbox.IDRange, allowHost bool, vnet string) containerTier {
	return containerTier{
		connect: func() (*client.Client, string, func(), error) { return s.client, g.namespace, func() {}, nil },
		busybox: busybox, ids: ids, preflight: s.preflight, allowHost: allowHost, vnet: vnet,
	}
}

// dialTier connects only when a criterion needs it (ceval grade, regrade).
func dialTier(cmd *cobra.Command, g *globalOptions, allowHost bool, vnet string) containerTier {
	ct := containerTier{connect: func() (*client.Client, string, func(), error) {
		c, _, err := g.connectRuns(context.WithoutCancel(cmd.Context()), cmd)
		if err != nil {
			return nil, "", nil, err
		}
		return c, g.namespace, func() {
			images.WaitTouches() // the last-used labels the verifiers' image lookups started
			c.Close()
		}, nil
	}, busybox: images.DefaultBusybox, allowHost: allowHost, vnet: vnet}
	if dir, err := images.DefaultCacheDir(); err == nil {
		ct.preflight, _ = images.NewPreflightCache(dir)
	}
	return ct
}

// executorFor returns the executor of the tasks' executing criteria, each in its tier: the
// WASM sandbox's worker when any criterion runs there (a run that needs none pays nothing),
// verifier containers when any declares sandbox: container. Without containerd those are
// NOT_GRADED with the reason. close releases both.
func executorFor(ct containerTier, tasks ...*task.Task) (ex grader.Executor, close func(), err error) {
	needWASM, needContainer, needToolbox := false, false, false
	needFullToolbox, needLiteToolbox := false, false
	for _, t := range tasks {
		for i := range t.Criteria {
			needToolbox = needToolbox || wasm.UsesToolbox(&t.Criteria[i])
			full := wasm.UsesFullToolbox(&t.Criteria[i])
			needFullToolbox = needFullToolbox || full
			needLiteToolbox = needLiteToolbox || wasm.UsesToolbox(&t.Criteria[i]) && !full
			switch t.Criteria[i].Tier() {
			case task.TierWASM:
				needWASM = true
			case task.TierContainer:
				needContainer = true
			}
		}
	}
	if !needWASM && !needContainer {
		return nil, func() {}, nil
	}
	tiers := grader.Tiers{}
	var closers []func()
	close = func() {
		for _, f := range closers {
			f()
		}
	}
	if needWASM {
		opts, err := wasmOptions(wasm.Options{Python: images.PythonSource(os.Stderr), NoToolboxPreload: !needToolbox,
			NoFullToolboxPreload: !needFullToolbox, NoLiteToolboxPreload: !needLiteToolbox})
		if err != nil {
			return nil, func() {}, fmt.Errorf("WASM sandbox for executing criteria: %w", err)
		}
		e, err := wasm.NewExecutor(opts)
		if err != nil {
			return nil, func() {}, fmt.Errorf("WASM sandbox for executing criteria: %w", err)
		}
		tiers.WASM = e
		closers = append(closers, func() {
			if interrupted.Load() {
				_ = e.Drop() // exit promptly: the next grade compiles and keeps
			} else {
				_ = e.Close()
			}
		})
	}
	if needContainer {
		if tiers.Container, tiers.ContainerMissing, err = ct.executor(&closers); err != nil {
			close()
			return nil, func() {}, err
		}
	}
	return tiers, close, nil
}

// executor connects and returns the verifier executor, or nil and why it cannot run; err
// when the daemon was refused (launcher.CheckStateDir): no criterion of it could run anyway.
func (ct containerTier) executor(closers *[]func()) (grader.Executor, string, error) {
	if ct.connect == nil {
		return nil, "this command has no containerd", nil
	}
	c, ns, release, err := ct.connect()
	var closed *launcher.StateDirClosedError
	if errors.As(err, &closed) {
		return nil, "", err
	}
	if err != nil {
		return nil, fmt.Sprintf("verifier containers need containerd: %v; start it (or pass --containerd-address) and grade again", err), nil
	}
	*closers = append(*closers, release)
	e, err := verifier.New(verifier.Options{Client: c, Namespace: ns, Busybox: ct.busybox, IDs: ct.ids, Preflight: ct.preflight, Pins: ct.pins, AllowHostNetwork: ct.allowHost, Network: ct.vnet, Log: os.Stderr})
	if err != nil {
		return nil, err.Error(), nil
	}
	*closers = append(*closers, func() { _ = e.Close() }) // the lent pytest's copy
	return e, "", nil
}

// experimentTasks lists the task of every entry of an experiment.
func experimentTasks(e *task.Experiment) []*task.Task {
	tasks := make([]*task.Task, len(e.Entries))
	for i := range e.Entries {
		tasks[i] = e.Entries[i].Task
	}
	return tasks
}

// gradingTiers says where a task's criteria are graded, for ceval plan: "static 2, wasm 1,
// container 1 (IMAGE)".
func gradingTiers(t *task.Task) string {
	var static, wasmN, ctr int
	var imgs []string
	for i := range t.Criteria {
		c := &t.Criteria[i]
		switch c.Tier() {
		case "":
			static++
		case task.TierWASM:
			wasmN++
		case task.TierContainer:
			ctr++
			if !slices.Contains(imgs, c.Verifier().Image) {
				imgs = append(imgs, c.Verifier().Image)
			}
		}
	}
	var parts []string
	if static > 0 {
		parts = append(parts, fmt.Sprintf("static %d", static))
	}
	if wasmN > 0 {
		parts = append(parts, fmt.Sprintf("wasm %d", wasmN))
	}
	if ctr > 0 {
		parts = append(parts, fmt.Sprintf("container %d (%s)", ctr, strings.Join(imgs, ", ")))
	}
	return strings.Join(parts, ", ")
}
