package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/phasetime"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox/kubernetes"
	"ceval.dev/ceval/supervisor"
	"ceval.dev/ceval/task"
)

// runFlags are ceval run's flags that go into every run's supervisor.Options (runFlags.options).
type runFlags struct {
	runsDir      string
	allowEnv     []string
	allowHostNet bool
	grace        time.Duration
	busybox      string
	agent        string // --agent as given
}

// runOptions is what every run of a command shares, from its flags and the user's config:
// the runs directory, a new run ID, ceval's version, the busybox, the ID range, the config's
// allow_host_network and verifier_network. ceval audit runs with it as it is (its built-in
// agents get no host variables, prices or judge model); ceval run adds its own flags'
// (runFlags.options). The session's parts (Client, Preflight, Executor, Pins) are set once
// it is open.
func runOptions(ucfg userConfig, runsDir, busybox string) supervisor.Options {
	return supervisor.Options{
		RunsDir: runsDir, RunID: record.NewRunID(time.Now()), Version: cevalVersion(), Busybox: busybox, IDs: ucfg.idRange(),
		// A task asking for host networking gets it only when the user's config (or ceval run's flag) allows it.
		Allow:           supervisor.Allow{HostNetwork: ucfg.AllowHostNetwork},
		VerifierNetwork: ucfg.VerifierNetwork,
	}
}

// options is runOptions with ceval run's flags and the config's model settings: the host
// variables a task may pass (--allow-env and allow_env), --allow-host-network, --grace,
// --agent, the prices, gateway_allow, the judge model, and the backend chosen (kube: nil for
// the local one, Options.Backend left nil). Tasks and experiments run with the same; an experiment sets its run ID.
func (f runFlags) options(ucfg userConfig, kube *kubernetes.Options) supervisor.Options {
	o := runOptions(ucfg, f.runsDir, f.busybox)
	o.Allow = supervisor.Allow{Env: append(f.allowEnv, ucfg.AllowEnv...), HostNetwork: f.allowHostNet || ucfg.AllowHostNetwork}
	o.Grace, o.AgentOverride = f.grace, f.agent
	o.Prices, o.GatewayAllow, o.Judge = ucfg.prices, ucfg.gatewayAllow, ucfg.judge
	if kube != nil {
		o.Backend = kubernetes.New(nil, *kube) // withPins gives it the pinner
	}
	return o
}

// withPins gives o the pinner the tasks' images are pinned with; a Kubernetes backend
// (kube) resolves their tags through it too.
func withPins(o supervisor.Options, pins *images.Pinner, kube *kubernetes.Options) supervisor.Options {
	o.Pins = pins
	if kube != nil {
		o.Backend = kubernetes.New(pins, *kube)
	}
	return o
}

// runArgs reads ceval run's arguments before anything is configured: an experiment file
// (the tasks named after it go into x.tasks), or the task files, loaded, each with an agent
// (--agent applied). --resume RUN_DIR gives the experiment file of the run it finishes.
func runArgs(cmd *cobra.Command, args []string, agentSpec string, x *experimentFlags) (experimentFile string, tasks []*task.Task, err error) {
	if err := checkAgentSpec(agentSpec); err != nil {
		return "", nil, exitWith(exitInvalid, err)
	}
	x.agent = agentSpec
	if x.resume != "" {
		if args, err = x.resumeArgs(cmd, args); err != nil {
			return "", nil, err
		}
	}
	if len(args) > 1 && task.IsExperiment(args[0]) {
		x.tasks = args[1:] // the tasks named on the command line replace the file's list
		args = args[:1]
	}
	if len(args) == 1 && task.IsExperiment(args[0]) || x.resume != "" {
		if len(args) != 1 || !task.IsExperiment(args[0]) {
			return "", nil, exitWith(exitInvalid, errors.New("--resume takes the experiment file, with the task files it ran (or none: plan.json names them)"))
		}
		return args[0], nil, nil
	}
	for _, a := range args {
		if task.IsExperiment(a) {
			return "", nil, exitWith(exitInvalid, fmt.Errorf("%s is an experiment file: run it alone (ceval run %s)", a, a))
		}
	}
	if x.changed(cmd) {
		return "", nil, exitWith(exitInvalid, errors.New("-j, --repeats, --tags, -D, --resume, --audit and --baseline (with its gate flags) are for experiment files"))
	}
	var problems []error
	for _, a := range args {
		ts, err := task.LoadAll(a, task.LoadOptions{Root: x.root})
		if err != nil {
			problems = append(problems, err)
			continue
		}
		for _, t := range ts {
			if err := applyAgent(t, agentSpec); err != nil {
				problems = append(problems, err)
				continue
			}
			if t.Agent == nil {
				problems = append(problems, fmt.Errorf("%s: task %s names no agent; add an agent section (type: command, claude-code or codex) to run it, or choose one with --agent (claude-code, codex, oracle, none or a command line)", a, t.ID))
				continue
			}
			tasks = append(tasks, t)
		}
	}
	if len(problems) > 0 {
		return "", nil, exitWith(exitInvalid, errors.Join(problems...))
	}
	return "", tasks, nil
}

// runTasks runs task files one after another with base: each is checked against it before
// anything starts, then the session is opened and each runs; the results are printed as a
// table or JSON.
func runTasks(cmd *cobra.Command, g *globalOptions, tasks []*task.Task, base supervisor.Options, ucfg userConfig, pf *pullFlags, asJSON bool) error {
	var problems []error
	for _, t := range tasks {
		if err := supervisor.Check(t, base); err != nil {
			if !strings.Contains(err.Error(), t.ID) {
				err = fmt.Errorf("%s: %w", t.ID, err) // as a refused run says it
			}
			problems = append(problems, err)
		}
	}
	if len(problems) > 0 {
		return exitWith(exitInvalid, errors.Join(problems...))
	}
	pins, err := pf.pinner(ucfg, errOutOf(cmd))
	if err != nil {
		return err
	}
	endSession := phasetime.Span("cli: containerd session")
	sess, err := g.openSession(cmd)
	endSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	c, cctx, ctx, pc := sess.client, sess.ctx, sess.ctx, sess.preflight
	tier := sessionTier(sess, g, base.Busybox, base.IDs, base.Allow.HostNetwork, base.VerifierNetwork)
	tier.pins = pins
	endExecutor := phasetime.Span("cli: executor")
	ex, closeEx, err := executorFor(tier, tasks...)
	endExecutor()
	if err != nil {
		return exitWith(exitInfraErr, err)
	}
	defer closeEx()
	errOut := cmd.ErrOrStderr()
	var results []*record.Result
	worst := exitOK
	for _, t := range tasks {
		opts := withPins(base, pins, g.kube)
		opts.Client, opts.Preflight, opts.Executor = c, pc, ex
		opts.Progress = progressPrinter(errOut, t.ID)
		endRun := phasetime.Span("run")
		res, err := supervisor.Run(cctx, t, opts)
		endRun()
		code := exitCodeFor(res, err)
		if err != nil {
			fmt.Fprintf(errOut, "ceval: %s: %v\n", t.ID, err)
		}
		if res != nil {
			results = append(results, res)
		}
		worst = worseExit(worst, code)
		if code == exitInvalid || ctx.Err() != nil {
			break
		}
	}
	if asJSON {
		if err := printJSONResults(cmd.OutOrStdout(), results); err != nil {
			return exitWith(exitInfraErr, err)
		}
	} else {
		printRunTable(cmd.OutOrStdout(), results)
	}
	if worst != exitOK {
		return exitCode(worst)
	}
	return nil
}
