package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/grader"
	"ceval.dev/ceval/images"
	"ceval.dev/ceval/internal/phasetime"
	"ceval.dev/ceval/policy"
	"ceval.dev/ceval/record"
	"ceval.dev/ceval/sandbox"
)

func newRunCmd(g *globalOptions) *cobra.Command {
	var (
		rf     runFlags
		asJSON bool
		x      experimentFlags
		b      backendFlags
		pf     pullFlags
	)
	cmd := &cobra.Command{
		Use:   "run TASK... | run EXPERIMENT [TASK...] | run --resume RUN_DIR",
		Short: "Run an agent on each task in a hardened container and grade the result",
		Long: "run launches each task's agent in a container created directly through containerd\n" +
			"(UID/GID 2000, no capabilities, no_new_privs, seccomp, pids/memory/cpu limits, read-only\n" +
			"rootfs, no network), kills and reaps everything when it is done, snapshots the workspace\n" +
			"without following links and grades the snapshot on the host. Each run writes\n" +
			"RUNS/<run_id>/default/<task_id>/1/ with result.json, events.jsonl, the agent's logs and\n" +
			"the workspace snapshot.\n\n" +
			"--agent replaces the task's agent (an imported Harbor task names none): claude-code,\n" +
			"codex, oracle (the task's solution, as ceval audit runs it: Harbor's -a oracle), none\n" +
			"(no agent: the workspace is graded as prepared) or a command line; for an experiment it\n" +
			"replaces every variant's agent, and plan.json keeps it for --resume.\n\n" +
			"Exit 0 when every task succeeds, 1 when any failed, timed out or exceeded its run_limits,\n2 on invalid input, " +
			"3 on an infrastructure error (containerd, images) or an ERROR/NOT_GRADED result.\n\n" +
			"Given an experiment file (experiment_id, tasks, defaults, variants, repeats), run\n" +
			"runs every task under every variant repeats times, -j at once, under\n" +
			"RUNS/<run_id>/<variant>/<task_id>/<repeat>/, and writes plan.json, summary.json and\n" +
			"junit.xml in RUNS/<run_id>/. Ctrl-C stops it cleanly; --resume RUN_DIR finishes it.\n" +
			"Task files named after the experiment file replace its tasks list (which may then be\n" +
			"left out); --exclude-tags leaves out tasks with any of the tags.\n" +
			"With --baseline PATH (a previous run) or --fail-under RATE the exit code is the gate's\n" +
			"instead: 1 only for a regression the evidence supports or a pass rate under RATE\n" +
			"(see ceval compare --help), 3 still for ceval's own errors.",
		Annotations: map[string]string{keepsExitOnInterrupt: "3"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && x.resume == "" {
				return exitWith(exitInvalid, errors.New("give task files, an experiment file, or --resume RUN_DIR"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			experimentFile, tasks, err := runArgs(cmd, args, rf.agent, &x)
			if err != nil {
				return err
			}
			endConfig := phasetime.Span("cli: config")
			ucfg, err := g.config(cmd)
			endConfig()
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			if err := b.choose(cmd, g, ucfg); err != nil {
				return err
			}
			defer kubeSweep(cmd, g.kube)
			base := rf.options(ucfg, g.kube)
			if experimentFile != "" {
				pins, err := pf.pinner(ucfg, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				return runExperiment(cmd, g, experimentFile, &x, withPins(base, pins, g.kube))
			}
			return runTasks(cmd, g, tasks, base, ucfg, &pf, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&x.root, "root", "", rootHelp)
	f.StringVar(&rf.runsDir, "runs-dir", "runs", "directory that receives RUNS/<run_id>/... results")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON (one object for one task, else a list)")
	f.StringArrayVar(&rf.allowEnv, "allow-env", nil, "host variable NAME a task may pass to its agent (repeatable; also allow_env in the config file)")
	f.BoolVar(&rf.allowHostNet, "allow-host-network", false, "let tasks that ask for sandbox.network: host have it")
	f.DurationVar(&rf.grace, "grace", policy.DefaultGrace, "time between SIGTERM and SIGKILL when stopping an agent")
	f.StringVar(&rf.busybox, "busybox", images.DefaultBusybox, "static busybox used to build the default image on first use")
	addAgentFlag(cmd, &rf.agent)
	x.add(cmd)
	b.add(cmd)
	pf.add(cmd)
	return cmd
}

func errOutOf(cmd *cobra.Command) io.Writer { return cmd.ErrOrStderr() }

// exitCodeFor maps one run's outcome to the shared exit codes.
func exitCodeFor(res *record.Result, err error) int {
	var ie *sandbox.InputError
	switch {
	case errors.As(err, &ie):
		return exitInvalid
	case err != nil:
		return exitInfraErr
	}
	switch {
	case res.Status == grader.TaskSuccess:
		return exitOK
	case record.AgentFailed(res.Status):
		return exitFailure
	}
	return exitInfraErr
}

// worseExit orders exit codes by severity: invalid input > infrastructure > failure > ok.
func worseExit(a, b int) int {
	rank := map[int]int{exitOK: 0, exitFailure: 1, exitInfraErr: 2, exitInvalid: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func progressPrinter(w io.Writer, taskID string) func(string, map[string]any) {
	start := time.Now()
	return func(event string, f map[string]any) {
		switch event {
		case "run_started", "package_image", "image_ready", "service_ready", "service_not_ready", "service_exited", "agent_started", "agent_exited", "snapshot_taken", "graded", "iteration_started", "task_step_graded", "task_step_started":
			extra := ""
			switch event {
			case "run_started":
				extra = fmt.Sprint(f["run_dir"])
			case "package_image":
				extra = fmt.Sprintf("%v for packages %v (built on first use, about a minute or two; cached after)", f["image"], f["packages"])
			case "agent_exited":
				extra = fmt.Sprintf("exit %v", f["exit_code"])
				if f["timed_out"] == true {
					extra += " (timed out)"
				}
			case "graded":
				extra = fmt.Sprintf("%v %.2f", f["status"], f["score"])
			case "iteration_started":
				extra = fmt.Sprintf("%v (%v prompt)", f["n"], f["prompt"])
				if st, ok := f["step"]; ok { // a run within a multi-step task's step
					extra = fmt.Sprintf("%v of step %v (%v prompt)", f["n"], st, f["prompt"])
				}
			case "task_step_graded": // a multi-step task's step
				extra = fmt.Sprintf("%v %v: %v %.2f", f["n"], f["name"], f["status"], f["score"])
				if over, _ := f["over"].(string); over != "" {
					extra += " (no step follows: " + over + ")"
				}
			case "task_step_started":
				extra = fmt.Sprintf("%v %v", f["n"], f["name"])
			case "service_ready":
				extra = fmt.Sprintf("%v at %v ports %v (%.2fs)", f["name"], f["address"], f["ports"], f["seconds"])
			case "service_not_ready":
				extra = fmt.Sprintf("%v: %v (log %v)", f["name"], f["why"], f["log"])
			case "service_exited":
				extra = fmt.Sprintf("%v exited with %v while the run went on", f["name"], f["exit_code"])
			}
			fmt.Fprintf(w, "[%6.2fs] %s: %s %s\n", time.Since(start).Seconds(), taskID, event, extra)
		}
	}
}

func printJSONResults(w io.Writer, results []*record.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if len(results) == 1 {
		return enc.Encode(results[0])
	}
	if results == nil {
		results = []*record.Result{}
	}
	return enc.Encode(results)
}

func printRunTable(w io.Writer, results []*record.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATUS\tSCORE\tAGENT EXIT\tTIME\tRUN DIR")
	for _, r := range results {
		exit := "-"
		if r.Agent.ExitCode != nil {
			exit = fmt.Sprint(*r.Agent.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%.1fs\t%s\n", r.TaskID, r.Status, r.Score, exit, r.Timings.Total, r.Dir)
	}
	tw.Flush()
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(w, "%s: error: %s\n", r.TaskID, printable(r.Error))
		}
		for _, l := range r.LimitsHit {
			fmt.Fprintf(w, "%s: limit: %s\n", r.TaskID, printable(l))
		}
	}
}
