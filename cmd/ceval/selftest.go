package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/images"
	"ceval.dev/ceval/selftest"
	"ceval.dev/ceval/wasm"
)

func newSelftestCmd(g *globalOptions) *cobra.Command {
	var (
		image   string
		asJSON  bool
		only    []string
		runsDir string
		busybox string
		b       backendFlags
	)
	cmd := &cobra.Command{
		Use:   "selftest [--image IMG] [--json] [--only NAME]",
		Short: "Run the built-in attack suite against this host: every attack must score 0",
		Long: "selftest runs ceval's built-in attacks (task files whose agents are attack scripts,\n" +
			"paired with criteria that would reward the attack if it worked) through the same path as\n" +
			"ceval run, each with a fresh random canary in its grading material, and prints one row per\n" +
			"attack: blocked (denied, nothing rewarded), detected (ceval flagged it: a limit, a snapshot\n" +
			"note, a timeout), BREACH (rewarded, or the canary reached ceval's output), error (the\n" +
			"attempt never ran, so it proved nothing) or skipped (it cannot try anything here, saying\n" +
			"why: the host lacks git, a rootless containerd or the Kubernetes backend lacks what it\n" +
			"attacks, or its judge needs the agent image). The load-* attacks are hostile task and\n" +
			"experiment files instead: a child `ceval validate` must refuse each within 5 s and 100 MiB\n" +
			"peak RSS without quoting the canary.\n\n" +
			"The agent_judge attacks whose judge agent must run need the agent image,\n" +
			images.AgentName + " (the real Claude Code and Codex CLIs): without it in containerd they\n" +
			"are skipped, so build it first with `ceval images build-agent`. A judge attack whose judge\n" +
			"never starts (its judged copy is refused first) runs without it.\n\n" +
			"Runs go to a private directory under a temp dir (removed when everything passes) unless\n" +
			"--runs-dir is given. Exit 0 when every attack scored 0 and none breached, 1 on any\n" +
			"BREACH, 3 when an attack could not run, 2 on invalid input.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var names []string
			for _, o := range only {
				for _, n := range strings.Split(o, ",") {
					if n = strings.TrimSpace(n); n != "" {
						names = append(names, n)
					}
				}
			}
			if _, err := selftest.Select(names); err != nil {
				var ue *selftest.UnknownAttackError
				if errors.As(err, &ue) {
					return exitWith(exitInvalid, err)
				}
				return exitWith(exitInfraErr, err)
			}
			ucfg, err := g.config(cmd)
			if err != nil {
				return exitWith(exitInvalid, err)
			}
			if err := b.choose(cmd, g, ucfg); err != nil {
				return err
			}
			defer kubeSweep(cmd, g.kube)
			sess, err := g.openSession(cmd)
			if err != nil {
				return err
			}
			defer sess.Close()
			c, cctx, pc := sess.client, sess.ctx, sess.preflight
			errOut := cmd.ErrOrStderr()
			wopts, err := wasmOptions(wasm.Options{})
			if err != nil {
				return exitWith(exitInfraErr, fmt.Errorf("WASM sandbox for executing criteria: %w", err))
			}
			rep, err := selftest.Run(cctx, selftest.Options{
				Client: c, Image: image, Only: names, RunsDir: runsDir,
				Version: cevalVersion(), Busybox: busybox, Preflight: pc, IDs: ucfg.idRange(), WASM: wopts, Kube: g.kube,
				Progress: func(r selftest.Row) {
					fmt.Fprintf(errOut, "[%5.1fs] %-32s %s\n", r.Seconds, r.Name, r.Outcome)
				},
			})
			if err != nil {
				return exitWith(exitInfraErr, err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return exitWith(exitInfraErr, err)
				}
			} else {
				printSelftest(cmd.OutOrStdout(), rep)
			}
			switch {
			case rep.Count(selftest.Breach) > 0:
				return exitWith(exitFailure, fmt.Errorf("%d attack(s) breached", rep.Count(selftest.Breach)))
			case !rep.Passed():
				return exitWith(exitInfraErr, fmt.Errorf("%d attack(s) could not run, so they proved nothing", len(rep.Attacks)-rep.Count(selftest.Blocked)-rep.Count(selftest.Detected)-rep.Count(selftest.Skipped)))
			case cctx.Err() != nil:
				return exitWith(exitInfraErr, errors.New("interrupted"))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&image, "image", "", "run every attack in this image instead of the default one")
	f.BoolVar(&asJSON, "json", false, `print {"attacks": [{"name", "tried", "outcome", "score", ...}], ...}`)
	f.StringArrayVar(&only, "only", nil, "run only the attack NAME (repeatable, or comma-separated)")
	f.StringVar(&runsDir, "runs-dir", "", "keep the attacks' run directories here (default: a private temp dir)")
	f.StringVar(&busybox, "busybox", images.DefaultBusybox, "static busybox used to build the default image on first use")
	b.add(cmd)
	return cmd
}

func printSelftest(w io.Writer, rep *selftest.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTACK\tOUTCOME\tSCORE\tTRIED")
	for _, r := range rep.Attacks {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\n", r.Name, r.Outcome, r.Score, r.Tried)
	}
	tw.Flush()
	for _, r := range rep.Attacks {
		if r.Outcome != selftest.Blocked && r.Detail != "" {
			fmt.Fprintf(w, "%s: %s: %s\n", r.Name, r.Outcome, r.Detail)
		}
	}
	for _, n := range rep.NotAttempted {
		fmt.Fprintf(w, "not attempted: %s: %s\n", n.Name, n.Why)
	}
	fmt.Fprintf(w, "%d attacks: %d blocked, %d detected, %d BREACH, %d error, %d skipped\n", len(rep.Attacks),
		rep.Count(selftest.Blocked), rep.Count(selftest.Detected), rep.Count(selftest.Breach), rep.Count(selftest.Errored), rep.Count(selftest.Skipped))
	if rep.RunsDir != "" {
		fmt.Fprintf(w, "run directories: %s\n", rep.RunsDir)
	}
}
