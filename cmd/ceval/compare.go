package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"ceval.dev/ceval/experiment"
	"ceval.dev/ceval/report"
	"ceval.dev/ceval/task"
)

// gateFlags are the flags of a comparison with a baseline, shared by compare and run.
type gateFlags struct {
	baseline        string // run only: the baseline to compare the experiment with
	failOn          string
	failUnder       float64
	allowPlanChange bool
	confidence      float64
}

func (g *gateFlags) add(cmd *cobra.Command, forRun bool) {
	f := cmd.Flags()
	if forRun {
		f.StringVar(&g.baseline, "baseline", "", "compare the experiment with a previous run (its directory or summary.json); the exit code is then the comparison's (see ceval compare --help)")
	}
	f.StringVar(&g.failOn, "fail-on", "regression", "exit 1 when: regression (one is supported by the evidence) or none")
	under := "exit 1 when a variant's pass rate is under RATE (0 to 1)"
	if forRun {
		under += "; with or without --baseline"
	}
	f.Float64Var(&g.failUnder, "fail-under", 0, under)
	f.BoolVar(&g.allowPlanChange, "allow-plan-change", false, "compare what both runs share instead of refusing a baseline of another plan")
	f.Float64Var(&g.confidence, "confidence", report.DefaultConfidence, "family-wise confidence of the verdicts, between 0 and 1")
}

// check refuses flag values before anything is run or read.
func (g *gateFlags) check() error {
	switch {
	case g.failOn != "regression" && g.failOn != "none":
		return exitWith(exitInvalid, fmt.Errorf("--fail-on %q: want regression or none", g.failOn))
	case !(g.failUnder >= 0 && g.failUnder <= 1):
		return exitWith(exitInvalid, fmt.Errorf("--fail-under %v: want a pass rate from 0 to 1, e.g. 0.8", g.failUnder))
	case !(g.confidence > 0 && g.confidence < 1):
		return exitWith(exitInvalid, fmt.Errorf("--confidence %v: want a number between 0 and 1, e.g. 0.95", g.confidence))
	}
	return nil
}

// readBaseline reads a baseline or current summary; any problem is the user's input.
func readBaseline(what, path string) (*report.Summary, error) {
	s, err := report.ReadSummary(path)
	if err != nil {
		return nil, exitWith(exitInvalid, fmt.Errorf("%s: %w", what, err))
	}
	return s, nil
}

// compare compares cur with base and returns the gate's exit code: 1 when --fail-on
// regression and a regression is supported, or a variant is under --fail-under; else 0.
func (g *gateFlags) compare(w io.Writer, base, cur *report.Summary, format string) (int, error) {
	c, err := report.Compare(base, cur, report.CompareOptions{Confidence: g.confidence, AllowPlanChange: g.allowPlanChange, FailUnder: g.failUnder})
	if err != nil {
		return exitInvalid, exitWith(exitInvalid, err)
	}
	switch format {
	case "markdown":
		w.Write(report.MarkdownComparison(c))
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return exitInfraErr, exitWith(exitInfraErr, err)
		}
	default:
		printComparison(w, c)
	}
	code := exitOK
	if g.failOn == "regression" && len(c.Regressions()) > 0 || len(c.BelowRate) > 0 {
		code = exitFailure
	}
	return code, nil
}

func printComparison(w io.Writer, c *report.Comparison) {
	fmt.Fprintf(w, "%s (current) against %s (baseline): %d regressed, %d improved; %.0f%% family-wise confidence, %d intervals at %.2f%% each\n",
		clean(c.CurrentID), clean(c.BaselineID), len(c.Regressions()), len(c.Improvements()), 100*c.Confidence, c.Tests, 100*c.PerTest)
	for _, side := range c.Incomplete {
		fmt.Fprintf(w, "the %s run is incomplete: runs without a result are left out\n", side)
	}
	for _, side := range []string{"baseline", "current"} {
		if n := c.NotGraded[side]; n > 0 {
			fmt.Fprintf(w, "the %s has %d ERROR or NOT_GRADED runs (ceval's side, not the agent's), counted as not passed\n", side, n)
		}
	}
	for _, p := range c.PlanChanges {
		fmt.Fprintf(w, "plan change (allowed, not compared unless both hold it): %s/%s: %s\n", clean(p.VariantID), clean(p.TaskID), p.Change)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERDICT\tVARIANT\tTASK\tPASS RATE\tCHANGE\tINTERVAL\tMEAN SCORE\tCHANGE\tINTERVAL")
	row := func(d report.Delta) {
		task := "(all)"
		if d.TaskID != "" {
			task = clean(d.TaskID)
			if d.DigestChanged {
				task += " (changed)"
			}
		}
		interval := "not tested"
		if d.ScoreTested {
			interval = fmt.Sprintf("[%+.2f, %+.2f]", d.MeanScoreCI[0], d.MeanScoreCI[1])
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f -> %.2f\t%+.2f\t%s\t%.2f -> %.2f\t%+.2f\t%s\n", d.Verdict, clean(d.VariantID), task,
			d.Baseline.PassRate, d.Current.PassRate, d.PassRateDiff, report.DiffCIText(d.PassRateCI),
			d.Baseline.MeanScore, d.Current.MeanScore, d.MeanScoreDiff, interval)
	}
	for _, v := range c.Variants {
		row(v)
		for _, t := range v.Tasks {
			row(t)
		}
	}
	tw.Flush()
	for _, d := range c.Regressions() {
		what := clean(d.VariantID)
		if d.TaskID != "" {
			what += "/" + clean(d.TaskID)
		}
		fmt.Fprintf(w, "regressed: %s: pass rate %.2f -> %.2f, mean score %.2f -> %.2f\n", what, d.Baseline.PassRate, d.Current.PassRate, d.Baseline.MeanScore, d.Current.MeanScore)
	}
	for _, v := range c.BelowRate {
		fmt.Fprintf(w, "under the gate: %s passes %.2f, under --fail-under %.2f\n", clean(v.VariantID), v.PassRate, c.FailUnder)
	}
}

func newCompareCmd() *cobra.Command {
	var (
		g      gateFlags
		format string
	)
	cmd := &cobra.Command{
		Use:   "compare BASELINE CURRENT",
		Short: "Compare an experiment's run with a baseline run, per variant and per task, and gate on regressions",
		Long: "compare reads two experiment runs (each a run directory or its summary.json) and, per variant\n" +
			"and per task under each variant, gives the change in pass rate (Newcombe's hybrid score interval\n" +
			"for a difference of proportions; a variant's over its tasks paired by task, a task's repeats\n" +
			"counted as one task's evidence) and in mean score (Welch's interval), each flagged improved,\n" +
			"regressed or no evidence. The confidence is family-wise: the intervals are Bonferroni-adjusted\n" +
			"over all of them, so at 95% at least 95 comparisons in 100 have no wrong verdict at all.\n" +
			"A baseline of another plan (tasks added or dropped, a task digest changed) is refused with the\n" +
			"differences listed unless --allow-plan-change, which compares the variant/task pairs both hold.\n\n" +
			"Exit 0 when no regression is supported by the evidence (or --fail-on none) and every variant\n" +
			"meets --fail-under; 1 when a regression is supported or a variant is under --fail-under;\n" +
			"2 on bad input (flags, an unreadable summary, a refused plan change).",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.check(); err != nil {
				return err
			}
			if err := checkFormat(format, "text", "markdown", "json"); err != nil {
				return err
			}
			base, err := readBaseline("baseline", args[0])
			if err != nil {
				return err
			}
			cur, err := readBaseline("current", args[1])
			if err != nil {
				return err
			}
			code, err := g.compare(cmd.OutOrStdout(), base, cur, format)
			if err != nil {
				return err
			}
			if code != exitOK {
				return exitCode(code)
			}
			return nil
		},
	}
	g.add(cmd, false)
	cmd.Flags().StringVar(&format, "format", "text", "text, markdown (for a pull-request comment or a CI job summary) or json")
	return cmd
}

func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return exitWith(exitInvalid, fmt.Errorf("--format %q: want one of %s", format, strings.Join(allowed, ", ")))
}

// baselineFor reads --baseline (nil without it) and refuses, before anything runs, a
// baseline of another plan than e's.
func (g *gateFlags) baselineFor(e *task.Experiment) (*report.Summary, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	if g.baseline == "" {
		return nil, nil
	}
	base, err := readBaseline("--baseline", g.baseline)
	if err != nil {
		return nil, err
	}
	plan, err := experiment.NewPlan(e)
	if err != nil {
		return nil, exitWith(exitInfraErr, err)
	}
	if _, err := report.Compare(base, report.PlanSummary(plan), report.CompareOptions{Confidence: g.confidence, AllowPlanChange: g.allowPlanChange}); err != nil {
		return nil, exitWith(exitInvalid, fmt.Errorf("--baseline %s: %w", g.baseline, err))
	}
	return base, nil
}

// infraExit is 3 when a run is missing or ended ERROR/NOT_GRADED (ceval's side), else 0:
// with a baseline, the agent's failures are the comparison's to judge.
func infraExit(e *report.Experiment) int {
	if experimentExit(e) == exitInfraErr {
		return exitInfraErr
	}
	return exitOK
}

// gateWithoutBaseline is run's --fail-under alone: 1 when a variant is under it.
func (g *gateFlags) gateWithoutBaseline(w io.Writer, s *report.Summary) int {
	under := report.BelowRate(s, g.failUnder)
	for _, v := range under {
		fmt.Fprintf(w, "under the gate: %s passes %.2f, under --fail-under %.2f\n", clean(v.VariantID), v.PassRate, g.failUnder)
	}
	if len(under) > 0 {
		return exitFailure
	}
	return exitOK
}
